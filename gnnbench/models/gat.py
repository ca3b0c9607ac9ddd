"""GAT (Veličković et al. 2018) from PyG's GATConv: multi-head attention in hidden layers
(concatenated), one averaged head in the output layer, ELU, dropout on the attention too."""

from __future__ import annotations

from omegaconf import DictConfig
from torch import Tensor, nn
from torch_geometric.nn import GATConv
from torch_geometric.utils import add_self_loops, remove_self_loops

from gnnbench.config import integer, number, require
from gnnbench.models.base import GNN


class GAT(GNN):
    def make_conv(self, in_channels: int, out_channels: int, cfg: DictConfig,
                  last: bool) -> nn.Module:
        # Self-loops are added once to the graph (graph_inputs), not by the layer on every
        # forward: that op has a data-dependent shape, which Inductor cannot compile with
        # dynamic shapes (PyG's advice, as for GCN's normalisation).
        if last:
            return GATConv(in_channels, out_channels, heads=cfg.get("output_heads", 1),
                           concat=False, dropout=cfg.attention_dropout, add_self_loops=False)
        return GATConv(in_channels, out_channels // cfg.heads, heads=cfg.heads,
                       dropout=cfg.attention_dropout, add_self_loops=False)

    @classmethod
    def graph_inputs(cls, cfg: DictConfig, edge_index: Tensor,
                     num_nodes: int) -> tuple[Tensor, Tensor | None]:
        """What GATConv does itself by default: drop self-loops, then add one per node."""
        edge_index, _ = remove_self_loops(edge_index)
        edge_index, _ = add_self_loops(edge_index, num_nodes=num_nodes)
        return edge_index, None

    @classmethod
    def validate(cls, cfg: DictConfig) -> None:
        super().validate(cfg)
        integer("model.heads", cfg.heads, 1)
        integer("model.output_heads", cfg.get("output_heads", 1), 1)
        require(cfg.hidden % cfg.heads == 0,
                f"model.hidden={cfg.hidden} must be a multiple of model.heads={cfg.heads} "
                "(hidden is the width of a layer: heads x channels per head)")
        number("model.attention_dropout", cfg.attention_dropout, at_least=0, below=1)
