"""Test-only: a model of a user's own built on gnnbench's base class, declaring an option
gnnbench does not have (`k`), as README's "Adding a model" shows."""

from __future__ import annotations

from torch import nn
from torch_geometric.nn import ChebConv

from gnnbench.config import Count
from gnnbench.models import GNN


class Cheb(GNN):
    class Options(GNN.Options):
        k: Count(1) = 2

    def make_conv(self, in_channels: int, out_channels: int, last: bool) -> nn.Module:
        return ChebConv(in_channels, out_channels, K=self.options.k)
