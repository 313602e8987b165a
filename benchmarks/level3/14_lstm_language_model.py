"""LSTM language model: token ids through an embedding table, a two-layer batch-first LSTM, a vocabulary projection and log-softmax."""

import os
import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 4
    SEQ_LEN = 35
    VOCAB = 1000
    EMBED = 128
    HIDDEN = 256
    LAYERS = 2
else:
    BATCH_SIZE = 2
    SEQ_LEN = 5
    VOCAB = 40
    EMBED = 12
    HIDDEN = 16
    LAYERS = 2


class Model(nn.Module):
    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.encoder = nn.Embedding(vocab, embed)
        self.rnn = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.rnn(self.encoder(tokens))
        return torch.log_softmax(self.decoder(out), dim=-1)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH_SIZE, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB, EMBED, HIDDEN, LAYERS]
