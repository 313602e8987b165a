"""A linear-chain CRF tagger's decoding (as pytorch-crf's _viterbi_decode, batch first, no padding): emissions from a token embedding and a linear layer, the max-plus Viterbi recursion over start, transition and end scores keeping the argmax history, and the backtrace by gather; returns the best tag sequence (int64)."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, VOCAB, EMBED, TAGS = 64, 48, 10000, 128, 17
else:
    BATCH, SEQ, VOCAB, EMBED, TAGS = 3, 7, 50, 8, 5


class Model(nn.Module):
    def __init__(self, vocab, embed, tags):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.hidden2tag = nn.Linear(embed, tags)
        self.start_transitions = nn.Parameter(torch.empty(tags).uniform_(-0.1, 0.1))
        self.end_transitions = nn.Parameter(torch.empty(tags).uniform_(-0.1, 0.1))
        self.transitions = nn.Parameter(torch.empty(tags, tags).uniform_(-0.1, 0.1))

    def forward(self, tokens):
        emissions = self.hidden2tag(torch.tanh(self.embedding(tokens)))  # (batch, seq, tags)
        seq_length = emissions.size(1)
        score = self.start_transitions + emissions[:, 0]
        history = []
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emission = emissions[:, i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emission
            next_score, indices = next_score.max(dim=1)
            score = next_score
            history.append(indices)
        score = score + self.end_transitions
        best_last_tag = score.argmax(dim=1)
        best_tags = [best_last_tag]
        for hist in reversed(history):
            best_last_tag = hist.gather(1, best_last_tag.unsqueeze(1)).squeeze(1)
            best_tags.append(best_last_tag)
        best_tags.reverse()
        return torch.stack(best_tags, dim=1)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, EMBED, TAGS]
