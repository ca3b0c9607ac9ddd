"""A node-classification graph that comes from outside gnnbench (a saved file, a PyG
dataset), checked before anything trains: every problem is one line naming the field.
Its splits are its own masks when it has them, else a seeded random split."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from pydantic import model_validator
from torch import Tensor

from gnnbench.config import ConfigError, Count, FileName, Real, Settings, require
from gnnbench.data.synthetic import random_split
from gnnbench.data.task import simple_accuracy

MASKS = {"train": "train_mask", "val": "val_mask", "test": "test_mask"}


class SplitOptions(Settings):
    """The options of a dataset whose graph may come without masks (a file, a PyG dataset):
    the seeded split it then gets (the rest is test)."""

    name: FileName | None = None
    train_fraction: Real(above=0, below=1) = 0.6
    val_fraction: Real(above=0, below=1) = 0.2
    split_seed: Count(0) = 0

    @model_validator(mode="after")
    def _leaves_test_nodes(self) -> SplitOptions:
        total = self.train_fraction + self.val_fraction
        require(total < 1, f"dataset.train_fraction + dataset.val_fraction = {total:g} leaves "
                           "no test nodes; it must be < 1")
        return self

    def split(self) -> dict:
        """The keyword arguments of `checked` that say how to split."""
        return {"train_fraction": self.train_fraction, "val_fraction": self.val_fraction,
                "split_seed": self.split_seed}


def _tensor(fields: Mapping, name: str, where: str) -> Tensor:
    value = fields.get(name)
    require(value is not None, f"{where} has no {name}")
    require(isinstance(value, Tensor), f"{where}: {name} is a {type(value).__name__}, not a "
                                       "tensor")
    return value


def _features(fields: Mapping, where: str) -> Tensor:
    x = _tensor(fields, "x", where)
    require(x.dim() == 2 and x.size(0) > 0 and x.size(1) > 0,
            f"{where}: x has shape {tuple(x.shape)}; it must be [num_nodes, num_features]")
    require(x.is_floating_point(), f"{where}: x is {x.dtype}; node features must be floats")
    require(bool(torch.isfinite(x).all()), f"{where}: x holds NaN or infinite values")
    return x.float() if x.dtype == torch.float64 else x


def _edges(fields: Mapping, num_nodes: int, where: str) -> Tensor:
    edge_index = _tensor(fields, "edge_index", where)
    require(edge_index.dim() == 2 and edge_index.size(0) == 2,
            f"{where}: edge_index has shape {tuple(edge_index.shape)}; it must be "
            "[2, num_edges]")
    require(not edge_index.is_floating_point() and edge_index.dtype != torch.bool,
            f"{where}: edge_index is {edge_index.dtype}; it must hold integer node ids")
    edge_index = edge_index.long()
    bad = (edge_index < 0) | (edge_index >= num_nodes)
    if bool(bad.any()):
        column = int(bad.any(0).nonzero()[0])
        node = edge_index[:, column][bad[:, column]][0].item()
        raise ConfigError(f"{where}: edge_index names node {node} (edge {column}) but the "
                          f"graph has {num_nodes} nodes (ids 0 to {num_nodes - 1}, one per "
                          "row of x)")
    return edge_index


def _labels(fields: Mapping, num_nodes: int, num_classes: int | None,
            where: str) -> tuple[Tensor, int]:
    y = _tensor(fields, "y", where)
    if y.dim() == 2 and y.size(1) == 1:
        y = y.view(-1)
    require(y.dim() == 1, f"{where}: y has shape {tuple(y.shape)}; it must be [num_nodes] "
                          "(one class per node; multi-label targets are not supported)")
    require(not y.is_floating_point() and y.dtype != torch.bool,
            f"{where}: y is {y.dtype}; it must hold integer class labels")
    require(y.numel() == num_nodes, f"{where}: y has {y.numel()} labels for {num_nodes} nodes "
                                    "(rows of x)")
    y = y.long()
    classes = int(y.max()) + 1 if num_classes is None else int(num_classes)
    bad = (y < 0) | (y >= classes)
    if bool(bad.any()):
        node = int(bad.nonzero()[0])
        raise ConfigError(f"{where}: y holds label {int(y[node])} at node {node}; labels must "
                          f"be in 0..{classes - 1} ({classes} classes)")
    return y, classes


def _masks(fields: Mapping, num_nodes: int, where: str) -> dict[str, Tensor] | None:
    present = {split: name for split, name in MASKS.items() if fields.get(name) is not None}
    if not present:
        return None
    missing = [name for split, name in MASKS.items() if split not in present]
    require(not missing, f"{where} has {', '.join(present.values())} but not "
                         f"{', '.join(missing)}: give all three masks, or none (then a seeded "
                         "random split is made)")
    splits = {}
    for split, name in MASKS.items():
        mask = _tensor(fields, name, where)
        if mask.dim() == 2 and mask.size(0) == num_nodes:  # several splits: the first
            mask = mask[:, 0]
        require(mask.dim() == 1 and mask.numel() == num_nodes,
                f"{where}: {name} has shape {tuple(mask.shape)}; it must have one entry per "
                f"node ({num_nodes})")
        require(mask.dtype == torch.bool or bool(((mask == 0) | (mask == 1)).all()),
                f"{where}: {name} is {mask.dtype} with values other than 0 and 1; it must be a "
                "boolean mask")
        splits[split] = mask.bool().nonzero().view(-1)
        require(splits[split].numel() > 0, f"{where}: {name} selects no node")
    return splits


def checked(fields: Mapping, where: str, *, num_classes: int | None = None,
            train_fraction: float = 0.6, val_fraction: float = 0.2, split_seed: int = 0,
            num_nodes: int | None = None) -> dict:
    """x, y, edge_index, splits, num_classes, accuracy and info of a loader's result, from
    `fields` (a PyG Data or a mapping of arrays), checked field by field. `num_nodes`: what
    the graph says it has (a Data's own attribute), checked against the rows of x."""
    x = _features(fields, where)
    n = x.size(0)
    require(num_nodes is None or int(num_nodes) == n,
            f"{where}: num_nodes is {num_nodes} but x has {n} rows (one per node)")
    edge_index = _edges(fields, n, where)
    y, classes = _labels(fields, n, num_classes, where)
    splits = _masks(fields, n, where)
    if splits is None:
        splits = random_split(n, train_fraction, val_fraction, split_seed)
        split = {"kind": "seeded random", "train_fraction": train_fraction,
                 "val_fraction": val_fraction, "seed": split_seed}
    else:
        split = {"kind": "own masks"}
    return {"x": x, "y": y, "edge_index": edge_index, "splits": splits,
            "num_classes": classes, "accuracy": simple_accuracy, "info": {"split": split}}
