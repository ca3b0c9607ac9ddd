"""Datasets, built from their config group by `hydra.utils.instantiate`: `dataset._target_`
names the loader (or, where it names what is loaded, a PyG dataset class, `dataset.loader`
does), the group's other keys are its keyword options, and gnnbench passes where data lives
and the device. Adding a dataset family is one YAML file per dataset plus one
`load(data_dir, mirror, device, **options)` function, with its options declared beside it
(`Options` in its module, checked before anything loads). Every loader returns x, y,
edge_index, splits, num_classes, accuracy and info."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel

from gnnbench.config import ConfigError, check, group_choices
from gnnbench.data.parts import GraphParts, HeteroParts, NodeParts
from gnnbench.data.task import GraphTask, HeteroTask, Splits, Task, simple_accuracy

__all__ = ["GraphTask", "HeteroTask", "Task", "level", "load_task", "loader", "settings",
           "simple_accuracy", "spec", "validate"]


def spec(cfg: DictConfig) -> dict:
    """The dataset group as instantiate calls it, resolved. Where `_target_` names a PyG
    dataset class (conf/dataset/pyg.yaml), `loader` becomes the target and the class is
    passed to it as `dataset_class`; the group's keys and the record stay as they are."""
    group = OmegaConf.to_container(cfg, resolve=True)
    if group.get("loader"):
        group["dataset_class"] = group.pop("_target_", None)
        group["_target_"] = group.pop("loader")
    return group


def loader(cfg: DictConfig) -> Callable[..., dict]:
    from hydra.utils import get_method

    key = "loader" if cfg.get("loader") else "_target_"
    target = cfg.get(key)
    try:
        return get_method(target)
    except Exception as exc:
        raise ConfigError(f"dataset.{key}={target!r} is not an importable loader; "
                          f"pick a dataset from: {', '.join(group_choices('dataset'))}") from exc


def settings(cfg: DictConfig) -> BaseModel | None:
    """The group's options checked against its loader's declaration (`Options` beside it);
    None for a loader that declares none."""
    declaration = getattr(sys.modules.get(loader(cfg).__module__), "Options", None)
    if declaration is None:
        return None
    options = {k: v for k, v in spec(cfg).items() if not k.startswith("_")}
    return check(declaration, options, "dataset")


def validate(cfg: DictConfig) -> None:
    settings(cfg)


def level(cfg: DictConfig) -> str:
    """What the dataset's loader gives: `node` (one graph, node labels: every loader
    before graph-level ones), `graph` (many graphs, a label each) or `hetero` (one graph of
    several node and edge types). A loader module says which in `LEVEL`."""
    return getattr(sys.modules.get(loader(cfg).__module__), "LEVEL", "node")


def load_task(cfg: DictConfig, data_dir: str, mirror: str | None,
              device: torch.device) -> Task | GraphTask | HeteroTask:
    """Load (or generate) the dataset and move it to `device` (graph-level datasets stay on
    the host, where batches are collated)."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    started = time.perf_counter()
    loader(cfg)  # an unknown loader is one line naming the choices
    try:
        # _recursive_=False: nested `_target_`s (a PyG transform in `args`) are the loader's.
        parts = instantiate(spec(cfg), data_dir=Path(data_dir), mirror=mirror, device=device,
                            _recursive_=False)
    except InstantiationException as exc:
        raise (exc.__cause__ or exc) from None
    if "graphs" in parts:
        return _graph_task(cfg, parts, started)
    if "hetero" in parts:
        return _hetero_task(cfg, parts, device, started)
    node = NodeParts.model_validate(parts)
    task = Task(
        name=cfg.name,
        x=node.x.to(device),
        y=node.y.to(device),
        edge_index=node.edge_index.to(device),
        splits=Splits({k: v.to(device) for k, v in node.splits.items()}),
        num_classes=node.num_classes,
        accuracy=node.accuracy,
    )
    task.info = {
        **node.info,
        "num_nodes": task.num_nodes,
        "num_edges": task.edge_index.size(1),
        "num_features": task.num_features,
        "num_classes": task.num_classes,
        "split_sizes": {k: v.numel() for k, v in task.splits.items()},
        "test_majority_share": majority_share(task.y[task.splits.test]),
        "load_s": time.perf_counter() - started,
    }
    return task


def _graph_task(cfg: DictConfig, parts: dict, started: float) -> GraphTask:
    found = GraphParts.model_validate(parts)
    task = GraphTask(name=cfg.name, graphs=found.graphs, splits=Splits(found.splits),
                     num_features=found.num_features, num_classes=found.num_classes,
                     accuracy=found.accuracy, metric=found.metric)
    labels = torch.cat([g.y.reshape(-1) for g in task.graphs])
    task.info = {
        **found.info,
        "level": "graph",
        "metric": task.metric,
        "num_graphs": len(task.graphs),
        "num_features": task.num_features,
        "num_classes": task.num_classes,
        "split_sizes": {k: v.numel() for k, v in task.splits.items()},
        # The metric's chance level: the commonest class's share, or for ROC-AUC 0.5.
        "test_majority_share": (0.5 if task.metric == "rocauc"
                                else majority_share(labels[task.splits.test])),
        "load_s": time.perf_counter() - started,
    }
    return task


def _hetero_task(cfg: DictConfig, parts: dict, device: torch.device,
                 started: float) -> HeteroTask:
    found = HeteroParts.model_validate(parts)
    data, target = found.hetero.to(device), found.target
    task = HeteroTask(name=cfg.name, data=data, target=target, y=data[target].y,
                      splits=Splits({k: v.to(device) for k, v in found.splits.items()}),
                      num_classes=found.num_classes, accuracy=found.accuracy)
    task.info = {
        **found.info,
        "level": "hetero",
        "target": target,
        "num_nodes": {t: int(data[t].num_nodes) for t in data.node_types},
        "num_edges": {"__".join(t): int(data[t].edge_index.size(1)) for t in data.edge_types},
        "num_features": int(data[target].x.size(1)),
        "num_classes": task.num_classes,
        "split_sizes": {k: v.numel() for k, v in task.splits.items()},
        "test_majority_share": majority_share(task.y[task.splits.test]),
        "load_s": time.perf_counter() - started,
    }
    return task


def majority_share(labels: torch.Tensor) -> float | None:
    """The accuracy of always answering the most common class: the chance level a model's
    accuracy is judged against (a run near it did not learn, whatever its timings say)."""
    labels = labels.reshape(-1)
    labels = labels[labels >= 0]
    if labels.numel() == 0:
        return None
    return torch.bincount(labels.long()).max().item() / labels.numel()
