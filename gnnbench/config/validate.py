"""Checks of the values every run reads, so a typo fails in the first second, not after
compiling. Each registry (models, datasets, compiler) checks its own options; this module
checks the rest and resolves the device."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from gnnbench.config.errors import ConfigError, choice, file_name, integer, number, require

if TYPE_CHECKING:
    import torch

BATCHING = ("full", "neighbor")
# Defined here, the bottom layer, and used by training/precision.py and training/layouts.py.
PRECISIONS = ("fp32", "tf32", "bf16")
LAYOUTS = ("coo", "csr", "edge_index", "csr-op")
SAMPLERS = ("auto", "gnnbench", "pyg")
DISTRIBUTED = ("none", "ddp")
DIST_BACKENDS = ("auto", "nccl", "gloo")
DEVICE_CHOICES = "auto, cpu, cuda, cuda:N"
WANDB_MODES = ("auto", "online", "offline", "disabled")


# Keys whose values name folders and files: a run's folder, a dataset's cache.
NAME_KEYS = ("model.name", "dataset.name")


def validate(cfg: DictConfig) -> None:
    for key in NAME_KEYS:
        group, _, leaf = key.partition(".")
        file_name(key, cfg[group].get(leaf))
    choice("compile", cfg.compile, (False, True))
    train = cfg.train
    integer("train.epochs", train.epochs, 1)
    integer("train.warmup_epochs", train.warmup_epochs, 0)
    require(train.warmup_epochs < train.epochs,
            f"train.warmup_epochs={train.warmup_epochs!r} must be less than "
            f"train.epochs={train.epochs} (the epochs after the warm-up are the ones timed)")
    integer("train.seed", train.seed, 0)
    number("train.lr", train.lr, above=0)
    number("train.weight_decay", train.weight_decay, at_least=0)
    choice("train.paired", train.paired, (False, True))
    choice("train.precision", train.get("precision", "fp32"), PRECISIONS)
    layout = cfg.get("graph", {}).get("layout", "coo")
    choice("graph.layout", layout, LAYOUTS)
    choice("capture", cfg.get("capture", False), (False, True))
    if cfg.get("capture"):
        require(cfg.compile is False, "capture=true captures the eager step; with compile=true "
                "use compiler.scope=step compiler.mode=reduce-overhead (variant=whole-step)")
        require(train.batching == "full", "capture=true needs train.batching=full (a mini-batch "
                "changes shape every batch, so a captured step could not be replayed)")
    choice("train.batching", train.batching, BATCHING)
    require(not (cfg.compile and cfg.compiler.get("scope") == "epoch")
            or train.batching == "full", "compiler.scope=epoch needs train.batching=full "
            "(its eval is a full-graph forward; neighbour batches use compiler.scope=step)")
    require(layout == "coo" or train.batching == "full",
            f"graph.layout={layout} needs train.batching=full (sampled batches are COO)")
    choice("train.sampler", train.sampler, SAMPLERS)
    if train.batching == "neighbor":
        fanouts = list(train.fanouts)
        # A model of the user's own may have no num_layers: its fan-outs are the hops to
        # sample around each seed.
        layers = cfg.model.get("num_layers", len(fanouts))
        require(len(fanouts) == layers and len(fanouts) > 0 and all(
            isinstance(f, int) and (f > 0 or f == -1) for f in fanouts),
            f"train.fanouts={fanouts} needs one positive fan-out (or -1: all) per layer "
            f"(model.num_layers={layers})")
        integer("train.batch_size", train.batch_size, 1)
        integer("train.eval_chunk", train.eval_chunk, 1)
        require(not train.paired, "train.paired=true needs train.batching=full")
        choice("train.prefetch", train.get("prefetch", False), (False, True))
        choice("train.pad_batches", train.get("pad_batches", False), (False, True))
        require(not (train.get("pad_batches") and cfg.model.get("batch_norm", False)),
                "train.pad_batches=true needs model.batch_norm=false (batch norm would see "
                "the padding rows)")
    _validate_distributed(cfg)
    device = resolve_device(train.device)
    require(not cfg.get("capture") or device.type == "cuda",
            f"capture=true needs a CUDA device (train.device={train.device!r} is {device.type})")
    require(not (train.dist_backend == "nccl" and device.type != "cuda"),
            f"train.dist_backend='nccl' needs CUDA (train.device={train.device!r} is "
            f"{device.type}); choose one of: auto, gloo")
    pool_size(cfg.get("gpus"))
    choice("wandb.mode", cfg.wandb.mode, WANDB_MODES)
    number("wandb.init_timeout_s", cfg.wandb.init_timeout_s, above=0)
    if cfg.data_mirror is not None:
        require(
            Path(str(cfg.data_mirror)).is_dir(),
            f"data_mirror={cfg.data_mirror!r} is not a directory",
        )
    for folder in cfg.get("reference_dirs") or []:
        require(Path(str(folder)).is_dir(), f"reference_dirs entry {folder!r} is not a directory")


def _validate_distributed(cfg: DictConfig) -> None:
    train = cfg.train
    choice("train.distributed", train.distributed, DISTRIBUTED)
    integer("train.world_size", train.world_size, 1)
    choice("train.dist_backend", train.dist_backend, DIST_BACKENDS)
    number("train.dist_timeout_s", train.dist_timeout_s, above=0)
    if train.distributed == "none":
        require(train.world_size == 1, f"train.world_size={train.world_size} needs "
                                       "train.distributed=ddp (none trains in one process)")
        return
    require(train.batching == "neighbor",
            f"train.distributed='ddp' needs train.batching=neighbor (each rank trains on its "
            f"share of the training seeds; train.batching={train.batching!r} has one batch)")
    if cfg.compile:
        require(cfg.compiler.scope == "model",
                "train.distributed='ddp' compiles the DDP model: needs compiler.scope=model")
        require(cfg.compiler.fullgraph is False,
                "train.distributed='ddp' with compile=true needs compiler.fullgraph=false: "
                "dynamo breaks the graph around DDP's own forward by design (the model "
                "inside is compiled as one graph, split at DDP's gradient buckets)")


def pool_size(gpus: object) -> int:
    """How many jobs `hydra/launcher=gpu-pool` runs at once: `gpus`, or one per visible GPU
    (one at a time on a host without CUDA); more than the host has is an error."""
    import torch

    require(gpus is None or (isinstance(gpus, int) and not isinstance(gpus, bool)),
            f"gpus={gpus!r} is not an integer; it must be null (one job per GPU of this "
            "host) or an integer >= 1")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus is None:
        return max(count, 1)
    require(gpus >= 1, f"gpus={gpus!r} must be null (one job per GPU of this host) or an "
                       "integer >= 1")
    require(count == 0 or gpus <= count,
            f"gpus={gpus} but this host has {count} CUDA device(s): "
            f"{', '.join(f'cuda:{i}' for i in range(count))}")
    return gpus


def resolve_device(name: object) -> torch.device:
    """`auto` picks CUDA when present; asking for a GPU that is not there is an error naming
    what exists, never a fallback."""
    import torch

    if name == "auto":  # a CUDA device always with its index: set_device needs one
        return (torch.device("cuda", torch.cuda.current_device())
                if torch.cuda.is_available() else torch.device("cpu"))
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
