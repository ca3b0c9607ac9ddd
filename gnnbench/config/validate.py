"""Checks of the values every run reads, so a typo fails in the first second, not after
compiling. Each registry (models, datasets, compiler) checks its own options; this module
checks the rest and resolves the device."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from gnnbench.config.errors import ConfigError, choice, require

if TYPE_CHECKING:
    import torch

BATCHING = ("full", "neighbor")
SAMPLERS = ("auto", "gnnbench", "pyg")
DEVICE_CHOICES = "auto, cpu, cuda, cuda:N"


def validate(cfg: DictConfig) -> None:
    choice("compile", cfg.compile, (False, True))
    train = cfg.train
    require(
        isinstance(train.epochs, int) and train.epochs > 0,
        f"train.epochs={train.epochs!r} must be a positive integer",
    )
    require(
        isinstance(train.warmup_epochs, int) and 0 <= train.warmup_epochs < train.epochs,
        f"train.warmup_epochs={train.warmup_epochs!r} must be an integer in "
        f"[0, train.epochs={train.epochs})",
    )
    require(
        isinstance(train.lr, (int, float)) and train.lr > 0, f"train.lr={train.lr!r} must be > 0"
    )
    require(
        isinstance(train.weight_decay, (int, float)) and train.weight_decay >= 0,
        f"train.weight_decay={train.weight_decay!r} must be >= 0",
    )
    choice("train.batching", train.batching, BATCHING)
    choice("train.sampler", train.sampler, SAMPLERS)
    if train.batching == "neighbor":
        fanouts = list(train.fanouts)
        require(len(fanouts) == cfg.model.num_layers and all(
            isinstance(f, int) and (f > 0 or f == -1) for f in fanouts),
            f"train.fanouts={fanouts} needs one positive fan-out (or -1: all) per layer "
            f"(model.num_layers={cfg.model.num_layers})")
        require(isinstance(train.batch_size, int) and train.batch_size > 0,
                f"train.batch_size={train.batch_size!r} must be a positive integer")
        require(isinstance(train.eval_chunk, int) and train.eval_chunk > 0,
                f"train.eval_chunk={train.eval_chunk!r} must be a positive integer")
        require(not train.paired, "train.paired=true needs train.batching=full")
    resolve_device(train.device)
    if cfg.data_mirror is not None:
        require(
            Path(str(cfg.data_mirror)).is_dir(),
            f"data_mirror={cfg.data_mirror!r} is not a directory",
        )
    for folder in cfg.get("reference_dirs") or []:
        require(Path(str(folder)).is_dir(), f"reference_dirs entry {folder!r} is not a directory")


def resolve_device(name: object) -> torch.device:
    """`auto` picks CUDA when present; asking for a GPU that is not there is an error naming
    what exists, never a fallback."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    match = re.fullmatch(r"cpu|cuda(?::(\d+))?", str(name)) if isinstance(name, str) else None
    require(match is not None,
            f"train.device={name!r} is not valid; choose one of: {DEVICE_CHOICES}")
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(f"train.device={name!r} but CUDA is not available "
                          f"(torch {torch.__version__}); choose one of: auto, cpu")
    count = torch.cuda.device_count()
    index = int(match.group(1)) if match.group(1) is not None else torch.cuda.current_device()
    require(index < count, f"train.device={name!r} but this machine has {count} CUDA "
                           f"device(s): {', '.join(f'cuda:{i}' for i in range(count))}")
    return torch.device("cuda", index)
