"""GIN (Xu et al. 2019) from PyG's GINConv: sum aggregation, then a 2-layer MLP per layer."""

from __future__ import annotations

from omegaconf import DictConfig
from torch import nn
from torch_geometric.nn import GINConv

from gnnbench.config import choice
from gnnbench.models.base import GNN


class GIN(GNN):
    def make_conv(self, in_channels: int, out_channels: int, cfg: DictConfig,
                  last: bool) -> nn.Module:
        mlp = nn.Sequential(nn.Linear(in_channels, cfg.hidden), nn.ReLU(),
                            nn.Linear(cfg.hidden, out_channels))
        return GINConv(mlp, train_eps=bool(cfg.train_eps))

    @classmethod
    def validate(cls, cfg: DictConfig) -> None:
        super().validate(cfg)
        choice("model.train_eps", cfg.train_eps, (False, True))
