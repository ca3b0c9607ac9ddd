"""One training step and one inference pass, full batch. No timing, no logging, no
host synchronisation: the caller decides what to measure and when to read values."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from gnnbench.data import Task


def train_step(forward: Callable[..., Tensor], model: torch.nn.Module,
               optimizer: torch.optim.Optimizer, task: Task,
               edge_index: Tensor, edge_weight: Tensor | None) -> Tensor:
    """`forward` is the model itself or its compiled wrapper; the loss uses index tensors."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    out = forward(task.x, edge_index, edge_weight)
    train_idx = task.splits["train"]
    loss = F.cross_entropy(out[train_idx], task.y[train_idx])
    loss.backward()
    optimizer.step()
    return loss.detach()


@torch.no_grad()
def predict(forward: Callable[..., Tensor], model: torch.nn.Module, task: Task,
            edge_index: Tensor, edge_weight: Tensor | None) -> Tensor:
    model.eval()
    return forward(task.x, edge_index, edge_weight).argmax(dim=-1)


def split_accuracy(pred: Tensor, task: Task) -> dict[str, float]:
    return {name: task.accuracy(pred[idx], task.y[idx]) for name, idx in task.splits.items()}
