"""torch.compile and what dynamo did with it. The only module that touches torch._dynamo.

Everything is read from the compiled run itself: dynamo's counters for graphs and graph
breaks, and its `recompiles` log artifact for each recompilation and the guard that failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch
from omegaconf import DictConfig
from torch import nn

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
SCOPES = ("model", "step")
_RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"


def valid_backends() -> list[str]:
    import torch._dynamo

    return sorted(torch._dynamo.list_backends(exclude_tags=()))


def compile_model(model: nn.Module, cfg: DictConfig) -> Callable:
    """`cfg` is the `compiler` group: mode, dynamic, fullgraph, backend."""
    return torch.compile(model, mode=cfg.mode, dynamic=cfg.dynamic,
                         fullgraph=cfg.fullgraph, backend=cfg.backend)


# Under scope=step, gnnbench captures the whole step in one CUDA graph itself, so Inductor
# compiles the parts without its own CUDA graphs (cudagraph trees inside a capture would nest).
_WITHOUT_CUDAGRAPHS = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}


def cuda_graphs(cfg: DictConfig, device: torch.device, batching: str) -> str:
    """Which CUDA graphs a compiled model runs under (`cfg` is the `compiler` group):
    `cudagraph trees` (Inductor's, model scope under a CUDA-graph mode), `whole step`
    (scope=step under such a mode, full batch: gnnbench captures the step itself), or
    `none`. Mini-batches change shape every batch, so a captured step could not be
    replayed there and the compiled parts run without CUDA graphs."""
    if device.type != "cuda" or cfg.mode not in _WITHOUT_CUDAGRAPHS:
        return "none"
    if cfg.scope == "model":
        return "cudagraph trees"
    return "whole step" if batching == "full" else "none"


def reset() -> None:
    """Forget every compiled graph, so that the next compile starts from nothing."""
    import torch._dynamo

    torch._dynamo.reset()


def compile_step_parts(loss_fn: Callable, optimizer: torch.optim.Optimizer,
                       cfg: DictConfig) -> tuple[Callable, Callable]:
    """The parts of `compiler.scope=step`: forward and loss as one graph (no host sync: the
    loss indexes with tensors) and the optimizer step. CUDA graphs, if the mode asks for
    them, come from `CapturedStep` around the whole step, never from Inductor here."""
    # Gradients exist before the first step and are zeroed in place after, so a captured
    # step (and the compiled optimizer's guards) always see the same tensors.
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
    mode = _WITHOUT_CUDAGRAPHS.get(cfg.mode, cfg.mode)
    compiled_loss = torch.compile(loss_fn, mode=mode, dynamic=cfg.dynamic,
                                  fullgraph=cfg.fullgraph, backend=cfg.backend)

    @torch.compile(mode=mode, fullgraph=False, backend=cfg.backend)
    def optimizer_step() -> None:
        optimizer.step()

    return compiled_loss, optimizer_step


class CapturedStep:
    """One training step (forward, loss, backward, optimizer) replayed as one CUDA graph:
    one launch instead of dozens, which is what bounds a small graph's step (Cora's GPU is
    idle ~90 % of an uncaptured step). Every call is one real training step: the first
    `warmup` calls run normally on a side stream (compilation, cuBLAS and autograd set-up
    happen there); the next captures the step and replays it; later calls replay.

    The returned loss is the graph's own output: read it before the next call.
    """

    def __init__(self, step: Callable[[], torch.Tensor], warmup: int = 3) -> None:
        self._step, self._warmup, self._calls = step, warmup, 0
        self._graph: torch.cuda.CUDAGraph | None = None
        self._loss: torch.Tensor | None = None

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
            self._graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self._graph):
                self._loss = self._step()
        self._graph.replay()
        return self._loss


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _recompile_reason(message: str) -> str:
    """Dynamo's message names the function, then one `- <guard failure>` line per guard."""
    guards = [line.strip()[2:] for line in message.splitlines() if line.strip().startswith("- ")]
    return "; ".join(guards) or message.splitlines()[0]


class DynamoRecorder:
    """Resets dynamo's state for one run and collects its graphs, breaks and recompiles.

    Use as a context manager around everything the compiled model runs; `snapshot()`
    may be called inside it (per epoch) and after it.
    """

    def __enter__(self) -> DynamoRecorder:
        from torch._dynamo.utils import counters

        reset()
        counters.clear()
        self._counters = counters
        self._handler = _Collect()
        self._logger = logging.getLogger(_RECOMPILES_LOGGER)
        torch._logging.set_logs(recompiles=True)
        self._logger.addHandler(self._handler)
        self._propagate, self._logger.propagate = self._logger.propagate, False
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self._handler)
        self._logger.propagate = self._propagate
        torch._logging.set_logs()

    def recompiles(self) -> int:
        """Cheap enough to call every epoch (snapshot() builds lists)."""
        return len(self._handler.messages)

    def snapshot(self) -> dict:
        breaks = dict(self._counters["graph_break"])
        recompiles = [_recompile_reason(m) for m in self._handler.messages]
        return {
            "graphs": int(self._counters["stats"]["unique_graphs"]),
            "graph_breaks": int(sum(breaks.values())),
            "graph_break_reasons": [
                {"reason": reason.strip(), "count": int(count)} for reason, count in breaks.items()
            ],
            "recompiles": len(recompiles),
            "recompile_reasons": recompiles,
        }


def classify_failure(exc: BaseException) -> tuple[str, str] | None:
    """(status, one-line reason) for a failure torch.compile caused, else None.

    With fullgraph=True dynamo raises `Unsupported` at the first graph break; failures
    in the backend (Inductor) surface as BackendCompilerFailed or InductorError.
    """
    from torch._dynamo import exc as dynamo_exc

    first_line = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    if isinstance(exc, dynamo_exc.Unsupported):
        return "graph_break", first_line.strip()
    inductor_error: tuple[type, ...] = ()
    try:
        from torch._inductor.exc import InductorError

        inductor_error = (InductorError,)
    except ImportError:
        pass
    # FailOnRecompileLimitHit: with fullgraph=True, more shapes than dynamo's recompile limit
    # (static shapes on varying mini-batches) is a hard failure instead of an eager fallback.
    compiler_errors = (dynamo_exc.TorchDynamoException, dynamo_exc.FailOnRecompileLimitHit,
                       *inductor_error)
    if isinstance(exc, compiler_errors):
        return "compile_error", f"{type(exc).__name__}: {first_line.strip()}"
    return None
