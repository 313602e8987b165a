"""Neural collaborative filtering (NeuMF): user and item embeddings for a generalized matrix factorization branch (their product) and an MLP branch (their concatenation through ReLU layers), joined and scored by a sigmoid."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, USERS, ITEMS, FACTORS = 16384, 100000, 50000, 64
else:
    BATCH, USERS, ITEMS, FACTORS = 6, 20, 30, 8


class Model(nn.Module):
    def __init__(self, users, items, factors):
        super().__init__()
        self.user_gmf, self.item_gmf = nn.Embedding(users, factors), nn.Embedding(items, factors)
        self.user_mlp, self.item_mlp = nn.Embedding(users, 2 * factors), nn.Embedding(items, 2 * factors)
        self.mlp = nn.Sequential(nn.Linear(4 * factors, 2 * factors), nn.ReLU(), nn.Linear(2 * factors, factors), nn.ReLU())
        self.out = nn.Linear(2 * factors, 1)

    def forward(self, user, item):
        gmf = self.user_gmf(user) * self.item_gmf(item)
        mlp = self.mlp(torch.cat([self.user_mlp(user), self.item_mlp(item)], dim=-1))
        return torch.sigmoid(self.out(torch.cat([gmf, mlp], dim=-1))).squeeze(-1)


def get_inputs():
    return [torch.randint(0, USERS, (BATCH,)), torch.randint(0, ITEMS, (BATCH,))]


def get_init_inputs():
    return [USERS, ITEMS, FACTORS]
