"""GAT (Veličković et al. 2018) from PyG's GATConv: multi-head attention in hidden layers
(concatenated), one averaged head in the output layer, ELU, dropout on the attention too."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator
from torch import Tensor, nn
from torch_geometric.nn import GATConv
from torch_geometric.utils import add_self_loops, remove_self_loops

from gnnbench.config import Count, Real, require
from gnnbench.models.base import GNN


class GAT(GNN):
    class Options(GNN.Options):
        activation: Literal["relu", "elu"] = "elu"
        heads: Count(1) = 8
        output_heads: Count(1) = 1
        attention_dropout: Real(at_least=0, below=1) = 0.6

        @model_validator(mode="after")
        def _whole_heads(self) -> GAT.Options:
            require(self.hidden % self.heads == 0,
                    f"model.hidden={self.hidden} must be a multiple of model.heads={self.heads} "
                    "(hidden is the width of a layer: heads x channels per head)")
            return self

    def make_conv(self, in_channels: int, out_channels: int, last: bool) -> nn.Module:
        # Self-loops are added once to the graph (graph_inputs), not by the layer on every
        # forward: that op has a data-dependent shape, which Inductor cannot compile with
        # dynamic shapes (PyG's advice, as for GCN's normalisation).
        o = self.options
        if last:
            return GATConv(in_channels, out_channels, heads=o.output_heads, concat=False,
                           dropout=o.attention_dropout, add_self_loops=False)
        return GATConv(in_channels, out_channels // o.heads, heads=o.heads,
                       dropout=o.attention_dropout, add_self_loops=False)

    @classmethod
    def graph_inputs(cls, options: GNN.Options, edge_index: Tensor,
                     num_nodes: int) -> tuple[Tensor, Tensor | None]:
        """What GATConv does itself by default: drop self-loops, then add one per node."""
        edge_index, _ = remove_self_loops(edge_index)
        edge_index, _ = add_self_loops(edge_index, num_nodes=num_nodes)
        return edge_index, None
