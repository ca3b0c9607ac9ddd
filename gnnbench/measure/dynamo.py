"""What dynamo and Inductor did in one run, read from the run itself: graphs and graph
breaks from dynamo's counters, where each break happened (the user's file and line) from
its `graph_breaks` log, each recompilation and the guard that failed from its `recompiles`
log, and whether Inductor recorded or skipped CUDA graphs (and why).

Counters are process-global and cumulative, so a run's figures are the difference between
their values after and before it (a sweep runs many jobs in one process). Together with
training/compilation.py, the only code that touches torch._dynamo and torch._inductor.
"""

from __future__ import annotations

import copy
import logging
import re
from collections import Counter

import torch

from gnnbench.config import first_line
from gnnbench.measure import sites

_RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"
_GRAPH_BREAKS_LOGGER = "torch._dynamo.symbolic_convert.__graph_breaks"
_CUDAGRAPHS_LOGGER = "torch._inductor.cudagraph_utils.__cudagraphs"
# Dynamo's DDP optimizer (a compiled DistributedDataParallel model) logs, at INFO, how many
# gradient buckets, hence subgraphs, it split each graph into.
_DDP_LOGGER = "torch._dynamo.backends.distributed"
# Dynamo warns here when a function reached its recompile limit (then runs it eagerly, or,
# with fullgraph=True, raises FailOnRecompileLimitHit right after).
_CONVERT_FRAME_LOGGER = "torch._dynamo.convert_frame"
_LIMIT_HIT = re.compile(r"hit config\.(recompile_limit|cache_size_limit|"
                        r"accumulated_recompile_limit)")
_DDP_BUCKETS = re.compile(r"DDPOptimizer used bucket cap (\d+) and created (\d+) buckets")


def reset() -> None:
    """Forget every compiled graph (and Inductor's CUDA-graph trees), so that the next
    compile starts from nothing."""
    import torch._dynamo

    torch._dynamo.reset()


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


def _diff(after: Counter, before: Counter) -> dict[str, int]:
    return {k: int(v - before.get(k, 0)) for k, v in after.items() if v - before.get(k, 0)}


def recorded_cudagraph_trees(device: torch.device) -> int | None:
    """How many CUDA graphs Inductor's cudagraph trees recorded on `device` since the last
    reset (None where that cannot be read: no CUDA, or Inductor's internals changed)."""
    if device.type != "cuda":
        return 0
    try:
        from torch._inductor import cudagraph_trees

        manager = cudagraph_trees.get_manager(device.index or 0, create_if_none_exists=False)
        if manager is None:
            return 0
        count, stack = 0, list(manager.get_roots())
        while stack:
            node = stack.pop()
            count += 1
            stack.extend(child for children in node.children.values() for child in children)
        return count
    except Exception:  # a private API: an unreadable count is unknown, not zero
        return None


