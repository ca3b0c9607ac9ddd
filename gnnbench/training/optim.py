"""The optimizer every training path uses, built in one place: Adam with the run's lr and
weight decay, as in PyG's and OGB's examples."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from omegaconf import DictConfig


def make_optimizer(parameters: Iterable[torch.nn.Parameter], train: DictConfig,
                   capturable: bool = False) -> torch.optim.Optimizer:
    """`train` is the `train` group. `capturable` keeps Adam's state on the device, which a
    step replayed as a CUDA graph needs."""
    return torch.optim.Adam(parameters, lr=train.lr, weight_decay=train.weight_decay,
                            capturable=capturable)
