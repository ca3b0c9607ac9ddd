"""A seeded dataset of many small graphs (`dataset=synthetic-graphs`): the graph-level case,
where every mini-batch of whole graphs has its own node and edge count.

Sizes follow ogbg-molhiv's spread: node counts are log-normal around a median of
`median_nodes` (molhiv: ~23-25) with a long tail (`size_sigma`; 0.5 puts ~0.3 % of graphs
past 100 nodes, molhiv's largest has 222), clipped to [`min_nodes`, `max_nodes`]. Each
graph is molecule-like: a random tree over its atoms plus a few ring-closing edges (average
degree ~2.2), and each atom has one of `num_features` types (one-hot features, carbon-like
type 0 commonest).

The label is a motif, not a size: type-A and type-B atoms (types 1 and 2) are never bonded
in a class-0 graph, and a class-1 graph has one to three A-B bonds planted between atoms
that are there anyway. Labels are drawn 50/50 independently of the size and every graph has
at least one A and one B atom, so neither counting nodes nor counting atom types predicts
the class: a model must look at who is bonded to whom (one hop of message passing).
`size_only_accuracy` measures what counting nodes achieves; the loader records it.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import model_validator
from torch import Tensor
from torch_geometric.data import Data

from gnnbench.config import Count, FileName, Real, Settings, check, require
from gnnbench.data.task import simple_accuracy

LEVEL = "graph"  # what load_task builds from this loader: a GraphTask
TYPE_A, TYPE_B = 1, 2


class Options(Settings):
    """conf/dataset/synthetic-graphs.yaml."""

    name: FileName | None = None
    num_graphs: Count(10)
    median_nodes: Count(4)
    size_sigma: Real(at_least=0, at_most=2)
    min_nodes: Count(4)
    max_nodes: Count(4)
    num_features: Count(3)  # atom types; A and B are types 1 and 2
    ring_fraction: Real(at_least=0, at_most=1)  # extra (ring-closing) edges per node
    train_fraction: Real(above=0, below=1)
    val_fraction: Real(above=0, below=1)
    seed: Count(0) = 0

    @model_validator(mode="after")
    def _sizes(self) -> Options:
        require(self.min_nodes <= self.median_nodes <= self.max_nodes,
                f"dataset.min_nodes={self.min_nodes}, median_nodes={self.median_nodes} and "
                f"max_nodes={self.max_nodes} must be in that order")
        total = self.train_fraction + self.val_fraction
        require(total < 1, f"dataset.train_fraction + dataset.val_fraction = {total:g} "
                           "leaves no test graphs; it must be < 1")
        return self


def _atom_types(rng: np.random.Generator, n: int, num_types: int) -> np.ndarray:
    """Type 0 (carbon-like) for ~70 % of atoms, the rest spread over the other types; one A
    and one B at least, never at the root (node 0 is type 0, so the tree can always grow)."""
    rest = np.full(num_types - 1, 0.3 / (num_types - 1))
    types = rng.choice(num_types, size=n, p=np.concatenate([[0.7], rest]))
    types[0] = 0
    a, b = rng.choice(np.arange(1, n), size=2, replace=False)
    types[a], types[b] = TYPE_A, TYPE_B
    return types


def _forbidden(t: np.ndarray, u: np.ndarray) -> np.ndarray:
    return ((t == TYPE_A) & (u == TYPE_B)) | ((t == TYPE_B) & (u == TYPE_A))


def _graph(rng: np.random.Generator, n: int, num_types: int, ring_fraction: float,
           label: int) -> tuple[np.ndarray, np.ndarray]:
    """(atom types, undirected edges [2, E] both directions) of one graph."""
    types = _atom_types(rng, n, num_types)
    # A random tree: each atom bonds to a uniformly drawn earlier atom, or to the root (type
    # 0, compatible with every type) where that bond would be an A-B one.
    child = np.arange(1, n)
    parent = (rng.random(n - 1) * child).astype(np.int64)
    parent[_forbidden(types[child], types[parent])] = 0
    src, dst = child.tolist(), parent.tolist()
    extra = rng.integers(0, n, size=(2, int(round(ring_fraction * n))))
    keep = (extra[0] != extra[1]) & ~_forbidden(types[extra[0]], types[extra[1]])
    src.extend(extra[0, keep].tolist())
    dst.extend(extra[1, keep].tolist())
    if label == 1:  # plant 1-3 A-B bonds between atoms already there
        a_atoms, b_atoms = np.flatnonzero(types == TYPE_A), np.flatnonzero(types == TYPE_B)
        for _ in range(int(rng.integers(1, 4))):
            src.append(int(rng.choice(a_atoms)))
            dst.append(int(rng.choice(b_atoms)))
    pairs = {(min(s, d), max(s, d)) for s, d in zip(src, dst, strict=True)}
    und = np.array(sorted(pairs), dtype=np.int64).T.reshape(2, -1)
    return types, np.concatenate([und, und[::-1]], axis=1)


def generate_graphs(num_graphs: int, median_nodes: int, size_sigma: float, min_nodes: int,
                    max_nodes: int, num_features: int, ring_fraction: float,
                    seed: int) -> list[Data]:
    """The graphs, each a PyG `Data` with one-hot `x`, `edge_index` and a [1] label `y`."""
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.normal(math.log(median_nodes), size_sigma, num_graphs))
    sizes = np.clip(np.rint(sizes), min_nodes, max_nodes).astype(int)
    labels = rng.integers(0, 2, num_graphs)
    eye = torch.eye(num_features)
    graphs = []
    for n, label in zip(sizes.tolist(), labels.tolist(), strict=True):
        types, edges = _graph(rng, n, num_features, ring_fraction, label)
        graphs.append(Data(x=eye[torch.from_numpy(types)], edge_index=torch.from_numpy(edges),
                           y=torch.tensor([label]), num_nodes=n))
    return graphs


def random_split(num_graphs: int, train_fraction: float, val_fraction: float,
                 seed: int) -> dict[str, Tensor]:
    g = torch.Generator().manual_seed(seed + 1)
    perm = torch.randperm(num_graphs, generator=g)
    n_train, n_val = int(train_fraction * num_graphs), int(val_fraction * num_graphs)
    return {"train": perm[:n_train].sort().values,
            "val": perm[n_train:n_train + n_val].sort().values,
            "test": perm[n_train + n_val:].sort().values}


def size_distribution(counts: Tensor) -> dict[str, float]:
    """Quantiles of per-graph counts (nodes or edges): what the dataset's shapes look like."""
    c = counts.double()
    q = torch.quantile(c, torch.tensor([0.1, 0.5, 0.9, 0.99], dtype=torch.float64)).tolist()
    return {"min": int(c.min()), "p10": q[0], "median": q[1], "p90": q[2], "p99": q[3],
            "max": int(c.max()), "mean": float(c.mean())}


