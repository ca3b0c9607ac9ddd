"""What the training loop needs of a dataset, already on the run's device."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from torch import Tensor


@dataclass
class Task:
    """Splits are index tensors, not boolean masks: indexing with a mask forces a host sync
    every step."""

    name: str
    x: Tensor
    y: Tensor
    edge_index: Tensor
    splits: dict[str, Tensor]
    num_classes: int
    accuracy: Callable[[Tensor, Tensor], float]
    info: dict = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return self.x.size(0)

    @property
    def num_features(self) -> int:
        return self.x.size(1)


def simple_accuracy(pred: Tensor, target: Tensor) -> float:
    return (pred == target).float().mean().item()
