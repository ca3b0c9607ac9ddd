"""How a model or a whole training step is compiled, and the CUDA graphs it may run under.
With measure/dynamo.py, the only code that touches torch._dynamo."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

import torch
from omegaconf import DictConfig
from torch import nn

from gnnbench.config import require

# Under scope=step, gnnbench captures the whole step in one CUDA graph itself, so Inductor
# compiles the parts without its own CUDA graphs (cudagraph trees inside a capture would nest).
_WITHOUT_CUDAGRAPHS = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}


DEFAULT_BACKEND = "inductor"


def backends(include_internal: bool = False) -> list[str]:
    """The backends torch.compile accepts; by default without dynamo's debug and
    experimental ones (such as `relu_compile_error_TESTING_ONLY`)."""
    import torch._dynamo

    if include_internal:
        return sorted(torch._dynamo.list_backends(exclude_tags=()))
    return sorted(torch._dynamo.list_backends())


def validate(cfg: DictConfig) -> None:
    """`cfg` is the `compiler` group, whose keys are declared in config/groups.py; what the
    declaration cannot say is which backends this torch has (checked whether or not
    `compile` is true, so a typo never waits for the day it is switched on). Every torch
    registers its default backend, so only another one is looked up: listing them imports
    every backend module (about a second, on every run)."""
    if cfg.backend == DEFAULT_BACKEND:
        return
    require(cfg.backend in backends(include_internal=True),
            f"compiler.backend={cfg.backend!r} is not valid; choose one of: "
            f"{', '.join(backends())}")


# What dynamo reports when it meets DistributedDataParallel's own forward (its logger, and
# the context under which it runs the wrapped model): DDP's Python code stays outside the
# graphs by design, and the model inside is compiled as its own graph, which dynamo's DDP
# optimizer splits at gradient-bucket boundaries.
_DDP_BREAKS = ("DistributedDataParallel", "set_runtime_stats_and_log")


def expected_graph_breaks(compile_record: dict, cfg: DictConfig,
                          ddp: bool = False) -> tuple[int, str | None]:
    """Graph breaks a setting causes by design, and why. Under scope=step (and epoch) the
    optimizer step is compiled with fullgraph=False and torch.optim calls
    `torch._dynamo.graph_break()` itself; dynamo's hint to remove that call is not meant for
    the user. A compiled DDP model (`ddp`) breaks around DDP's own forward."""
    reasons = compile_record["graph_break_reasons"]
    if ddp:
        count = sum(r["count"] for r in reasons if any(m in r["reason"] for m in _DDP_BREAKS))
        return count, ("DistributedDataParallel's own forward, which runs outside the "
                       "compiled graphs" if count else None)
    if cfg.scope not in ("step", "epoch"):
        return 0, None
    count = sum(r["count"] for r in reasons if "graph_break()" in r["reason"])
    why = ("torch.optim's own graph_break() calls in the compiled optimizer step"
           if count else None)
    return count, why


def compile_model(model: nn.Module, cfg: DictConfig) -> Callable:
    """`cfg` is the `compiler` group: mode, dynamic, fullgraph, backend."""
    return torch.compile(model, mode=cfg.mode, dynamic=cfg.dynamic,
                         fullgraph=cfg.fullgraph, backend=cfg.backend)


def compile_layers(model: nn.Module, cfg: DictConfig) -> int:
    """`compiler.scope=layers`: each convolution of a gnnbench model compiled on its own, in
    place (`nn.Module.compile`), so everything that calls the layer (the forward, layer-wise
    inference) runs it compiled and the model stays the model (its state, its eager twin).
    Dynamo keys compiled code by the layer's code and guards; parameters are graph inputs,
    so layers of one class and shape share one compiled graph: compile cost grows with the
    distinct layers (first, middle, last), not with depth. Batch norm, activation and
    dropout between layers stay eager. Returns how many layers were compiled."""
    convs = list(getattr(model, "convs", ()))
    for conv in convs:
        conv.compile(mode=cfg.mode, dynamic=cfg.dynamic, fullgraph=cfg.fullgraph,
                     backend=cfg.backend)
    return len(convs)


@functools.cache
def _region_class(cls: type) -> type:
    """A subclass of the layer class `cls` whose forward is one nested compile region. Marked
    on a class, as PyTorch documents it: a region marked on a bound method (`conv.forward =
    nested_compile_region(conv.forward)`) was reused with the first layer's weights for
    every layer on torch 2.13 (outputs off by 100 on an 8-layer SAGE), a wrong number no
    error reports. One subclass per layer class, so every layer of that class shares it."""
    region = torch.compiler.nested_compile_region

    class Region(cls):
        @region
        def forward(self, *args, **kwargs):
            return super().forward(*args, **kwargs)

    Region.__name__ = Region.__qualname__ = f"{cls.__name__}Region"
    return Region


def has_nested_regions() -> bool:
    """Whether this torch has torch.compiler.nested_compile_region (2.8 and later)."""
    return hasattr(torch.compiler, "nested_compile_region")


def compile_nested(model: nn.Module, cfg: DictConfig) -> tuple[Callable, int]:
    """`compiler.scope=nested`: the whole model compiled as one graph, each convolution
    marked a nested compile region (hierarchical compilation): dynamo traces a layer class
    once and stamps its compiled code out for every layer of that class and shape, so the
    compile cost grows with the distinct layers while the steady step stays one graph
    (unlike scope=layers, whose layers are separate graphs with eager code between them).
    The layers' class is swapped for a marked subclass in place. Returns the compiled model
    and how many layers were marked."""
    convs = list(getattr(model, "convs", ()))
    for conv in convs:
        conv.__class__ = _region_class(type(conv))
    return compile_model(model, cfg), len(convs)


