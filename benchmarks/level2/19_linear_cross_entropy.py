"""Classifier head and cross-entropy loss: linear to class logits, then mean CE."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    TOKENS, HIDDEN, VOCAB = 4096, 1024, 32000  # 524 MB of logits if materialised
else:
    TOKENS, HIDDEN, VOCAB = 100, 64, 1000


class Model(nn.Module):
    def __init__(self, hidden: int, vocab: int):
        super().__init__()
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        # One loss per token: a batch mean would hardly move when a few inputs change.
        return F.cross_entropy(self.head(h), targets, reduction="none")


def get_inputs():
    return [4.0 * torch.randn(TOKENS, HIDDEN), torch.randint(0, VOCAB, (TOKENS,))]


def get_init_inputs():
    return [HIDDEN, VOCAB]
