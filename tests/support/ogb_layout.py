"""Test-only: write a small dataset in OGB's extracted layout, so ogb's real loader and
Evaluator can be exercised offline (no OGB download is reachable from CI)."""

from __future__ import annotations

import gzip
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from gnnbench.config import ConfigError
from gnnbench.data.ogb import SPLIT_NAMES, dir_name, listed_files, ogb_meta


def _write_csv_gz(path: Path, array: np.ndarray) -> None:
    """One row per line, comma-separated, as in OGB's archives; %.9g round-trips float32.
    mtime=0 keeps the bytes reproducible."""
    fmt = "%d" if np.issubdtype(array.dtype, np.integer) else "%.9g"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        np.savetxt(out, array, fmt=fmt, delimiter=",")


def write_ogb_raw(directory: Path, name: str, x: Tensor, y: Tensor, edge_index: Tensor,
                  splits: Mapping[str, Tensor],
                  node_files: Mapping[str, Tensor] | None = None) -> Path:
    """Write a dataset in OGB's extracted layout, i.e. a mirror entry that `load_ogbn` reads:
    `<directory>/<ogbn_name>/{raw/*.csv.gz, split/<type>/{train,valid,test}.csv.gz,
    RELEASE_v1.txt}`. `edge_index` is stored as given: ogb itself adds the inverse edges
    of datasets whose master.csv says add_inverse_edge (ogbn-products). `splits` takes
    train/val/test (or OGB's "valid"). Additional node files that master.csv lists
    (ogbn-arxiv's node_year) come from `node_files`, else zeros. Returns the dataset dir."""
    meta = ogb_meta(name)
    if meta["binary"] == "True" or meta["has_edge_attr"] == "True":
        raise ConfigError(f"write_ogb_raw writes csv datasets without edge features, "
                          f"not {name!r}")
    num_nodes = x.size(0)
    root = Path(directory) / dir_name(name)
    raw = root / "raw"
    _write_csv_gz(raw / "node-feat.csv.gz", x.detach().cpu().numpy())
    _write_csv_gz(raw / "node-label.csv.gz", y.detach().cpu().view(-1, 1).long().numpy())
    _write_csv_gz(raw / "edge.csv.gz", edge_index.detach().cpu().long().t().numpy())
    _write_csv_gz(raw / "num-node-list.csv.gz", np.array([num_nodes], dtype=np.int64))
    _write_csv_gz(raw / "num-edge-list.csv.gz",
                  np.array([edge_index.size(1)], dtype=np.int64))
    node_files = node_files or {}
    for extra in listed_files(meta, "additional node files"):
        values = node_files.get(extra, torch.zeros(num_nodes, dtype=torch.long))
        _write_csv_gz(raw / f"{extra}.csv.gz", values.detach().cpu().view(num_nodes, -1).numpy())
    for ours, theirs in SPLIT_NAMES.items():
        index = splits[ours] if ours in splits else splits[theirs]
        _write_csv_gz(root / "split" / meta["split"] / f"{theirs}.csv.gz",
                      index.detach().cpu().long().view(-1).numpy())
    (root / f"RELEASE_v{meta['version']}.txt").write_text(
        f"{name} version {meta['version']}, written by the test suite\n")
    return root
