"""What the declarations (groups.py) cannot say: rules across keys and groups, and what
depends on the machine (the device, the GPUs, folders that must exist). Every key's type,
range and choices is checked from its declaration first."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf

from gnnbench.config import groups
from gnnbench.config.errors import ConfigError, file_name, require
from gnnbench.config.settings import check

if TYPE_CHECKING:
    import torch

DEVICE_CHOICES = "auto, cpu, cuda, cuda:N"

# Keys whose values name folders and files: a run's folder, a dataset's cache. Checked here
# for every model and dataset (a user's class declares no name), and on the command line
# before Hydra names a run's folder with them.
NAME_KEYS = ("model.name", "dataset.name")


def validate(cfg: DictConfig) -> groups.Run:
    """The composed config checked against its declaration, then the rules across keys;
    the checked settings."""
    for key in NAME_KEYS:
        group, _, leaf = key.partition(".")
        file_name(key, cfg[group].get(leaf))
    run = check(groups.Run, OmegaConf.to_container(cfg, resolve=True))
    train = run.train
    if run.capture:
        require(run.compile is False, "capture=true captures the eager step; with compile=true "
                "use compiler.scope=step compiler.mode=reduce-overhead (variant=whole-step)")
        require(train.batching == "full", "capture=true needs train.batching=full (a mini-batch "
                "changes shape every batch, so a captured step could not be replayed)")
    require(not (run.compile and run.compiler.scope == "epoch")
            or train.batching == "full", "compiler.scope=epoch needs train.batching=full "
            "(its eval is a full-graph forward; neighbour batches use compiler.scope=step)")
    _validate_capture_epochs(run)
    layout = run.graph.layout
    require(layout == "coo" or train.batching == "full",
            f"graph.layout={layout} needs train.batching=full (sampled batches are COO)")
    require(train.prefetch_stream == "normal" or (train.prefetch and
                                                  train.batching == "neighbor"),
            f"train.prefetch_stream={train.prefetch_stream} needs train.prefetch=true and "
            "train.batching=neighbor (the priority of the sampling thread's stream); choose "
            "normal")
    if train.batching == "neighbor":
        fanouts = list(train.fanouts)
        # A model of the user's own may have no num_layers: its fan-outs are the hops to
        # sample around each seed.
        layers = cfg.model.get("num_layers", len(fanouts))
        require(len(fanouts) == layers and len(fanouts) > 0 and all(
            isinstance(f, int) and not isinstance(f, bool) and (f > 0 or f == -1)
            for f in fanouts),
            f"train.fanouts={fanouts} needs one positive fan-out (or -1: all) per layer "
            f"(model.num_layers={layers})")
        require(not train.paired, "train.paired=true needs train.batching=full")
        require(not (train.pad_batches and cfg.model.get("batch_norm", False)),
                "train.pad_batches=true needs model.batch_norm=false (batch norm would see "
                "the padding rows)")
    _validate_distributed(run)
    device = resolve_device(train.device)
    require(not run.capture or device.type == "cuda",
            f"capture=true needs a CUDA device (train.device={train.device!r} is {device.type})")
    require(not (train.dist_backend == "nccl" and device.type != "cuda"),
            f"train.dist_backend='nccl' needs CUDA (train.device={train.device!r} is "
            f"{device.type}); choose one of: auto, gloo")
    pool_size(run.gpus)
    if run.data_mirror is not None:
        require(Path(run.data_mirror).is_dir(),
                f"data_mirror={run.data_mirror!r} is not a directory")
    for folder in run.reference_dirs:
        require(Path(folder).is_dir(), f"reference_dirs entry {folder!r} is not a directory")
    return run


def _validate_capture_epochs(cfg: groups.Run) -> None:
    """compiler.capture_epochs=K > 1 groups the epochs of a whole-epoch run. Groups never
    straddle the warm-up or the end, so every timed group is whole and alike: train.epochs
    and train.warmup_epochs must be multiples of K (refused, not a shorter last group, which
    would need a capture of its own and time unlike the others)."""
    k = cfg.compiler.capture_epochs
    if k == 1:
        return
    require(cfg.compile and cfg.compiler.scope == "epoch",
            f"compiler.capture_epochs={k} groups the epochs of a whole-epoch run: needs "
            "compile=true compiler.scope=epoch (variant=whole-epoch)")
    require(not cfg.train.paired, f"compiler.capture_epochs={k} needs train.paired=false "
            "(an eager twin trains epoch by epoch beside it)")
    for key, value, least in (("train.epochs", cfg.train.epochs, k),
                              ("train.warmup_epochs", cfg.train.warmup_epochs, 0)):
        below, above = max(value // k * k, least), -(-value // k) * k
        choose = " or ".join(str(v) for v in dict.fromkeys((below, above)))
        require(value % k == 0, f"{key}={value} is not a multiple of "
                                f"compiler.capture_epochs={k} (epochs are read in groups of "
                                f"{k}); choose {key}={choose}")


def _validate_distributed(cfg: groups.Run) -> None:
    train = cfg.train
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
        require(cfg.compiler.cache == "as-is",
                f"compiler.cache={cfg.compiler.cache!r} is set up in one process; with "
                "train.distributed='ddp' choose: as-is")


def pool_size(gpus: object) -> int:
    """How many jobs `hydra/launcher=gpu-pool` runs at once: `gpus`, or one per visible GPU
    (one at a time on a host without CUDA); more than the host has is an error."""
    import torch

    if gpus is not None and not (isinstance(gpus, int) and not isinstance(gpus, bool)
                                 and gpus >= 1):
        groups.gpus_line("gpus", gpus)
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus is None:
        return max(count, 1)
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
