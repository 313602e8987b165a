"""Two-tower recommender: a user tower pools a variable-length history with nn.EmbeddingBag (offsets, per-sample weights, sum), an item tower looks up nn.EmbeddingBag (mean) over item tags; MLPs, L2-normalised, dot-product scores."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, ITEMS, TAGS, DIM, HISTORY, TAGS_PER_ITEM = 4096, 200000, 5000, 64, 50, 4
else:
    BATCH, ITEMS, TAGS, DIM, HISTORY, TAGS_PER_ITEM = 5, 40, 13, 8, 6, 3


def tower(dim):
    return nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))


class Model(nn.Module):
    def __init__(self, items, tags, dim):
        super().__init__()
        self.history = nn.EmbeddingBag(items, dim, mode="sum")
        self.item_ids = nn.Embedding(items, dim)
        self.item_tags = nn.EmbeddingBag(tags, dim, mode="mean")
        self.user_tower = tower(dim)
        self.item_tower = tower(2 * dim)
        self.project = nn.Linear(2 * dim, dim)
        self.temperature = 0.07

    def forward(self, history, offsets, recency, item, tags):
        user = self.user_tower(self.history(history, offsets, per_sample_weights=recency))
        item_vec = torch.cat([self.item_ids(item), self.item_tags(tags)], dim=-1)
        item_vec = self.project(self.item_tower(item_vec))
        user, item_vec = F.normalize(user, dim=-1), F.normalize(item_vec, dim=-1)
        return user @ item_vec.t() / self.temperature


def get_inputs():
    lengths = [b % HISTORY + 1 for b in range(BATCH)]  # bags of 1..HISTORY items: fixed, so every draw has one shape
    offsets = torch.tensor([sum(lengths[:b]) for b in range(BATCH)], dtype=torch.long)
    history = torch.randint(0, ITEMS, (sum(lengths),))
    recency = torch.rand(sum(lengths)) + 0.1
    item = torch.randint(0, ITEMS, (BATCH,))
    tags = torch.randint(0, TAGS, (BATCH, TAGS_PER_ITEM))
    return [history, offsets, recency, item, tags]


def get_init_inputs():
    return [ITEMS, TAGS, DIM]
