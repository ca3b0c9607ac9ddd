"""ogbg-molhiv (`dataset=ogbg-molhiv`) through ogb's own `PygGraphPropPredDataset`, when its
files are there: 41,127 molecules, HIV inhibition (binary), OGB's scaffold split, scored
by ogb's Evaluator (ROC-AUC).

Offline by the rules of the other OGB datasets (data/ogb.py): `<mirror>/ogbg_molhiv/` holds
it as ogb extracts it (`raw/*.csv.gz`, `split/scaffold/`, `RELEASE_v1.txt`), copied into
`data_dir` and checked before ogb is called, so ogb neither downloads nor prompts.

Atom features are OGB's 9 categorical columns; each is one-hot encoded over ogb's own
feature dimensions (`get_atom_feature_dims`, 174 in all), so a model's first linear layer
on them is exactly OGB's `AtomEncoder` (a sum of one embedding per column). Bond features
are not used (gnnbench's GIN and GCN layers take none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor
from torch_geometric.data import Data

from gnnbench.config import FileName, Settings, check
from gnnbench.data import cache
from gnnbench.data.ogb import dir_name, offline_files
from gnnbench.data.synthetic_graphs import graph_info

LEVEL = "graph"
NAME = "ogbg-molhiv"
RAW = ("edge", "node-feat", "edge-feat", "graph-label", "num-node-list", "num-edge-list")


class Options(Settings):
    """conf/dataset/ogbg-molhiv.yaml."""

    name: FileName | None = None
    ogb_name: Literal["ogbg-molhiv"] = NAME


def molhiv_meta() -> dict[str, str]:
    import pandas as pd
    from ogb import graphproppred

    master = pd.read_csv(Path(graphproppred.__file__).parent / "master.csv", index_col=0,
                         keep_default_na=False)
    return {str(k): str(v) for k, v in master[NAME].items()}


def required_files(meta: dict[str, str]) -> list[str]:
    return [*(f"raw/{f}.csv.gz" for f in RAW),
            *(f"split/{meta['split']}/{s}.csv.gz" for s in ("train", "valid", "test")),
            f"RELEASE_v{meta['version']}.txt"]


def one_hot_atoms(x: Tensor) -> Tensor:
    """OGB's categorical atom columns, one-hot each, concatenated."""
    from ogb.utils.features import get_atom_feature_dims

    dims = get_atom_feature_dims()
    offsets = torch.tensor([0, *dims[:-1]]).cumsum(0)
    out = torch.zeros(x.size(0), sum(dims))
    out.scatter_(1, x.long() + offsets, 1.0)
    return out


def rocauc(scores: Tensor, labels: Tensor) -> float:
    """ogb's Evaluator for ogbg-molhiv on class-1 scores."""
    from ogb.graphproppred import Evaluator

    return float(Evaluator(NAME).eval({"y_true": labels.view(-1, 1).numpy(),
                                       "y_pred": scores.view(-1, 1).numpy()})["rocauc"])


def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    from ogb.graphproppred import PygGraphPropPredDataset

    check(Options, options, "dataset")
    meta = molhiv_meta()
    data_dir = Path(data_dir)
    with cache.locked(data_dir, dir_name(NAME)):
        root = offline_files(NAME, meta, required_files(meta), data_dir, mirror)
        with cache.quiet(NAME):
            dataset = PygGraphPropPredDataset(NAME, root=str(data_dir),
                                              meta_dict={**meta, "dir_path": str(root)})
    graphs = [Data(x=one_hot_atoms(g.x), edge_index=g.edge_index, y=g.y.view(-1).long(),
                   num_nodes=g.num_nodes) for g in dataset]
    split = dataset.get_idx_split()
    splits = {"train": split["train"], "val": split["valid"], "test": split["test"]}
    return {"graphs": graphs, "splits": splits, "num_classes": 2,
            "num_features": graphs[0].x.size(1), "accuracy": rocauc, "metric": "rocauc",
            "info": {"source": "ogb", "ogb_name": NAME, "root": str(root),
                     "split_type": meta["split"], "eval_metric": meta["eval metric"],
                     **graph_info(graphs, splits)}}
