"""GraphSAGE (Hamilton et al. 2017) from PyG's SAGEConv."""

from __future__ import annotations

from typing import Literal

from torch import Tensor, nn
from torch_geometric.nn import SAGEConv
from torch_geometric.utils import sort_edge_index

from gnnbench.models.base import GNN
from gnnbench.models.csr import CSRAdjacency, spmm


class SAGE(GNN):
    class Options(GNN.Options):
        # lstm is the GraphSAGE paper's LSTM aggregator: it needs edges sorted by target, and
        # its data-dependent branching is a real graph break under torch.compile.
        aggr: Literal["mean", "max", "sum", "lstm"] = "mean"

    def make_conv(self, in_channels: int, out_channels: int, last: bool) -> nn.Module:
        return SAGEConv(in_channels, out_channels, aggr=self.options.aggr)

    @classmethod
    def csr_aggregation(cls, options: Options) -> str | None:
        return "mean" if options.aggr == "mean" else None

    def aggregate_csr(self, i: int, x: Tensor, adjacency: CSRAdjacency) -> Tensor:
        """SAGEConv(aggr="mean"): lin_l(mean of neighbours) + lin_r(x)."""
        conv = self.convs[i]
        return conv.lin_l(spmm(adjacency, x)) + conv.lin_r(x)

    @classmethod
    def graph_inputs(cls, options: Options, edge_index: Tensor,
                     num_nodes: int) -> tuple[Tensor, Tensor | None]:
        if options.aggr == "lstm":
            return sort_edge_index(edge_index, sort_by_row=False), None
        return edge_index, None
