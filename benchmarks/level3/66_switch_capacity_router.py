"""Switch Transformer feed-forward layer with GShard-style dispatch: a top-1 softmax router, each token's slot in its expert from a cumulative sum of the one-hot choices over the group, tokens past the expert capacity dropped, dispatch and combine tensors (one_hot of the slot) and the experts run as batched einsums over (expert, group, slot); the residual kept for dropped tokens."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    GROUPS, TOKENS, DIM, FFN, EXPERTS, CAPACITY_FACTOR = 8, 256, 512, 1024, 8, 1.25
else:
    GROUPS, TOKENS, DIM, FFN, EXPERTS, CAPACITY_FACTOR = 2, 12, 16, 24, 4, 1.0


class Model(nn.Module):
    def __init__(self, tokens, dim, ffn, experts, capacity_factor):
        super().__init__()
        self.num_experts = experts
        self.capacity = int(capacity_factor * tokens / experts)
        self.norm = nn.LayerNorm(dim)
        self.router = nn.Linear(dim, experts, bias=False)
        self.wi = nn.Parameter(torch.randn(experts, dim, ffn) * dim ** -0.5)
        self.wo = nn.Parameter(torch.randn(experts, ffn, dim) * ffn ** -0.5)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x):
        h = self.norm(x)  # (groups, tokens, dim)
        probs = torch.softmax(self.router(h), dim=-1)
        gate, index = probs.max(dim=-1)
        expert_mask = F.one_hot(index, self.num_experts)  # (g, t, e)
        position = torch.cumsum(expert_mask, dim=1) * expert_mask - 1  # slot in the expert, -1 elsewhere
        expert_mask = expert_mask * (position < self.capacity)
        slot = (position * expert_mask).sum(dim=-1)  # (g, t)
        combine = (gate[:, :, None, None] * expert_mask[:, :, :, None]
                   * F.one_hot(slot, self.capacity)[:, :, None, :])  # (g, t, e, c)
        dispatch = (combine > 0).to(x.dtype)
        expert_in = torch.einsum("gtec,gtd->egcd", dispatch, h)
        hidden = F.relu(torch.einsum("egcd,edf->egcf", expert_in, self.wi))
        expert_out = torch.einsum("egcf,efd->egcd", hidden, self.wo)
        return x + torch.einsum("gtec,egcd->gtd", combine, expert_out)


def get_inputs():
    return [torch.randn(GROUPS, TOKENS, DIM)]


def get_init_inputs():
    return [TOKENS, DIM, FFN, EXPERTS, CAPACITY_FACTOR]
