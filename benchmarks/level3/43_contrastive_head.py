"""SimCLR-style contrastive head: a projection MLP with BatchNorm (training mode), L2-normalised embeddings, the cosine-similarity matrix of both views over a temperature, self-similarity masked out, cross-entropy toward each sample's other view, per sample (a scalar mean would be nearly the same number on any inputs)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, FEATURES, HIDDEN, OUT = 1024, 2048, 2048, 128
else:
    BATCH, FEATURES, HIDDEN, OUT = 5, 12, 16, 8


def _draw_constant_init(model):
    """Parameters and buffers PyTorch starts at a constant (norm scales and shifts, running
    statistics), drawn instead, so that no kernel can hard-code them: zeros from normal(0, 0.1),
    other constants scaled by uniform(0.5, 1.5) (a variance stays positive)."""
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point() and not t.is_meta and bool((t == t.flatten()[0]).all()):  # meta: no values
                if float(t.flatten()[0]) == 0.0:
                    t.normal_(0.0, 0.1)
                else:
                    t.mul_(torch.empty_like(t).uniform_(0.5, 1.5))


class Model(nn.Module):
    def __init__(self, features, hidden, out, temperature=0.1):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(features, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, out))
        self.temperature = temperature
        _draw_constant_init(self)

    def forward(self, a, b):
        z = F.normalize(self.proj(torch.cat([a, b], dim=0)), dim=1)
        n = a.shape[0]
        sim = z @ z.t() / self.temperature
        sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=a.device), float("-inf"))
        targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(a.device)
        return F.cross_entropy(sim, targets, reduction="none")


def get_inputs():
    return [torch.randn(BATCH, FEATURES), torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, HIDDEN, OUT]
