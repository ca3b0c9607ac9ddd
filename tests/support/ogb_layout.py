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


def _write_table_gz(path: Path, header: list[str], row: list) -> None:
    """A one-row csv with a header (ogb's num-node-dict, nodetype-has-*)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write((",".join(header) + "\n" + ",".join(map(str, row)) + "\n").encode())


def write_ogbn_mag_raw(directory: Path, graph, splits: Mapping[str, Tensor]) -> Path:
    """Write a heterogeneous graph (PyG HeteroData: paper x and y, other types' num_nodes,
    edges of the relations to store) in ogbn-mag's extracted layout, as ogb's csv reader of
    heterogeneous graphs reads it: raw/{num-node-dict, triplet-type-list,
    nodetype-has-label}.csv.gz, raw/relations/<head___rel___tail>/{edge, num-edge-list,
    edge_reltype}.csv.gz, raw/node-feat/paper/{node-feat, node_year}.csv.gz,
    raw/node-label/paper/node-label.csv.gz, split/time/{nodetype-has-split.csv.gz,
    paper/{train,valid,test}.csv.gz} and RELEASE_v2.txt. Returns the dataset dir."""
    root = Path(directory) / "ogbn_mag"
    raw = root / "raw"
    types = sorted(graph.node_types)
    _write_table_gz(raw / "num-node-dict.csv.gz", types,
                    [int(graph[t].num_nodes) for t in types])
    triplets = sorted(graph.edge_types)
    with open(raw / "triplet-type-list.csv.gz", "wb") as f, \
            gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as out:
        out.write("".join(f"{h},{r},{t}\n" for h, r, t in triplets).encode())
    for k, triplet in enumerate(triplets):
        folder = raw / "relations" / "___".join(triplet)
        edge_index = graph[triplet].edge_index
        _write_csv_gz(folder / "edge.csv.gz", edge_index.t().long().numpy())
        _write_csv_gz(folder / "num-edge-list.csv.gz", np.array([edge_index.size(1)]))
        _write_csv_gz(folder / "edge_reltype.csv.gz",
                      np.full((edge_index.size(1), 1), k, dtype=np.int64))
    paper = graph["paper"]
    _write_csv_gz(raw / "node-feat/paper/node-feat.csv.gz", paper.x.numpy())
    _write_csv_gz(raw / "node-feat/paper/node_year.csv.gz",
                  np.full((paper.num_nodes, 1), 2019, dtype=np.int64))
    _write_csv_gz(raw / "node-label/paper/node-label.csv.gz", paper.y.view(-1, 1).numpy())
    _write_table_gz(raw / "nodetype-has-label.csv.gz", types, [t == "paper" for t in types])
    split = root / "split" / "time"
    _write_table_gz(split / "nodetype-has-split.csv.gz", types, [t == "paper" for t in types])
    for ours, theirs in SPLIT_NAMES.items():
        _write_csv_gz(split / "paper" / f"{theirs}.csv.gz", splits[ours].long().numpy())
    (root / "RELEASE_v2.txt").write_text("ogbn-mag version 2, written by the test suite\n")
    return root


def write_ogbg_raw(directory: Path, name: str, graphs: list, splits: Mapping[str, Tensor]) -> Path:
    """Write molecules (PyG Data: integer x [nodes, 9] in OGB's atom columns, each bond once
    in edge_index, integer edge_attr [bonds, 3], a [1] label y) in an ogbg dataset's
    extracted layout: raw/{edge, node-feat, edge-feat, graph-label, num-node-list,
    num-edge-list}.csv.gz (node ids local to each graph; ogb adds the inverse bonds),
    split/<type>/{train,valid,test}.csv.gz and RELEASE_v1.txt. Returns the dataset dir."""
    import pandas as pd
    from ogb import graphproppred

    master = pd.read_csv(Path(graphproppred.__file__).parent / "master.csv", index_col=0,
                         keep_default_na=False)
    meta = {str(k): str(v) for k, v in master[name].items()}
    root = Path(directory) / dir_name(name)
    raw = root / "raw"
    cat = lambda key: torch.cat([getattr(g, key) for g in graphs])  # noqa: E731
    _write_csv_gz(raw / "edge.csv.gz", torch.cat([g.edge_index.t() for g in graphs]).numpy())
    _write_csv_gz(raw / "node-feat.csv.gz", cat("x").long().numpy())
    _write_csv_gz(raw / "edge-feat.csv.gz", cat("edge_attr").long().numpy())
    _write_csv_gz(raw / "graph-label.csv.gz", cat("y").view(-1, 1).long().numpy())
    _write_csv_gz(raw / "num-node-list.csv.gz", np.array([g.num_nodes for g in graphs]))
    _write_csv_gz(raw / "num-edge-list.csv.gz",
                  np.array([g.edge_index.size(1) for g in graphs]))
    for ours, theirs in SPLIT_NAMES.items():
        _write_csv_gz(root / "split" / meta["split"] / f"{theirs}.csv.gz",
                      splits[ours].long().numpy())
    (root / f"RELEASE_v{meta['version']}.txt").write_text(
        f"{name} version {meta['version']}, written by the test suite\n")
    return root
