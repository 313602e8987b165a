import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, batch_first=True)

    def forward(self, x):
        out, _ = self.rnn(x)
        return out


def get_inputs():
    return [torch.randn(2, 5, 8)]


def get_init_inputs():
    return []
