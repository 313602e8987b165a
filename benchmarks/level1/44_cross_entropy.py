"""Cross-entropy loss from logits and integer class targets, averaged over the batch."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "loss"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CLASSES = 4096, 32000  # a language-model vocabulary: 524 MB of logits
else:
    BATCH, CLASSES = 777, 1000


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


def get_inputs():
    return [2.0 * torch.randn(BATCH, CLASSES), torch.randint(0, CLASSES, (BATCH,))]


def get_init_inputs():
    return []
