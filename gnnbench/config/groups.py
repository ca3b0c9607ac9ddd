"""The run's own config groups, declared once (conf/config.yaml holds their defaults): train,
compiler, graph, wandb and the top-level keys. The model and dataset groups are declared
beside the code they configure (a model's class, a dataset's loader), because a user's own
class brings its own options; here they are open mappings, checked by their registries.

Choices used elsewhere (`PRECISIONS`, `LAYOUTS`, compile `MODES`...) are read from these
declarations, so a new choice is added in one place."""

from __future__ import annotations

import typing
from typing import Annotated, Literal

from pydantic import Field, model_validator

from gnnbench.config.errors import ConfigError, require
from gnnbench.config.settings import Count, Device, Flag, Message, Real, Settings

Batching = Literal["full", "neighbor"]
# How mini-batches of whole graphs reach a compiled model: exact (each batch as it comes),
# mark_dynamic (node and edge dimensions marked dynamic for dynamo), buckets (padded up to a
# short ladder of node and edge counts, training/graph_batches.py).
ShapePolicy = Literal["exact", "mark_dynamic", "buckets"]
Precision = Literal["fp32", "tf32", "bf16"]
Layout = Literal["coo", "csr", "edge_index", "csr-op", "csr-triton"]
Sampler = Literal["auto", "gnnbench", "pyg"]
PrefetchStream = Literal["normal", "high"]
Distributed = Literal["none", "ddp"]
DistBackend = Literal["auto", "nccl", "gloo"]
WandbMode = Literal["auto", "online", "offline", "disabled"]
Mode = Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
# model: torch.compile(model); step: forward+loss and the optimizer step compiled (captured
# as one CUDA graph under a CUDA-graph mode); epoch: the step and the eval forward with the
# epoch's metrics, each compiled (and captured), metrics read with one copy per epoch;
# layers: each convolution compiled on its own (regional compilation: identical layers share
# their compiled code, so compile cost grows with distinct layers, not depth).
Scope = Literal["model", "step", "epoch", "layers", "nested"]
# The compile caches a compiled run starts with: as-is (whatever this process and the
# Inductor cache directory already hold: what runs before the cache axis measured), cold (an
# empty cache directory, in-process caches cleared), warm (the directory a priming run of the
# same setting filled in another process), portable (an empty directory filled only from the
# artifacts a priming run saved with torch.compiler.save_cache_artifacts).
CacheState = Literal["as-is", "cold", "warm", "portable"]

PRECISIONS: tuple[str, ...] = typing.get_args(Precision)
LAYOUTS: tuple[str, ...] = typing.get_args(Layout)
MODES: tuple[str, ...] = typing.get_args(Mode)
SCOPES: tuple[str, ...] = typing.get_args(Scope)
CACHE_STATES: tuple[str, ...] = typing.get_args(CacheState)
SHAPE_POLICIES: tuple[str, ...] = typing.get_args(ShapePolicy)


# Free text that the command line may type as a number (wandb.group=2024).
Text = str | int | float


def gpus_line(key: str, value: object) -> None:
    """`gpus`: null (one job per GPU of this host) or a count."""
    ok = value is None or (isinstance(value, int) and not isinstance(value, bool))
    require(ok, f"{key}={value!r} is not an integer; it must be null (one job per GPU of this "
                "host) or an integer >= 1")
    raise ConfigError(f"{key}={value!r} must be null (one job per GPU of this host) or an "
                      "integer >= 1")


class Train(Settings):
    epochs: Count(1)
    warmup_epochs: Count(0)
    seed: Count(0)
    lr: Real(above=0)
    weight_decay: Real(at_least=0)
    device: Device
    paired: Flag
    precision: Precision
    batching: Batching
    fanouts: list  # one per layer: checked with model.num_layers (validate.py)
    batch_size: Count(1)
    sampler: Sampler
    eval_chunk: Count(1)
    distributed: Distributed
    world_size: Count(1)
    dist_backend: DistBackend
    dist_timeout_s: Real(above=0)
    prefetch: Flag
    # neighbor + prefetch: the priority of the side stream the prefetching thread samples
    # on; "normal" is what every earlier run did (schema version 10).
    prefetch_stream: PrefetchStream = "normal"
    pad_batches: Flag
    shape_policy: ShapePolicy = "exact"

    @model_validator(mode="after")
    def _timed_epochs(self) -> Train:
        require(self.warmup_epochs < self.epochs,
                f"train.warmup_epochs={self.warmup_epochs!r} must be less than "
                f"train.epochs={self.epochs} (the epochs after the warm-up are the ones timed)")
        return self


class Compiler(Settings):
    """Checked whether or not `compile` is true, so a typo never waits for the day it is
    switched on. `backend` is any name torch._dynamo.list_backends() gives: checked by
    training/compilation.py, the only code that asks dynamo."""

    mode: Mode
    dynamic: Flag | None
    fullgraph: Flag
    backend: str
    scope: Scope
    cache: CacheState = "as-is"
    # scope=epoch: how many epochs replay as one unit (one CUDA graph on CUDA), their metrics
    # and best-validation bookkeeping kept on the device and read every this many epochs; 1
    # (what every earlier run did): one epoch a unit, read every epoch.
    capture_epochs: Count(1) = 1


ServeVariant = Literal["eager", "compiled", "reduce-overhead", "padded"]
SERVE_VARIANTS: tuple[str, ...] = typing.get_args(ServeVariant)


class Serve(Settings):
    """`python -m gnnbench.serve` (conf/serve.yaml): a model answering requests for the
    predictions of a batch of seed nodes, each request sampling its own k-hop neighbourhood.
    The rest of a serving config is a run's (`Run`), checked as such."""

    weights: Literal["random", "trained"]
    batch_sizes: list[int]
    variants: list[str]
    requests: Count(5)
    warmup_requests: Count(1)
    open_loop_requests: Count(0)
    rate: Real(above=0) | None
    load: Real(above=0)
    fanouts: list[int] | None
    seed: Count(0)

    @model_validator(mode="after")
    def _lists(self) -> Serve:
        require(bool(self.batch_sizes) and all(
            isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in self.batch_sizes),
            f"serve.batch_sizes={self.batch_sizes} must be a non-empty list of integers >= 1, "
            "e.g. [1, 16, 256, 4096]")
        bad = [v for v in self.variants if v not in SERVE_VARIANTS]
        require(bool(self.variants) and not bad,
                f"serve.variants={(bad or [None])[0]!r} is not valid; choose one of: "
                f"{', '.join(SERVE_VARIANTS)}")
        return self


class Graph(Settings):
    layout: Layout


class Wandb(Settings):
    mode: WandbMode
    project: Text
    entity: Text | None
    group: Text | None
    job_type: Text
    tags: list[Text]
    init_timeout_s: Real(above=0)


class Run(Settings):
    """The whole composed config. `model` and `dataset` are open here: their registries
    check them against the model class's and the loader's own declarations."""

    model: dict
    dataset: dict
    compile: Flag
    compiler: Compiler
    train: Train
    graph: Graph
    capture: Flag
    wandb: Wandb
    data_dir: str
    data_mirror: str | None
    reference_dirs: list[str]
    rerun: Flag
    # How many jobs hydra/launcher=gpu-pool runs at once; null: one per GPU of this host.
    gpus: Annotated[Count(1) | None, Message(gpus_line)] = Field(default=None)
