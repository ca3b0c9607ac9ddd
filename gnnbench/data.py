"""Dataset name → a task bundle: the graph on the device, split indices, class count and
the accuracy function of the dataset's own convention."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from omegaconf import DictConfig
from torch import Tensor

from gnnbench.config import ConfigError
from gnnbench.ogbn import load_ogbn
from gnnbench.synthetic import load_synthetic

PLANETOID = ("cora", "citeseer", "pubmed")
DATASETS = (*PLANETOID, "ogbn-arxiv", "ogbn-products",
            "synthetic", "synthetic-arxiv", "synthetic-products")
FAMILIES = ("planetoid", "ogb", "synthetic")
PLANETOID_RAW = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


@dataclass
class Task:
    """What the training loop needs, already on the run's device. Splits are index
    tensors, not boolean masks: indexing with a mask forces a host sync every step."""

    name: str
    x: Tensor
    y: Tensor
    edge_index: Tensor
    splits: dict[str, Tensor]
    num_classes: int
    accuracy: Callable[[Tensor, Tensor], float]
    info: dict = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return self.x.size(0)

    @property
    def num_features(self) -> int:
        return self.x.size(1)


def simple_accuracy(pred: Tensor, target: Tensor) -> float:
    return (pred == target).float().mean().item()


def _copy_planetoid_raw(name: str, data_dir: Path, mirror: str) -> None:
    """Copy `<mirror>/<Name>/raw/ind.<name>.*` into the cache; the mirror may be read-only."""
    src, dst = Path(mirror) / name / "raw", data_dir / name / "raw"
    files = [f"ind.{name.lower()}.{part}" for part in PLANETOID_RAW]
    missing = [f for f in files if not (src / f).is_file()]
    if missing:
        raise ConfigError(
            f"data_mirror={mirror!r} is incomplete: {src} lacks {', '.join(missing)}"
        )
    dst.mkdir(parents=True, exist_ok=True)
    for f in files:
        if not (dst / f).is_file():
            shutil.copyfile(src / f, dst / f)  # copyfile: never carry read-only bits over


def _load_planetoid(cfg: DictConfig, data_dir: Path, mirror: str | None) -> dict:
    from torch_geometric.datasets import Planetoid
    from torch_geometric.transforms import NormalizeFeatures

    if mirror is not None:
        _copy_planetoid_raw(cfg.root_name, data_dir, mirror)
    try:
        data = Planetoid(str(data_dir), cfg.root_name, split="public",
                         transform=NormalizeFeatures())[0]
    except OSError as exc:  # URLError is an OSError: no network and no mirror
        raise ConfigError(
            f"cannot download {cfg.root_name} ({str(exc).splitlines()[0]}); "
            f"set data_mirror to a directory holding {cfg.root_name}/raw/ind.*"
        ) from exc
    splits = {s: getattr(data, f"{s}_mask").nonzero().view(-1) for s in ("train", "val", "test")}
    return {"x": data.x, "y": data.y, "edge_index": data.edge_index, "splits": splits,
            "num_classes": int(data.y.max()) + 1, "accuracy": simple_accuracy}


def load_task(cfg: DictConfig, data_dir: str, mirror: str | None,
              device: torch.device) -> Task:
    """Load (or generate) the dataset and move it to `device`."""
    started = time.perf_counter()
    if cfg.family == "planetoid":
        parts = _load_planetoid(cfg, Path(data_dir), mirror)
    elif cfg.family == "ogb":
        parts = load_ogbn(cfg.ogb_name, Path(data_dir), mirror, bool(cfg.undirected))
    elif cfg.family == "synthetic":
        parts = {**load_synthetic(cfg, Path(data_dir), device), "accuracy": simple_accuracy}
    else:
        raise ConfigError(f"dataset.family={cfg.family!r} is not valid; "
                          f"choose one of: {', '.join(FAMILIES)}")
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
        "load_s": time.perf_counter() - started,
    }
    return task
