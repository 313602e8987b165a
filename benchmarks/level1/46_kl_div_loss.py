"""KL divergence KL(p || q) of every row pair of distributions, q given in log space."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "loss"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CLASSES = 8192, 8192
else:
    BATCH, CLASSES = 200, 1001


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, log_q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        # One divergence per row: a batch mean of thousands of rows would barely
        # move when log_q changes, so a kernel that ignored log_q could pass.
        return F.kl_div(log_q, p, reduction="none").sum(dim=-1)


def get_inputs():
    log_q = torch.log_softmax(1.5 * torch.randn(BATCH, CLASSES), dim=-1)
    p = torch.softmax(1.5 * torch.randn(BATCH, CLASSES), dim=-1)
    return [log_q, p]


def get_init_inputs():
    return []
