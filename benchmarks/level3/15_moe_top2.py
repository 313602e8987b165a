"""Mixture of experts with top-2 routing: a softmax router, topk, renormalised weights scattered into a dense gate, SwiGLU experts combined by their gates."""

import os
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 4
    SEQ_LEN = 64
    DIM = 128
    HIDDEN = 256
    EXPERTS = 4
    TOP_K = 2
else:
    BATCH_SIZE = 2
    SEQ_LEN = 5
    DIM = 16
    HIDDEN = 24
    EXPERTS = 4
    TOP_K = 2


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Model(nn.Module):
    def __init__(self, dim, hidden, experts, top_k):
        super().__init__()
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(experts)])
        self.top_k = top_k

    def forward(self, x):
        b, s, d = x.shape
        x = x.view(-1, d)
        logits = self.gate(x)
        weights, chosen = torch.topk(torch.softmax(logits, dim=-1), self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        dense = torch.zeros_like(logits).scatter(1, chosen, weights)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            out = out + dense[:, e:e + 1] * expert(x)
        return out.view(b, s, d)


def get_inputs():
    return [torch.randn(BATCH_SIZE, SEQ_LEN, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN, EXPERTS, TOP_K]
