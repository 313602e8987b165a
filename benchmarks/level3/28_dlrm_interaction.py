"""DLRM-style recommender: a bottom MLP on dense features, several embedding tables on sparse ids, pairwise dot-product interactions by bmm, the upper triangle taken by index buffers, a top MLP and a sigmoid."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, DENSE, EMBED, TABLES, ROWS = 2048, 13, 64, 8, 100000
else:
    BATCH, DENSE, EMBED, TABLES, ROWS = 4, 13, 8, 3, 50


class Model(nn.Module):
    def __init__(self, dense, embed, tables, rows):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(dense, 64), nn.ReLU(), nn.Linear(64, embed), nn.ReLU())
        self.tables = nn.ModuleList([nn.Embedding(rows, embed) for _ in range(tables)])
        n = tables + 1
        li, lj = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("li", li)
        self.register_buffer("lj", lj)
        self.top = nn.Sequential(nn.Linear(embed + n * (n - 1) // 2, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        features = torch.stack([x] + [table(sparse[:, i]) for i, table in enumerate(self.tables)], dim=1)
        z = torch.bmm(features, features.transpose(1, 2))
        pairs = z[:, self.li, self.lj]
        return torch.sigmoid(self.top(torch.cat([x, pairs], dim=1)))


def get_inputs():
    return [torch.randn(BATCH, DENSE), torch.randint(0, ROWS, (BATCH, TABLES))]


def get_init_inputs():
    return [DENSE, EMBED, TABLES, ROWS]
