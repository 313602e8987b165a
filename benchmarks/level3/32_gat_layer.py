"""Graph attention layer (GAT), multi-head: projected features, attention logits from the sum of a source and a target term (LeakyReLU), masked by the adjacency with torch.where, softmax over neighbours, aggregation, ELU."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    NODES, FEATURES, HIDDEN, HEADS = 4096, 256, 64, 8
else:
    NODES, FEATURES, HIDDEN, HEADS = 13, 6, 4, 2


class Model(nn.Module):
    def __init__(self, features, hidden, heads):
        super().__init__()
        self.heads, self.hidden = heads, hidden
        self.w = nn.Linear(features, heads * hidden, bias=False)
        self.a_src = nn.Parameter(torch.randn(heads, hidden) * 0.3)
        self.a_dst = nn.Parameter(torch.randn(heads, hidden) * 0.3)

    def forward(self, x, adj):
        h = self.w(x).view(-1, self.heads, self.hidden)
        src = (h * self.a_src).sum(-1)
        dst = (h * self.a_dst).sum(-1)
        e = F.leaky_relu(src.t().unsqueeze(2) + dst.t().unsqueeze(1), 0.2)
        e = torch.where(adj.unsqueeze(0) > 0, e, torch.full_like(e, -9e15))
        att = torch.softmax(e, dim=-1)
        out = torch.bmm(att, h.transpose(0, 1)).transpose(0, 1)
        return F.elu(out.reshape(-1, self.heads * self.hidden))


def get_inputs():
    adj = ((torch.rand(NODES, NODES) < 0.2).float() + torch.eye(NODES)) > 0
    return [torch.randn(NODES, FEATURES), adj.float()]


def get_init_inputs():
    return [FEATURES, HIDDEN, HEADS]
