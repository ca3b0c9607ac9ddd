"""GCN (Kipf & Welling 2017) from PyG's GCNConv."""

from __future__ import annotations

from typing import Literal

import torch_geometric.transforms as T
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv

from gnnbench.config import Flag
from gnnbench.models.base import GNN
from gnnbench.models.csr import CSRAdjacency, spmm


class GCN(GNN):
    class Options(GNN.Options):
        # precompute: T.GCNNorm once + GCNConv(normalize=False), PyG's advice for
        # torch.compile; layer: GCNConv normalises on every forward (add_remaining_self_loops:
        # graph breaks).
        normalize: Literal["precompute", "layer"] = "precompute"
        cached: Flag = False  # GCNConv(cached=True): known to fail under compile(dynamic=True)

    uses_edge_weight = True

    def make_conv(self, in_channels: int, out_channels: int, last: bool) -> nn.Module:
        o = self.options
        return GCNConv(in_channels, out_channels, normalize=o.normalize == "layer",
                       cached=o.cached)

    @classmethod
    def csr_aggregation(cls, options: Options) -> str | None:
        return "sum" if options.normalize == "precompute" else None

    def aggregate_csr(self, i: int, x: Tensor, adjacency: CSRAdjacency) -> Tensor:
        """GCNConv(normalize=False) with precomputed weights: A_norm @ (x W) + b."""
        conv = self.convs[i]
        out = spmm(adjacency, conv.lin(x))
        return out + conv.bias if conv.bias is not None else out

    @classmethod
    def graph_inputs(cls, options: Options, edge_index: Tensor,
                     num_nodes: int) -> tuple[Tensor, Tensor | None]:
        """With `normalize=precompute`: self-loops and symmetric weights computed once (what
        T.GCNNorm does), so the layer has no data-dependent shapes left to break on."""
        if options.normalize != "precompute":
            return edge_index, None
        normed = T.GCNNorm(add_self_loops=True)(Data(edge_index=edge_index, num_nodes=num_nodes))
        return normed.edge_index, normed.edge_weight
