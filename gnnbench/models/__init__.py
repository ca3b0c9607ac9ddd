"""Models, chosen by the class their config names (`model._target_`): adding a model is one
YAML file in conf/model/ plus one subclass of `GNN`."""

from __future__ import annotations

from omegaconf import DictConfig
from torch import Tensor

from gnnbench.config import ConfigError, group_choices
from gnnbench.models.base import GNN

__all__ = ["GNN", "build_model", "csr_aggregation", "graph_inputs", "model_class", "validate"]


def model_class(cfg: DictConfig) -> type[GNN]:
    from hydra.utils import get_class

    target = cfg.get("_target_")
    try:
        cls = get_class(target)
    except Exception as exc:
        raise ConfigError(f"model._target_={target!r} is not an importable class; "
                          f"pick a model from: {', '.join(group_choices('model'))}") from exc
    if not (isinstance(cls, type) and issubclass(cls, GNN)):
        raise ConfigError(f"model._target_={target!r} is not a gnnbench.models.GNN")
    return cls


def validate(cfg: DictConfig) -> None:
    model_class(cfg).validate(cfg)


def csr_aggregation(cfg: DictConfig) -> str | None:
    return model_class(cfg).csr_aggregation(cfg)


def build_model(cfg: DictConfig, in_channels: int, out_channels: int) -> GNN:
    return model_class(cfg)(cfg, in_channels, out_channels)


def graph_inputs(cfg: DictConfig, edge_index: Tensor,
                 num_nodes: int) -> tuple[Tensor, Tensor | None]:
    return model_class(cfg).graph_inputs(cfg, edge_index, num_nodes)
