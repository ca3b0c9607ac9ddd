"""GCN and GraphSAGE built from PyG's own convolutions; nothing benchmark-specific inside."""

from __future__ import annotations

import torch.nn.functional as F
import torch_geometric.transforms as T
from omegaconf import DictConfig
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv, SAGEConv
from torch_geometric.utils import sort_edge_index

MODELS = ("gcn", "sage")
GCN_NORMALIZE = ("precompute", "layer")
# lstm is the GraphSAGE paper's LSTM aggregator: it needs edges sorted by target, and its
# data-dependent branching is a real graph break under torch.compile.
SAGE_AGGR = ("mean", "max", "sum", "lstm")


def validate(cfg: DictConfig) -> None:
    from gnnbench.config import ConfigError
    from gnnbench.config import require as need

    need(isinstance(cfg.num_layers, int) and cfg.num_layers >= 1,
         f"model.num_layers={cfg.num_layers!r} must be an integer >= 1")
    need(isinstance(cfg.hidden, int) and cfg.hidden >= 1,
         f"model.hidden={cfg.hidden!r} must be an integer >= 1")
    for key in ("dropout", "input_dropout"):
        value = cfg.get(key, 0.0)
        need(isinstance(value, (int, float)) and 0 <= value < 1,
             f"model.{key}={value!r} must be in [0, 1)")
    if cfg.name == "gcn" and cfg.normalize not in GCN_NORMALIZE:
        raise ConfigError(f"model.normalize={cfg.normalize!r} is not valid; "
                          f"choose one of: {', '.join(GCN_NORMALIZE)}")
    if cfg.name == "sage" and cfg.aggr not in SAGE_AGGR:
        raise ConfigError(f"model.aggr={cfg.aggr!r} is not valid; "
                          f"choose one of: {', '.join(SAGE_AGGR)}")


class GNN(nn.Module):
    """A stack of message-passing layers: [dropout → conv → (batch norm) → ReLU] …, conv.

    `input_dropout` is Kipf & Welling's dropout on the input features; OGB's examples use 0.
    """

    def __init__(self, convs: list[nn.Module], hidden: int, batch_norm: bool,
                 dropout: float, input_dropout: float, uses_edge_weight: bool) -> None:
        super().__init__()
        self.convs = nn.ModuleList(convs)
        self.norms = nn.ModuleList(
            nn.BatchNorm1d(hidden) if batch_norm else nn.Identity() for _ in convs[:-1]
        )
        self.dropout = dropout
        self.input_dropout = input_dropout
        self.uses_edge_weight = uses_edge_weight

    def layer(self, i: int, x: Tensor, edge_index: Tensor,
              edge_weight: Tensor | None = None) -> Tensor:
        """Layer i without dropout: what layer-wise inference applies to all nodes in turn."""
        conv = self.convs[i]
        x = conv(x, edge_index, edge_weight) if self.uses_edge_weight else conv(x, edge_index)
        return self.norms[i](x).relu() if i < len(self.convs) - 1 else x

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        x = F.dropout(x, p=self.input_dropout, training=self.training)
        for i in range(len(self.convs)):
            x = self.layer(i, x, edge_index, edge_weight)
            if i < len(self.convs) - 1:
                x = F.dropout(x, p=self.dropout, training=self.training)
        return x


def build_model(cfg: DictConfig, in_channels: int, out_channels: int) -> GNN:
    dims = [in_channels] + [cfg.hidden] * (cfg.num_layers - 1) + [out_channels]
    pairs = list(zip(dims[:-1], dims[1:], strict=True))
    if cfg.name == "gcn":
        normalize = cfg.normalize == "layer"
        convs = [GCNConv(i, o, normalize=normalize, cached=bool(cfg.get("cached", False)))
                 for i, o in pairs]
    else:
        convs = [SAGEConv(i, o, aggr=cfg.aggr) for i, o in pairs]
    return GNN(convs, cfg.hidden, bool(cfg.batch_norm), float(cfg.dropout),
               float(cfg.get("input_dropout", 0.0)), uses_edge_weight=cfg.name == "gcn")


def graph_inputs(cfg: DictConfig, edge_index: Tensor,
                 num_nodes: int) -> tuple[Tensor, Tensor | None]:
    """The edges the model consumes: for GCN with `normalize=precompute`, self-loops and
    symmetric weights computed once (what T.GCNNorm does), so the layer has no
    data-dependent shapes left for torch.compile to break on."""
    if cfg.name == "gcn" and cfg.normalize == "precompute":
        normed = T.GCNNorm(add_self_loops=True)(Data(edge_index=edge_index, num_nodes=num_nodes))
        return normed.edge_index, normed.edge_weight
    if cfg.name == "sage" and cfg.aggr == "lstm":
        return sort_edge_index(edge_index, sort_by_row=False), None
    return edge_index, None
