"""BERT embeddings: word, position and token-type lookups (integer inputs, positions from a registered arange buffer sliced to the length) summed, then LayerNorm."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, VOCAB, HIDDEN, MAX_POS, TYPES = 32, 256, 30522, 768, 512, 2
else:
    BATCH, SEQ, VOCAB, HIDDEN, MAX_POS, TYPES = 3, 11, 50, 24, 16, 2


class Model(nn.Module):
    def __init__(self, vocab, hidden, max_positions, type_vocab):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_positions).expand((1, -1)), persistent=False)
        with torch.no_grad():  # LayerNorm's 1 and 0 drawn, so no kernel can hard-code them
            self.LayerNorm.weight.uniform_(0.5, 1.5)
            self.LayerNorm.bias.normal_(0.0, 0.1)

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


def get_inputs():
    input_ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    token_type_ids = (torch.arange(SEQ) >= SEQ // 2).long().expand(BATCH, SEQ).contiguous()
    return [input_ids, token_type_ids]


def get_init_inputs():
    return [VOCAB, HIDDEN, MAX_POS, TYPES]
