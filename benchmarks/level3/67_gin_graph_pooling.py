"""Graph Isomorphism Network over a batch of graphs given as an edge list: each layer sums neighbour features into their targets with index_add_ ((1 + eps) times the node's own added), a two-layer MLP with BatchNorm; per-graph sum readout with scatter_add_ over the batch vector, concatenated over layers, and a linear classifier."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    NODES, EDGES, GRAPHS, FEATURES, HIDDEN, LAYERS, CLASSES = 20000, 120000, 128, 64, 128, 3, 10
else:
    NODES, EDGES, GRAPHS, FEATURES, HIDDEN, LAYERS, CLASSES = 24, 60, 3, 5, 8, 2, 4


class GINConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.eps = nn.Parameter(torch.tensor([0.1]))
        self.mlp = nn.Sequential(nn.Linear(cin, cout), nn.BatchNorm1d(cout), nn.ReLU(), nn.Linear(cout, cout), nn.ReLU())

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        agg = torch.zeros_like(x).index_add_(0, dst, x[src])
        return self.mlp((1 + self.eps) * x + agg)


class Model(nn.Module):
    def __init__(self, features, hidden, layers, classes, graphs):
        super().__init__()
        self.num_graphs = graphs
        self.convs = nn.ModuleList([GINConv(features if i == 0 else hidden, hidden) for i in range(layers)])
        self.classifier = nn.Linear(hidden * layers, classes)
        with torch.no_grad():  # running statistics and GIN's eps drawn, so no kernel can hard-code them
            for conv in self.convs:
                conv.eps.uniform_(0.0, 0.2)
            for m in self.modules():
                if isinstance(m, nn.BatchNorm1d):
                    m.running_mean.normal_(0.0, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_(0.0, 0.1)

    def forward(self, x, edge_index, batch):
        readouts = []
        for conv in self.convs:
            x = conv(x, edge_index)
            pooled = torch.zeros(self.num_graphs, x.size(1), device=x.device, dtype=x.dtype)
            pooled.scatter_add_(0, batch.unsqueeze(-1).expand(-1, x.size(1)), x)
            readouts.append(pooled)
        return self.classifier(torch.cat(readouts, dim=-1))


def get_inputs():
    batch = torch.arange(NODES) * GRAPHS // NODES  # nodes sorted by graph, as PyG batches them
    src = torch.randint(0, NODES, (EDGES,))
    dst = src + torch.randint(-2, 3, (EDGES,))  # edges within a graph's neighbourhood mostly
    dst = dst.clamp(0, NODES - 1)
    return [torch.randn(NODES, FEATURES), torch.stack([src, dst]), batch]


def get_init_inputs():
    return [FEATURES, HIDDEN, LAYERS, CLASSES, GRAPHS]
