"""Device-synchronised timers and the statistics we report (median with spread).

A GPU step is timed only between two synchronisations: otherwise we would time the
launch, not the work.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import torch

T = TypeVar("T")


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], T], device: torch.device) -> tuple[T, float]:
    """Run `fn` between two device synchronisations; return its result and seconds."""
    synchronize(device)
    start = time.perf_counter()
    result = fn()
    synchronize(device)
    return result, time.perf_counter() - start


class EpochTimer:
    """Times the regions of one epoch. On CUDA with events around each region and one
    synchronisation when read: a synchronisation between regions would idle the GPU while
    the next region is launched, a cost the user's own loop does not pay. On CPU, wall time.
    Regions with the same name add up (the batches of an epoch). One timer serves every
    epoch of a run: `read()` starts the next epoch, and its events are reused, so timing
    costs two event records per region and no event creation."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        # Events are recorded on this stream, looked up once: `Event.record()` without a
        # stream looks it up on every call, which on an H200 host is 8 µs a record against
        # 3 µs (a small graph's step is host-bound, so this is time the user would see).
        self.stream = torch.cuda.current_stream(device) if self.cuda else None
        self.seconds: dict[str, float] = {}
        self.events: list[tuple[str, torch.cuda.Event, torch.cuda.Event]] = []
        self._pool: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []

    def measure(self, name: str, fn: Callable[[], T]) -> T:
        self.seconds.setdefault(name, 0.0)
        if self.cuda:
            if len(self._pool) == len(self.events):
                self._pool.append((torch.cuda.Event(enable_timing=True),
                                   torch.cuda.Event(enable_timing=True)))
            start, end = self._pool[len(self.events)]
            start.record(self.stream)
            result = fn()
            end.record(self.stream)
            self.events.append((name, start, end))
            return result
        started = time.perf_counter()
        result = fn()
        self.seconds[name] += time.perf_counter() - started
        return result

    def read(self) -> dict[str, float]:
        """Seconds per region since the last read; waits for the last region to end."""
        if self.events:
            self.events[-1][2].synchronize()
            for name, start, end in self.events:
                self.seconds[name] += start.elapsed_time(end) / 1e3
            self.events.clear()
        seconds, self.seconds = self.seconds, {}
        return seconds


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples: Sequence[float]) -> dict:
    """median, quartiles, IQR, mean, std, min, max and n of a list of seconds."""
    if not samples:
        return {"n": 0, "median": None, "q1": None, "q3": None, "iqr": None,
                "mean": None, "std": None, "min": None, "max": None}
    values = sorted(samples)
    q1, q3 = _quantile(values, 0.25), _quantile(values, 0.75)
    return {
        "n": len(values),
        "median": statistics.median(values),
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": values[0],
        "max": values[-1],
    }


def bootstrap_ratio_ci(numerator: Sequence[float], denominator: Sequence[float],
                       confidence: float = 0.95, resamples: int = 2000,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of median(numerator) / median(denominator), e.g. a speedup
    eager_median / compiled_median, resampling each side independently."""
    rng = random.Random(seed)
    ratios = sorted(
        statistics.median(rng.choices(numerator, k=len(numerator)))
        / statistics.median(rng.choices(denominator, k=len(denominator)))
        for _ in range(resamples)
    )
    alpha = (1 - confidence) / 2
    return _quantile(ratios, alpha), _quantile(ratios, 1 - alpha)


def bootstrap_median_ci(samples: Sequence[float], confidence: float = 0.95,
                        resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of a median, for samples that are independent units (e.g.
    one ratio per interleaved round, where a round's epochs share the machine's state)."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(samples, k=len(samples)))
                     for _ in range(resamples))
    alpha = (1 - confidence) / 2
    return _quantile(medians, alpha), _quantile(medians, 1 - alpha)


# A bootstrap of a median from fewer samples than this has too few distinct values to be
# an interval anyone should quote (two epochs a side give three possible medians).
MIN_CI_SAMPLES = 5


def compare(eager_steps: Sequence[float], compiled_steps: Sequence[float],
            compile_overhead_s: float | None) -> dict:
    """Speedup = eager median / compiled median, with a bootstrap 95% CI (None when either
    side has fewer than MIN_CI_SAMPLES epochs); break-even = compile overhead / time saved
    per epoch (None when compiling saves nothing)."""
    eager, compiled = statistics.median(eager_steps), statistics.median(compiled_steps)
    enough = min(len(eager_steps), len(compiled_steps)) >= MIN_CI_SAMPLES
    lo, hi = bootstrap_ratio_ci(eager_steps, compiled_steps) if enough else (None, None)
    saved = eager - compiled
    return {
        "speedup": eager / compiled,
        "speedup_ci95": [lo, hi],
        "n_eager": len(eager_steps),
        "n_compiled": len(compiled_steps),
        "eager_step_median_s": eager,
        "compiled_step_median_s": compiled,
        "break_even_epochs": (compile_overhead_s / saved
                              if saved > 0 and compile_overhead_s is not None else None),
    }
