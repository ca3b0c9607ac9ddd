"""GCN (Kipf & Welling 2017) from PyG's GCNConv."""

from __future__ import annotations

import torch_geometric.transforms as T
from omegaconf import DictConfig
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv

from gnnbench.config import choice
from gnnbench.models.base import GNN
from gnnbench.models.csr import CSRAdjacency, spmm

# precompute: T.GCNNorm once + GCNConv(normalize=False), PyG's advice for torch.compile;
# layer: GCNConv normalises on every forward (add_remaining_self_loops: graph breaks).
NORMALIZE = ("precompute", "layer")


class GCN(GNN):
    uses_edge_weight = True

    def make_conv(self, in_channels: int, out_channels: int, cfg: DictConfig,
                  last: bool) -> nn.Module:
        return GCNConv(in_channels, out_channels, normalize=cfg.normalize == "layer",
                       cached=bool(cfg.get("cached", False)))

    @classmethod
    def validate(cls, cfg: DictConfig) -> None:
        super().validate(cfg)
        choice("model.normalize", cfg.normalize, NORMALIZE)
        choice("model.cached", cfg.get("cached", False), (False, True))

    @classmethod
    def csr_aggregation(cls, cfg: DictConfig) -> str | None:
        return "sum" if cfg.normalize == "precompute" else None

    def aggregate_csr(self, i: int, x: Tensor, adjacency: CSRAdjacency) -> Tensor:
        """GCNConv(normalize=False) with precomputed weights: A_norm @ (x W) + b."""
        conv = self.convs[i]
        out = spmm(adjacency, conv.lin(x))
        return out + conv.bias if conv.bias is not None else out

    @classmethod
    def graph_inputs(cls, cfg: DictConfig, edge_index: Tensor,
                     num_nodes: int) -> tuple[Tensor, Tensor | None]:
        """With `normalize=precompute`: self-loops and symmetric weights computed once (what
        T.GCNNorm does), so the layer has no data-dependent shapes left to break on."""
        if cfg.normalize != "precompute":
            return edge_index, None
        normed = T.GCNNorm(add_self_loops=True)(Data(edge_index=edge_index, num_nodes=num_nodes))
        return normed.edge_index, normed.edge_weight
