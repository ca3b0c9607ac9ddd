"""Models, chosen by the class their config names (`model._target_`): adding a model is one
YAML file in conf/model/ plus one subclass of `GNN`. A `_target_` outside gnnbench (a
user's `nn.Module`, PyG's stock models) is a foreign model (`foreign.py`): built from its
own options, it has none of gnnbench's layer-wise features (CSR layouts, layer-wise
inference)."""

from __future__ import annotations

from omegaconf import DictConfig
from torch import Tensor, nn

from gnnbench.config import ConfigError, group_choices
from gnnbench.config.sources import is_foreign
from gnnbench.models import foreign
from gnnbench.models.base import GNN
from gnnbench.models.foreign import Foreign

__all__ = ["GNN", "Foreign", "build_model", "csr_aggregation", "foreign_model", "graph_inputs",
           "model_class", "validate"]


def model_class(cfg: DictConfig) -> type[GNN]:
    from hydra.utils import get_class

    target = cfg.get("_target_")
    try:
        cls = get_class(target)
    except Exception as exc:
        raise ConfigError(f"model._target_={target!r} is not an importable class; "
                          f"pick a model from: {', '.join(group_choices('model'))}") from exc
    if not (isinstance(cls, type) and issubclass(cls, GNN)):
        raise ConfigError(f"model._target_={target!r} is not a gnnbench.models.GNN; a model "
                          "of your own goes with model=custom")
    return cls


def foreign_model(cfg: DictConfig) -> bool:
    """Whether the model group names a class that is not gnnbench's own."""
    return is_foreign(cfg.get("_target_"))


def validate(cfg: DictConfig) -> None:
    if foreign_model(cfg):
        foreign.validate(cfg)
    else:
        model_class(cfg).validate(cfg)


def csr_aggregation(cfg: DictConfig) -> str | None:
    return None if foreign_model(cfg) else model_class(cfg).csr_aggregation(cfg)


def build_model(cfg: DictConfig, in_channels: int, out_channels: int) -> nn.Module:
    if foreign_model(cfg):
        return foreign.build(cfg, in_channels, out_channels)
    return model_class(cfg)(cfg, in_channels, out_channels)


def graph_inputs(cfg: DictConfig, edge_index: Tensor,
                 num_nodes: int) -> tuple[Tensor, Tensor | None]:
    if foreign_model(cfg):
        return foreign.graph_inputs(cfg, edge_index, num_nodes)
    return model_class(cfg).graph_inputs(cfg, edge_index, num_nodes)
