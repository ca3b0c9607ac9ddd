"""A graph of the user's own, saved to a file (`dataset=file dataset.path=<file>`): a PyG
`Data` (or a dict of tensors) saved with `torch.save`, or an `.npz` with `x`, `edge_index`,
`y` and optional `train_mask`, `val_mask`, `test_mask`.

No code runs from a data file: `torch.load(weights_only=True)` with PyG's `Data` classes
allowed, `numpy.load(allow_pickle=False)`. The file is checked before training (data/
graph.py), and its content hash (`dataset.sha256`, computed when the config is composed)
is part of the setting's identity, so a changed file is a new setting and a moved one is
not."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import torch
from pydantic import AfterValidator

from gnnbench.config import ConfigError, Count, check, first_line, require
from gnnbench.config.sources import file_sha256
from gnnbench.data import cache, graph


def path_of(value: object) -> Path:
    """`dataset.path` as a file that exists (relative to the launch directory)."""
    require(bool(value), "dataset=file needs dataset.path=<file>: a torch.save'd "
                         "PyG Data or an .npz with x, edge_index and y")
    path = Path(os.path.expanduser(str(value)))
    require(path.is_file(), f"dataset.path={str(value)!r} is not a file "
                            f"(looked for {path.resolve()})")
    return path


def _existing(value: str | None) -> str | None:
    path_of(value)
    return value


class Options(graph.SplitOptions):
    """conf/dataset/file.yaml."""

    path: Annotated[str | None, AfterValidator(_existing)] = None
    sha256: str | None = None  # the content's hash when the config was composed
    num_classes: Count(1) | None = None  # null: the file's, else the largest label + 1


def _fields(path: Path) -> tuple[dict, int | None]:
    """The file's arrays by name, as tensors, and the node count it states (if any)."""
    where = f"dataset.path={str(path)!r}"
    if path.suffix == ".npz":
        import numpy as np

        try:
            with np.load(path, allow_pickle=False) as arrays:
                fields = {k: torch.from_numpy(arrays[k]) for k in arrays.files}
        except ValueError as exc:  # object arrays need pickle: refused
            raise ConfigError(f"{where} cannot be read without running code from it ({exc}); "
                              "save plain numeric arrays") from exc
        except (OSError, EOFError) as exc:
            raise ConfigError(f"{where} is not a readable .npz file ({exc})") from exc
        count = fields.pop("num_nodes", None)
        return fields, int(count) if count is not None else None
    try:
        loaded = cache.load_weights_only(path)
    except Exception as exc:  # UnpicklingError for anything but tensors and Data
        lines = [line.strip() for line in str(exc).splitlines() if "Unsupported global" in line]
        why = lines[0].split(" was not")[0].replace("WeightsUnpickler error: ", "") if lines \
            else first_line(exc, typed=True)
        raise ConfigError(f"{where} cannot be loaded as data ({why}); gnnbench loads a "
                          "torch.save'd PyG Data or dict of tensors with weights_only=True, "
                          "so no code runs from a data file") from exc
    if isinstance(loaded, dict):
        return dict(loaded), None
    from torch_geometric.data import Data

    require(isinstance(loaded, Data), f"{where} holds a {type(loaded).__name__}; it must hold "
                                      "a PyG Data (or a dict of tensors)")
    stated = loaded._store.get("num_nodes")  # only what the file sets itself
    return {k: loaded[k] for k in loaded.keys()}, stated


def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    """The dataset registry's entry point (`_target_` of conf/dataset/file.yaml), called with
    the group's keys as `options`. Nothing is cached in data_dir: the file is read where it
    lies."""
    cfg = check(Options, options, "dataset")
    path = path_of(cfg.path)
    found = file_sha256(path)
    require(cfg.sha256 in (None, found),
            f"dataset.path={str(cfg.path)!r} changed after the run began (its SHA-256 is "
            f"{found}, the run's setting says {cfg.sha256}); run it again")
    fields, stated = _fields(path)
    where = f"dataset.path={str(cfg.path)!r}"
    classes = fields.pop("num_classes", None)  # the file may say how many classes there are
    if cfg.num_classes is None and classes is not None:
        require(not isinstance(classes, torch.Tensor) or classes.numel() == 1,
                f"{where}: num_classes must be one number")
        classes = int(classes)
    else:
        classes = cfg.num_classes
    parts = graph.checked(fields, where, num_classes=classes, num_nodes=stated, **cfg.split())
    parts["info"].update(source="file", file=str(path.resolve()), sha256=found,
                         bytes=path.stat().st_size)
    return parts
