"""TU graph-classification datasets (`dataset=mutag`, `dataset=proteins`) through PyG's
`TUDataset`, rooted at `<data_dir>/pyg/TUDataset`.

Offline by the rules of `dataset=pyg` (data/pyg.py): the raw files come from the cache,
else from `data_mirror` (`<mirror>/TUDataset/<NAME>/raw/<NAME>_A.txt`, ..., TU's own layout,
copied in; processed files never copied, and a cached processed file that is not plain data
is dropped and made again), and PyG downloads only with `dataset.download=true`. TU's files
are text (PyG reads them with its CSV reader), so nothing in them runs code.

Graphs keep their node labels as one-hot features (TU's node labels; PROTEINS' too) and
their class; TU has no official split, so a seeded random one is made (`dataset.split_seed`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import torch
from torch_geometric.data import Data

from gnnbench.config import ConfigError, Flag, check
from gnnbench.data import cache
from gnnbench.data.graph import SplitOptions
from gnnbench.data.pyg import _from_mirror, _offline
from gnnbench.data.synthetic_graphs import graph_info
from gnnbench.data.task import simple_accuracy

LEVEL = "graph"  # what load_task builds from this loader: a GraphTask
TU_NAMES = ("MUTAG", "PROTEINS")


class Options(SplitOptions):
    """conf/dataset/mutag.yaml, proteins.yaml."""

    tu_name: Literal["MUTAG", "PROTEINS"]
    download: Flag = False  # true: PyG may download what the cache and the mirror lack


def seeded_split(num: int, train_fraction: float, val_fraction: float,
                 seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(num, generator=g)
    n_train, n_val = int(train_fraction * num), int(val_fraction * num)
    return {"train": perm[:n_train].sort().values,
            "val": perm[n_train:n_train + n_val].sort().values,
            "test": perm[n_train + n_val:].sort().values}


def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    from torch_geometric.datasets import TUDataset

    cfg = check(Options, options, "dataset")
    data_dir = Path(data_dir)
    root = data_dir / "pyg" / "TUDataset"
    where = f"dataset {cfg.name or cfg.tu_name}"
    with cache.locked(data_dir, f"tu-{cfg.tu_name}"):
        try:
            if mirror is not None:
                _from_mirror(mirror, "TUDataset", root)
            if root.is_dir():
                cache.drop_unsafe_processed(root)
            cls = TUDataset if cfg.download else _offline(TUDataset, where, root, mirror)
            with cache.quiet("TUDataset"):
                dataset = cls(str(root), cfg.tu_name)
        except PermissionError as exc:
            raise cache.not_writable(data_dir, exc) from exc
    if len(dataset) < 3:
        raise ConfigError(f"{where} holds {len(dataset)} graphs; graph classification needs "
                          "at least one each to train, validate and test")
    graphs = [Data(x=g.x.float(), edge_index=g.edge_index, y=g.y.reshape(-1).long(),
                   num_nodes=g.num_nodes) for g in dataset]
    splits = seeded_split(len(graphs), cfg.train_fraction, cfg.val_fraction, cfg.split_seed)
    return {"graphs": graphs, "splits": splits, "num_classes": int(dataset.num_classes),
            "num_features": int(dataset.num_features), "accuracy": simple_accuracy,
            "info": {"source": "pyg", "dataset_class": "torch_geometric.datasets.TUDataset",
                     "root": str(root), "split": "random", **graph_info(graphs, splits)}}