def requested_cuda_graphs(cfg: DictConfig, device: torch.device, batching: str) -> str:
    """Which CUDA graphs a compiled setting asks for (`cfg` is the `compiler` group):
    `cudagraph trees` (Inductor's, model scope under a CUDA-graph mode), `whole step`
    (scope=step under such a mode, full batch: gnnbench captures the step itself), `whole
    epoch` (scope=epoch: the step and the eval with its metrics, two captured graphs; with
    compiler.capture_epochs=K > 1, K epochs of both in one), or `none`. Mini-batches
    change shape every batch, so a captured step could not be replayed there and the
    compiled parts run without CUDA graphs. What a run actually got is observed
    separately (Inductor's counters, `CapturedStep.captured`)."""
    if device.type != "cuda" or cfg.mode not in _WITHOUT_CUDAGRAPHS:
        return "none"
    if cfg.scope in ("model", "layers", "nested"):
        return "cudagraph trees"
    if batching != "full":
        return "none"
    return "whole epoch" if cfg.scope == "epoch" else "whole step"


def mark_dynamic(*dims: tuple[torch.Tensor | None, int]) -> None:
    """train.shape_policy=mark_dynamic: each (tensor, dim) marked dynamic for dynamo, so the
    first compile already has a symbolic size there (honoured under dynamic=False too)."""
    import torch._dynamo

    for tensor, dim in dims:
        if tensor is not None:
            torch._dynamo.mark_dynamic(tensor, dim)


def recompile_limit() -> int | None:
    """Dynamo's limit of compiled versions per function (8 by default)."""
    import torch._dynamo

    config = torch._dynamo.config
    return getattr(config, "recompile_limit", getattr(config, "cache_size_limit", None))


@contextlib.contextmanager
def recompile_limit_at_least(limit: int | None) -> Iterator[None]:
    """Dynamo's recompile limit raised to `limit` for a run whose shapes are bounded by
    construction (a ladder of static bucket shapes: one compile per rung, train and eval);
    unchanged for None or a limit already as high. The default limit (8) guards against
    shapes that never stop coming; a ladder cannot do that, and stopping a static run at
    its ninth rung would measure dynamo's default, not the strategy."""
    current = recompile_limit()
    if limit is None or current is None or current >= limit:
        yield
        return
    import torch._dynamo

    name = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") \
        else "cache_size_limit"
    with torch._dynamo.config.patch(**{name: limit}):
        yield


def allocate_grads(optimizer: torch.optim.Optimizer) -> None:
    """Gradients exist before the first step and are zeroed in place after, so a captured
    step (and a compiled optimizer's guards) always see the same tensors."""
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)


def compile_function(fn: Callable, cfg: DictConfig) -> Callable:
    """A function of a whole-step or whole-epoch scope, compiled without Inductor's own CUDA
    graphs (gnnbench captures the scope itself: cudagraph trees inside would nest)."""
    return torch.compile(fn, mode=_WITHOUT_CUDAGRAPHS.get(cfg.mode, cfg.mode),
                         dynamic=cfg.dynamic, fullgraph=cfg.fullgraph, backend=cfg.backend)


def compile_step_parts(loss_fn: Callable, optimizer: torch.optim.Optimizer,
                       cfg: DictConfig) -> tuple[Callable, Callable]:
    """The parts of `compiler.scope=step`: forward and loss as one graph (no host sync: the
    loss indexes with tensors) and the optimizer step. CUDA graphs, if the mode asks for
    them, come from `CapturedStep` around the whole step, never from Inductor here."""
    allocate_grads(optimizer)
    mode = _WITHOUT_CUDAGRAPHS.get(cfg.mode, cfg.mode)
    compiled_loss = compile_function(loss_fn, cfg)

    @torch.compile(mode=mode, fullgraph=False, backend=cfg.backend)
    def optimizer_step() -> None:
        optimizer.step()

    return compiled_loss, optimizer_step


class CapturedStep:
    """One training step (forward, loss, backward, optimizer) replayed as one CUDA graph:
    one launch instead of dozens, which is what bounds a small graph's step (Cora's GPU is
    idle ~90 % of an uncaptured step). Every call is one real training step: the first
    `warmup` calls run normally on a side stream (compilation, cuBLAS and autograd set-up
    happen there); the next captures the step and replays it; later calls replay. The
    "step" may be a group of whole epochs (training/epoch_groups.py): each call is then one
    real group, and `warmup` counts groups.

    The returned loss is the graph's own output: read it before the next call.
    """

    def __init__(self, step: Callable[[], torch.Tensor], warmup: int = 3) -> None:
        self._step, self._warmup, self._calls = step, warmup, 0
        self._graph: torch.cuda.CUDAGraph | None = None
        self._loss: torch.Tensor | None = None

    @property
    def captured(self) -> bool:
        """Whether the step really runs as a captured graph (observed, not configured)."""
        return self._graph is not None

    def __call__(self) -> torch.Tensor:
        if self._graph is None and self._calls < self._warmup:
            self._calls += 1
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                loss = self._step()
            torch.cuda.current_stream().wait_stream(side)
            return loss
        if self._graph is None:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self._loss = self._step()
            self._graph = graph
        self._graph.replay()
        return self._loss