class DynamoRecorder:
    """Resets dynamo's state for one run and collects its graphs, breaks, recompiles and
    CUDA-graph skips. Use as a context manager around everything the compiled model runs;
    `snapshot()` may be called inside it (per epoch) and after it."""

    def __enter__(self) -> DynamoRecorder:
        from torch._dynamo.utils import counters

        reset()
        from torch._dynamo.utils import clear_compilation_metrics

        clear_compilation_metrics()  # this run's compiles only (compile_times)
        try:  # dynamo logs a break's stack once per process; each run wants its own
            from torch._dynamo.utils import reset_graph_break_dup_checker

            reset_graph_break_dup_checker()
        except ImportError:
            pass
        self._counters = counters
        self._before = {group: Counter(copy.deepcopy(dict(counters[group])))
                        for group in ("stats", "graph_break", "inductor", "aot_autograd")}
        self._handlers = {}
        self._saved = {}
        # Recompiles must be switched on to be logged; Inductor's CUDA-graph skips are
        # warnings, logged anyway: only collected here (switching the `cudagraphs` artifact on
        # would also print every recording of a cudagraph tree).
        torch._logging.set_logs(recompiles=True, graph_breaks=True)
        for name in (_RECOMPILES_LOGGER, _GRAPH_BREAKS_LOGGER, _CUDAGRAPHS_LOGGER, _DDP_LOGGER):
            logger = logging.getLogger(name)
            handler = _Collect()
            self._handlers[name] = handler
            # Collected here, not printed: the run's record holds them.
            self._saved[name] = (logger.propagate, logger.level, logger.handlers[:])
            logger.propagate = False
            logger.handlers = [*(logger.handlers if name not in (_DDP_LOGGER, _GRAPH_BREAKS_LOGGER)
                                 else []), handler]
        logging.getLogger(_DDP_LOGGER).setLevel(logging.INFO)
        # Listened to, not silenced: the warning still reaches the console and the log.
        self._limit = _Collect()
        logging.getLogger(_CONVERT_FRAME_LOGGER).addHandler(self._limit)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger(_CONVERT_FRAME_LOGGER).removeHandler(self._limit)
        for name in self._handlers:
            logger = logging.getLogger(name)
            logger.propagate, level, logger.handlers = self._saved[name]
            logger.setLevel(level)
        torch._logging.set_logs()

    def recompiles(self) -> int:
        """Cheap enough to call every epoch (snapshot() builds lists)."""
        return len(self._handlers[_RECOMPILES_LOGGER].messages)

    def recompile_limit_hits(self) -> list[str]:
        """Each time a function reached dynamo's recompile limit: dynamo's first two lines
        (which limit, which function) and the last guard that failed."""
        hits = []
        for message in self._limit.messages:
            if _LIMIT_HIT.search(message):
                lines = [line.strip() for line in message.splitlines() if line.strip()]
                hits.append("; ".join(lines[:3]))
        return hits

    def _group(self, group: str) -> dict[str, int]:
        return _diff(Counter(dict(self._counters[group])), self._before[group])

    def ddp_split(self) -> dict | None:
        """A compiled DDP model: each graph dynamo compiled and the number of subgraphs the
        DDP optimizer split it into at bucket boundaries (gradients of one bucket are
        all-reduced while the backward of the next subgraph runs). None otherwise."""
        found = [_DDP_BUCKETS.search(m) for m in self._handlers[_DDP_LOGGER].messages]
        found = [m for m in found if m]
        if not found:
            return None
        return {"bucket_cap_bytes": int(found[0].group(1)),
                "subgraphs_per_graph": [int(m.group(2)) for m in found]}

    def snapshot(self) -> dict:
        breaks = self._group("graph_break")
        recompiles = [_recompile_reason(m) for m in self._handlers[_RECOMPILES_LOGGER].messages]
        split = self.ddp_split()
        return {
            **({"ddp_split": split} if split else {}),
            "graphs": int(self._group("stats").get("unique_graphs", 0)),
            "graph_breaks": int(sum(breaks.values())),
            "graph_break_reasons": [
                {"reason": reason.strip(), "count": int(count)} for reason, count in breaks.items()
            ],
            # Where: each place and reason once, with the user's frame and dynamo's text.
            "graph_break_sites": self.graph_break_sites(),
            "recompiles": len(recompiles),
            "recompile_reasons": recompiles,
            "recompile_sites": [site for m, r in zip(self._handlers[_RECOMPILES_LOGGER].messages,
                                                     recompiles, strict=True)
                                if (site := sites.recompile(m, r)) is not None],
            "cache": self.cache(),
            "times": self.compile_times(),
        }

    def compile_times(self) -> dict:
        """Where this run's compile time went, from dynamo's own per-compile metrics (one
        entry per compiled frame, cumulative times nested: dynamo ⊃ AOTAutograd ⊃ Inductor
        ⊃ kernel compilation): `total_s` (every compile, end to end), `dynamo_s` (bytecode
        tracing and guards), `aot_inductor_s` (AOTAutograd's joint graph and Inductor's
        lowering and code generation, or the load of a cached graph), `kernel_compile_s`
        (Triton kernels on a GPU, C++ kernels on a CPU), `autotune_s`, and `inductor_s`
        (Inductor proper: 0 when every graph came from the cache). Seconds."""
        from torch._dynamo.utils import get_compilation_metrics

        metrics = get_compilation_metrics()

        def total(field: str) -> float:
            return sum((getattr(m, field, None) or 0) for m in metrics) / 1e6

        whole, aot = total("dynamo_cumulative_compile_time_us"), \
            total("aot_autograd_cumulative_compile_time_us")
        kernels = total("triton_compile_time_us")
        autotune = total("compile_time_autotune_time_us") + \
            total("runtime_triton_autotune_time_us")
        return {"frames": len(metrics), "total_s": whole, "dynamo_s": max(whole - aot, 0.0),
                "aot_inductor_s": max(aot - kernels, 0.0), "kernel_compile_s": kernels,
                "autotune_s": autotune, "inductor_s": total("inductor_cumulative_compile_time_us"),
                "cache_saved_s": sum((m.remote_cache_time_saved_s or 0) for m in metrics)}

    def graph_break_sites(self) -> list[dict]:
        found = [sites.graph_break(m) for m in self._handlers[_GRAPH_BREAKS_LOGGER].messages]
        return sites.merge([s for s in found if s is not None])

    def cache(self) -> dict:
        """Lookups in the compile caches (Inductor's FX-graph cache and AOTAutograd's): all
        misses is a cold start, all hits a warm one; what a compile cost depends on it."""
        inductor, aot = self._group("inductor"), self._group("aot_autograd")
        fx_hits = inductor.get("fxgraph_cache_hit", 0)
        fx_misses = inductor.get("fxgraph_cache_miss", 0)
        aot_hits = aot.get("autograd_cache_hit", 0)
        aot_misses = aot.get("autograd_cache_miss", 0)
        out = dict(fxgraph_hits=fx_hits, fxgraph_misses=fx_misses, aot_autograd_hits=aot_hits,
                   aot_autograd_misses=aot_misses, hits=fx_hits + aot_hits,
                   misses=fx_misses + aot_misses)
        return {k: int(v) for k, v in out.items()}

    def cudagraph_skips(self) -> tuple[int, list[str]]:
        """Inductor's own count of graphs it compiled without CUDA graphs though the mode asked
        for them, and the reasons it logged (it logs none for graphs without CUDA tensors)."""
        skips = self._group("inductor").get("cudagraph_skips", 0)
        reasons = [m for m in self._handlers[_CUDAGRAPHS_LOGGER].messages if "skipping" in m]
        return int(skips), sorted(set(reasons))


