"""VQ-VAE: a strided convolutional encoder, the vector quantizer of the original VQ-VAE notebook (squared distances to every codebook entry expanded as |z|^2 + |e|^2 - 2 z.e, argmin, a one-hot encoding written by scatter_, its product with the codebook, the straight-through estimator z + (q - z).detach()) and a transposed-convolution decoder."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SIDE, HIDDEN, EMB_DIM, CODES = 8, 64, 128, 64, 512
else:
    BATCH, SIDE, HIDDEN, EMB_DIM, CODES = 2, 8, 8, 4, 16


class VectorQuantizer(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings
        self._embedding = nn.Embedding(num_embeddings, embedding_dim)
        self._embedding.weight.data.uniform_(-1.0, 1.0)

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = (torch.sum(flat_input ** 2, dim=1, keepdim=True)
                     + torch.sum(self._embedding.weight ** 2, dim=1)
                     - 2 * torch.matmul(flat_input, self._embedding.weight.t()))
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings, device=inputs.device)
        encodings.scatter_(1, encoding_indices, 1)
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)
        quantized = inputs + (quantized - inputs).detach()
        return quantized.permute(0, 3, 1, 2).contiguous()


class Model(nn.Module):
    def __init__(self, hidden, emb_dim, codes):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, hidden // 2, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(hidden // 2, hidden, 3, padding=1), nn.ReLU(),
            nn.Conv2d(hidden, emb_dim, 1))
        self.vq = VectorQuantizer(codes, emb_dim)
        self.decoder = nn.Sequential(
            nn.Conv2d(emb_dim, hidden, 3, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(hidden, 3, 4, stride=2, padding=1))

    def forward(self, x):
        return self.decoder(self.vq(self.encoder(x)))


def get_inputs():
    return [torch.randn(BATCH, 3, SIDE, SIDE)]


def get_init_inputs():
    return [HIDDEN, EMB_DIM, CODES]
