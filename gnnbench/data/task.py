"""What the training loop needs of a dataset: one graph for node classification (`Task`,
already on the run's device), many small graphs for graph classification (`GraphTask`,
batched by PyG's DataLoader on the host) or one heterogeneous graph (`HeteroTask`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from torch import Tensor


class Splits(dict[str, Tensor]):
    """A task's splits by name, in the loader's order (train, val, test): a dict, so every
    loop over the splits stays one; the three every task has are attributes too."""

    @property
    def train(self) -> Tensor:
        return self["train"]

    @property
    def val(self) -> Tensor:
        return self["val"]

    @property
    def test(self) -> Tensor:
        return self["test"]


@dataclass
class Task:
    """Splits are index tensors, not boolean masks: indexing with a mask forces a host sync
    every step."""

    name: str
    x: Tensor
    y: Tensor
    edge_index: Tensor
    splits: Splits
    num_classes: int
    accuracy: Callable[[Tensor, Tensor], float]
    info: dict = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return self.x.size(0)

    @property
    def num_features(self) -> int:
        return self.x.size(1)


@dataclass
class GraphTask:
    """Graph classification: `graphs[i]` is a PyG `Data` (x, edge_index, a [1] label y);
    splits index graphs. Kept on the host: each mini-batch is collated there and moved."""

    name: str
    graphs: list
    splits: Splits
    num_features: int
    num_classes: int
    # "accuracy": `accuracy(predicted class, label)`; "rocauc" (ogbg-molhiv's metric):
    # `accuracy(score of class 1, label)`. Either way the run's val_acc/test_acc hold it.
    accuracy: Callable[[Tensor, Tensor], float]
    info: dict = field(default_factory=dict)
    metric: str = "accuracy"


@dataclass
class HeteroTask:
    """Node classification on a heterogeneous graph (a PyG `HeteroData` on the run's
    device): labels and splits are those of `target`'s nodes; other node types may have no
    features (`num_nodes` says how many of each type there are)."""

    name: str
    data: object  # torch_geometric.data.HeteroData
    target: str
    y: Tensor
    splits: Splits
    num_classes: int
    accuracy: Callable[[Tensor, Tensor], float]
    info: dict = field(default_factory=dict)


def simple_accuracy(pred: Tensor, target: Tensor) -> float:
    return (pred == target).float().mean().item()
