"""Planetoid (Cora, CiteSeer, PubMed) through PyG's own loader, public split, row-normalised
features; offline from a mirror of the raw files."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from omegaconf import DictConfig

from gnnbench.config import ConfigError
from gnnbench.data.task import simple_accuracy

RAW_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def _copy_raw(name: str, data_dir: Path, mirror: str) -> None:
    """Copy `<mirror>/<Name>/raw/ind.<name>.*` into the cache; the mirror may be read-only."""
    src, dst = Path(mirror) / name / "raw", data_dir / name / "raw"
    files = [f"ind.{name.lower()}.{part}" for part in RAW_PARTS]
    missing = [f for f in files if not (src / f).is_file()]
    if missing:
        raise ConfigError(
            f"data_mirror={mirror!r} is incomplete: {src} lacks {', '.join(missing)}"
        )
    dst.mkdir(parents=True, exist_ok=True)
    for f in files:
        if not (dst / f).is_file():
            shutil.copyfile(src / f, dst / f)  # copyfile: never carry read-only bits over


def load(cfg: DictConfig, data_dir: Path, mirror: str | None, device: torch.device) -> dict:
    from torch_geometric.datasets import Planetoid
    from torch_geometric.transforms import NormalizeFeatures

    if mirror is not None:
        _copy_raw(cfg.root_name, data_dir, mirror)
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
            "num_classes": int(data.y.max()) + 1, "accuracy": simple_accuracy,
            "info": {"source": "planetoid"}}