def classify_failure(exc: BaseException) -> tuple[str, str] | None:
    """(status, one-line reason) for a failure torch.compile caused, else None.

    With fullgraph=True dynamo raises `Unsupported` at the first graph break; failures
    in the backend (Inductor) surface as BackendCompilerFailed or InductorError.
    """
    from torch._dynamo import exc as dynamo_exc

    first = first_line(exc, limit=10_000)
    if isinstance(exc, dynamo_exc.Unsupported):
        site = sites.from_exception(exc)
        return "graph_break", f"{site['reason']} at {sites.where(site)}"
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
        # BackendCompilerFailed's own first line is "backend='inductor' raised:": the cause
        # is the exception it wraps.
        inner = getattr(exc, "inner_exception", None)
        if inner is not None:
            cause = next((line for line in str(inner).splitlines() if line.strip()), "")
            return "compile_error", (f"{type(exc).__name__} ({first}) "
                                     f"{type(inner).__name__}: {cause.strip()}")
        if isinstance(exc, dynamo_exc.FailOnRecompileLimitHit):
            return "compile_error", (f"{type(exc).__name__}: more input shapes than dynamo's "
                                     "recompile limit with fullgraph=True (shapes.recompile_"
                                     f"limit_hits has which function and guard): {first}")
        return "compile_error", f"{type(exc).__name__}: {first}"
    return None


def graph_break_site(exc: BaseException) -> dict | None:
    """A graph break that failed a fullgraph=True run: the user's file and line, the
    frames dynamo traced, and dynamo's explanation (None for any other failure)."""
    from torch._dynamo import exc as dynamo_exc

    if not isinstance(exc, dynamo_exc.Unsupported):
        return None
    return sites.from_exception(exc)