def size_only_accuracy(sizes: Tensor, labels: Tensor, splits: dict[str, Tensor]) -> float:
    """Test accuracy of the best classifier that sees only a graph's node count: each size
    gets its training graphs' majority label (the overall majority where no training graph
    has that size). What a model that only counts nodes can reach."""
    train, test = splits["train"], splits["test"]
    majority = int(torch.bincount(labels[train]).argmax())
    votes: dict[int, list[int]] = {}
    for s, y in zip(sizes[train].tolist(), labels[train].tolist(), strict=True):
        votes.setdefault(s, []).append(y)
    rule = {s: max(set(v), key=v.count) for s, v in votes.items()}
    pred = torch.tensor([rule.get(s, majority) for s in sizes[test].tolist()])
    return simple_accuracy(pred, labels[test])


def graph_info(graphs: list[Data], splits: dict[str, Tensor]) -> dict:
    """The size spread (nodes, edges per graph) and the node-count-only baseline."""
    nodes = torch.tensor([g.num_nodes for g in graphs])
    edges = torch.tensor([g.edge_index.size(1) for g in graphs])
    labels = torch.cat([g.y.reshape(-1) for g in graphs])
    return {"nodes_per_graph": size_distribution(nodes),
            "edges_per_graph": size_distribution(edges),
            "size_only_test_acc": size_only_accuracy(nodes, labels, splits)}


def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    """Generated in-process (a few seconds for molhiv's 41k graphs), on the CPU: graphs are
    batched there by PyG's DataLoader and each batch moved to the run's device."""
    cfg = check(Options, options, "dataset")
    started = time.perf_counter()
    graphs = generate_graphs(cfg.num_graphs, cfg.median_nodes, cfg.size_sigma, cfg.min_nodes,
                             cfg.max_nodes, cfg.num_features, cfg.ring_fraction, cfg.seed)
    splits = random_split(cfg.num_graphs, cfg.train_fraction, cfg.val_fraction, cfg.seed)
    info = {"source": "synthetic", "generate_s": time.perf_counter() - started,
            **graph_info(graphs, splits)}
    return {"graphs": graphs, "splits": splits, "num_classes": 2,
            "num_features": cfg.num_features, "accuracy": simple_accuracy, "info": info}
