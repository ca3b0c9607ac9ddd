"""Models, built from their config group by `hydra.utils.instantiate`: `model._target_` names
the class, the group's other keys are its keyword options, and gnnbench passes the input and
output widths. Adding a model is one YAML file in conf/model/ plus one subclass of `GNN`
that declares its options (`GNN.Options`).

A `_target_` outside gnnbench (a user's `nn.Module`, PyG's stock models) is a foreign model
(`foreign.py`): instantiated with its own options only (gnnbench's keys, such as `name`,
are not the class's), it has none of gnnbench's layer-wise features (CSR layouts, layer-wise
inference)."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel
from torch import Tensor, nn

from gnnbench.config import ConfigError, group_choices
from gnnbench.config.sources import is_foreign
from gnnbench.models import foreign
from gnnbench.models.base import GNN
from gnnbench.models.foreign import Foreign
from gnnbench.models.readout import GraphClassifier

__all__ = ["GNN", "Foreign", "GraphClassifier", "build_graph_classifier",
           "build_hetero_classifier", "build_model", "csr_aggregation", "foreign_model",
           "graph_inputs", "hetero_capable", "model_class", "options", "settings", "validate"]


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


def settings(cfg: DictConfig) -> BaseModel:
    """The model group checked against its declaration: the options of gnnbench's class
    (`GNN.Options` and its subclasses), or gnnbench's keys around a foreign class."""
    if foreign_model(cfg):
        return foreign.settings(cfg)
    return model_class(cfg).settings(options(cfg))


def options(cfg: DictConfig) -> dict:
    """The keyword options of gnnbench's kind of model: the group's keys but Hydra's
    (`_target_`), and but model=custom's keys for wrapping a foreign class where they keep
    their defaults (a `GNN` subclass named in model=custom is built directly; set to
    anything else, they are an error naming them)."""
    cls = model_class(cfg)
    group = OmegaConf.to_container(cfg, resolve=True)
    wrapper = {k: f.default for k, f in foreign.Options.model_fields.items()
               if k not in cls.Options.model_fields}
    return {k: v for k, v in group.items()
            if not k.startswith("_") and not (k in wrapper and v == wrapper[k])}


def validate(cfg: DictConfig) -> None:
    settings(cfg)


def csr_aggregation(cfg: DictConfig) -> str | None:
    return None if foreign_model(cfg) else model_class(cfg).csr_aggregation(settings(cfg))


def build_model(cfg: DictConfig, in_channels: int, out_channels: int) -> nn.Module:
    """`instantiate(cfg, in_channels=..., out_channels=...)` for gnnbench's models (the
    group as `options` gives it); a bad option is the class's own one-line error, not
    Hydra's wrapped traceback."""
    if foreign_model(cfg):
        return foreign.build(cfg, in_channels, out_channels)
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    spec = {"_target_": cfg._target_, **options(cfg)}
    try:
        return instantiate(spec, in_channels=in_channels, out_channels=out_channels,
                           _convert_="all")
    except InstantiationException as exc:
        if isinstance(exc.__cause__, ConfigError):
            raise exc.__cause__ from None
        raise


def build_graph_classifier(cfg: DictConfig, in_channels: int,
                           out_channels: int) -> GraphClassifier:
    """Graph classification (models/readout.py): gnnbench's model of the group as the node
    encoder (its last layer `hidden` wide), pooled per graph, then an MLP head."""
    if foreign_model(cfg):
        raise ConfigError(f"model {cfg.get('name')} is not one of gnnbench's own: graph "
                          "classification pools gnnbench's layers; choose one of: gcn, "
                          "sage, gat, gin")
    gnn = build_model(cfg, in_channels, settings(cfg).hidden)
    return GraphClassifier(gnn, out_channels)


def hetero_capable(cfg: DictConfig) -> bool:
    """Whether the model group has a heterogeneous form (models/hetero.py)."""
    from gnnbench.models.hetero import RGCN
    from gnnbench.models.sage import SAGE

    return not foreign_model(cfg) and issubclass(model_class(cfg), (SAGE, RGCN))


def build_hetero_classifier(cfg: DictConfig, metadata: tuple, num_nodes: dict[str, int],
                            featured: dict[str, int], target: str,
                            num_classes: int) -> nn.Module:
    """Node classification on a heterogeneous graph (models/hetero.py): to_hetero(GraphSAGE)
    for model=sage, HeteroConv R-GCN for model=rgcn; anything else is one error line."""
    from gnnbench.models.hetero import build_hetero_model

    if foreign_model(cfg):
        raise ConfigError(f"model {cfg.get('name')} is not one of gnnbench's own; a "
                          "heterogeneous dataset needs one of: sage, rgcn")
    return build_hetero_model(model_class(cfg), settings(cfg), metadata, num_nodes, featured,
                              target, num_classes)


def graph_inputs(cfg: DictConfig, edge_index: Tensor,
                 num_nodes: int) -> tuple[Tensor, Tensor | None]:
    if foreign_model(cfg):
        return foreign.graph_inputs(foreign.settings(cfg), edge_index, num_nodes)
    return model_class(cfg).graph_inputs(settings(cfg), edge_index, num_nodes)
