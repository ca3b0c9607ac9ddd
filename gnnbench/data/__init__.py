"""Datasets, chosen by the loader their config names (`dataset._target_`, or `dataset.loader`
where `_target_` names something else: a PyG dataset class): adding a dataset family is one
YAML file per dataset plus one `load(cfg, data_dir, mirror, device)` function, and
optionally a `validate(cfg)` beside it. Every loader returns x, y, edge_index, splits,
num_classes, accuracy and info."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import torch
from omegaconf import DictConfig

from gnnbench.config import ConfigError, group_choices
from gnnbench.data.task import Task, simple_accuracy

__all__ = ["Task", "load_task", "loader", "simple_accuracy", "validate"]


def loader(cfg: DictConfig) -> Callable[..., dict]:
    from hydra.utils import get_method

    key = "loader" if cfg.get("loader") else "_target_"
    target = cfg.get(key)
    try:
        return get_method(target)
    except Exception as exc:
        raise ConfigError(f"dataset.{key}={target!r} is not an importable loader; "
                          f"pick a dataset from: {', '.join(group_choices('dataset'))}") from exc


def validate(cfg: DictConfig) -> None:
    """The loader exists, and its module's own `validate(cfg)`, if it has one, passes."""
    import sys

    check = getattr(sys.modules.get(loader(cfg).__module__), "validate", None)
    if callable(check):
        check(cfg)


def load_task(cfg: DictConfig, data_dir: str, mirror: str | None,
              device: torch.device) -> Task:
    """Load (or generate) the dataset and move it to `device`."""
    started = time.perf_counter()
    parts = loader(cfg)(cfg, Path(data_dir), mirror, device)
    task = Task(
        name=cfg.name,
        x=parts["x"].to(device),
        y=parts["y"].to(device),
        edge_index=parts["edge_index"].to(device),
        splits={k: v.to(device) for k, v in parts["splits"].items()},
        num_classes=parts["num_classes"],
        accuracy=parts["accuracy"],
    )
    task.info = {
        **parts.get("info", {}),
        "num_nodes": task.num_nodes,
        "num_edges": task.edge_index.size(1),
        "num_features": task.num_features,
        "num_classes": task.num_classes,
        "split_sizes": {k: v.numel() for k, v in task.splits.items()},
        "test_majority_share": majority_share(task.y[task.splits["test"]]),
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
