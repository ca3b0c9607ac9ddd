"""ogbn-mag (`dataset=ogbn-mag`) through ogb's own `PygNodePropPredDataset`, when its files
are there: heterogeneous (papers, authors, institutions, fields of study), features and
venue labels on papers, OGB's time split, scored by ogb's Evaluator.

Offline by the rules of the other OGB datasets (data/ogb.py): `<mirror>/ogbn_mag/` holds
the dataset as ogb extracts it (`raw/`, `split/time/`, `RELEASE_v2.txt`), copied into
`data_dir` and checked before ogb is called, so ogb neither downloads nor prompts; without a
mirror, the cache must already hold it. Edges get their reverses (`T.ToUndirected`), as in
PyG's and OGB's mag examples, so messages reach papers from every node type."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import torch
from torch_geometric.data import HeteroData

from gnnbench.config import FileName, Settings, check
from gnnbench.data import cache
from gnnbench.data.ogb import dir_name, offline_files, ogb_accuracy

LEVEL = "hetero"
TARGET = "paper"
NAME = "ogbn-mag"


class Options(Settings):
    """conf/dataset/ogbn-mag.yaml."""

    name: FileName | None = None
    ogb_name: Literal["ogbn-mag"] = NAME


def mag_meta() -> dict[str, str]:
    """ogb's own master.csv column for ogbn-mag (every value a string, as ogb reads it)."""
    import pandas as pd
    from ogb import nodeproppred

    master = pd.read_csv(Path(nodeproppred.__file__).parent / "master.csv", index_col=0,
                         keep_default_na=False)
    return {str(k): str(v) for k, v in master[NAME].items()}


def required_files(meta: dict[str, str]) -> list[str]:
    """What ogb reads of a heterogeneous csv dataset before anything else (the rest it
    finds through these: relations per triplet, features per node type)."""
    split = f"split/{meta['split']}"
    return ["raw/num-node-dict.csv.gz", "raw/triplet-type-list.csv.gz",
            "raw/nodetype-has-label.csv.gz", f"{split}/nodetype-has-split.csv.gz",
            *(f"{split}/{TARGET}/{s}.csv.gz" for s in ("train", "valid", "test")),
            f"RELEASE_v{meta['version']}.txt"]


def to_hetero_data(data: Any) -> HeteroData:
    """ogb's graph (dicts per type) as PyG's HeteroData, with reverse edges."""
    import torch_geometric.transforms as T

    out = HeteroData()
    for node_type, n in data.num_nodes_dict.items():
        out[node_type].num_nodes = int(n)
    for node_type, x in data.x_dict.items():
        out[node_type].x = x.float()
    out[TARGET].y = data.y_dict[TARGET].view(-1).long()
    for edge_type, edge_index in data.edge_index_dict.items():
        out[edge_type].edge_index = edge_index
    return T.ToUndirected()(out)


def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    from ogb.nodeproppred import PygNodePropPredDataset

    check(Options, options, "dataset")
    meta = mag_meta()
    data_dir = Path(data_dir)
    with cache.locked(data_dir, dir_name(NAME)):
        root = offline_files(NAME, meta, required_files(meta), data_dir, mirror,
                             " (no download here: ogbn-mag's archive is 400 MB)")
        with cache.quiet(NAME):
            dataset = PygNodePropPredDataset(NAME, root=str(data_dir),
                                             meta_dict={**meta, "dir_path": str(root)})
    split = dataset.get_idx_split()
    return {"hetero": to_hetero_data(dataset[0]), "target": TARGET,
            "num_classes": int(meta["num classes"]),
            "splits": {"train": split["train"][TARGET], "val": split["valid"][TARGET],
                       "test": split["test"][TARGET]},
            "accuracy": ogb_accuracy(NAME),
            "info": {"source": "ogb", "ogb_name": NAME, "root": str(root),
                     "split_type": meta["split"], "eval_metric": meta["eval metric"]}}
