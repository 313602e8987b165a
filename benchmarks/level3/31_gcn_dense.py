"""Two graph convolution layers on a dense adjacency batch: self loops added, symmetric degree normalisation D^-1/2 (A + I) D^-1/2 computed in forward, feature transform, ReLU."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, NODES, FEATURES, HIDDEN, CLASSES = 16, 1024, 256, 256, 16
else:
    BATCH, NODES, FEATURES, HIDDEN, CLASSES = 2, 11, 6, 8, 3


class Model(nn.Module):
    def __init__(self, features, hidden, classes):
        super().__init__()
        self.w1 = nn.Linear(features, hidden)
        self.w2 = nn.Linear(hidden, classes)

    @staticmethod
    def normalise(adj):
        a = adj + torch.eye(adj.shape[-1], device=adj.device)
        d = a.sum(-1).pow(-0.5)
        return d.unsqueeze(-1) * a * d.unsqueeze(-2)

    def forward(self, x, adj):
        a = self.normalise(adj)
        h = torch.relu(torch.bmm(a, self.w1(x)))
        return torch.bmm(a, self.w2(h))


def get_inputs():
    adj = (torch.rand(BATCH, NODES, NODES) < 0.1).float()
    return [torch.randn(BATCH, NODES, FEATURES), ((adj + adj.transpose(1, 2)) > 0).float()]


def get_init_inputs():
    return [FEATURES, HIDDEN, CLASSES]
