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


def compile_step_parts(loss_fn: Callable, optimizer: torch.optim.Optimizer,
                       cfg: DictConfig) -> tuple[Callable, Callable]:
    """The whole training step, for `compiler.scope=step`: forward and loss in one graph
    (no host sync: the loss indexes with tensors), and the optimizer step compiled too, so
    that under `reduce-overhead` both replay as CUDA graphs and only backward's launches
    stay eager. The optimizer must be `capturable` on CUDA."""
    # Gradients exist before the first backward (and are zeroed in place after): otherwise
    # that backward hands CUDA-graph outputs to .grad, which the next replay overwrites.
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
    compiled_loss = torch.compile(loss_fn, mode=cfg.mode, dynamic=cfg.dynamic,
                                  fullgraph=cfg.fullgraph, backend=cfg.backend)

    def loss_of_step(*args: object) -> torch.Tensor:
        # A new step: CUDA-graph outputs of the last one may be overwritten from here on.
        torch.compiler.cudagraph_mark_step_begin()
        return compiled_loss(*args)

    @torch.compile(mode=cfg.mode, fullgraph=False, backend=cfg.backend)
    def optimizer_step() -> None:
        optimizer.step()

    return loss_of_step, optimizer_step


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
        import torch._dynamo
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
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
