"""Causal linear attention (elu+1 feature map): key-value outer products accumulated by cumsum over the sequence, written with einsum."""

import os
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 2
    SEQ_LEN = 128
    DIM = 128
    HEADS = 4
else:
    BATCH_SIZE = 2
    SEQ_LEN = 7
    DIM = 16
    HEADS = 4


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.einsum("bhnd,bhne->bhnde", k, v).cumsum(dim=2)
        num = torch.einsum("bhnd,bhnde->bhne", q, kv)
        den = torch.einsum("bhnd,bhnd->bhn", q, k.cumsum(dim=2)).unsqueeze(-1)
        y = (num / (den + 1e-6)).transpose(1, 2).reshape(b, n, d)
        return self.out(y)


def get_inputs():
    return [torch.randn(BATCH_SIZE, SEQ_LEN, DIM)]


def get_init_inputs():
    return [DIM, HEADS]
