"""A model of your own, as gnnbench runs it (README, "Benchmark your own model").

Copy this file into the directory you run gnnbench from, then:

    python -m gnnbench model=custom model._target_=mymodel.Net dataset=cora \
        compile=true train.paired=true

The contract: a torch.nn.Module whose forward(x, edge_index) returns one row of logits per
node; gnnbench passes `in_channels` and `out_channels` to the constructor, and every
`+model.<option>=...` on the command line as a keyword argument.
"""

import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv


class Net(torch.nn.Module):
    """Kipf & Welling's two-layer GCN."""

    def __init__(self, in_channels: int, out_channels: int, hidden: int = 16,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden)
        self.conv2 = GCNConv(hidden, out_channels)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.conv1(x, edge_index).relu()
        x = F.dropout(x, p=self.dropout, training=self.training)
        return self.conv2(x, edge_index)


class BrokenNet(Net):
    """The same model with a graph break: a Python `if` on a tensor's value. torch.compile
    cannot put a branch that depends on data into one graph, so with fullgraph=true (the
    default) the run stops with status graph_break at the `if` line below."""

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.conv1(x, edge_index).relu()
        # A branch on a tensor's value: the graph breaks on the next line.
        if x.abs().max() > 10:
            x = x / x.abs().max()
        x = F.dropout(x, p=self.dropout, training=self.training)
        return self.conv2(x, edge_index)


class FixedNet(Net):
    """BrokenNet without the break: the same rescaling for every input, as one tensor
    expression (torch.where instead of a Python branch)."""

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.conv1(x, edge_index).relu()
        peak = x.abs().max()
        x = torch.where(peak > 10, x / peak, x)
        x = F.dropout(x, p=self.dropout, training=self.training)
        return self.conv2(x, edge_index)
