"""The statistics every reported number goes through: medians with spread, bootstrap CIs,
and the speedup of one set of step times over another."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

# A bootstrap of a median from fewer samples than this has too few distinct values to be
# an interval anyone should quote (two epochs a side give three possible medians).
MIN_CI_SAMPLES = 5


def summarize(samples: Sequence[float]) -> dict:
    """median, quartiles, IQR, mean, std, min, max and n of a list of seconds. Quartiles by
    linear interpolation between closest ranks (numpy's default)."""
    if not samples:
        return {"n": 0, "median": None, "q1": None, "q3": None, "iqr": None,
                "mean": None, "std": None, "min": None, "max": None}
    values = sorted(samples)
    if len(values) > 1:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
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


def _interval(values: list[float], confidence: float) -> tuple[float, float]:
    """The central `confidence` share of `values` (percentile interval)."""
    tail = (1 - confidence) / 2
    cuts = round(1 / tail)
    if abs(cuts * tail - 1) > 1e-9:
        raise ValueError(f"confidence={confidence} needs tails of 1/n; try 0.9, 0.95 or 0.99")
    points = statistics.quantiles(values, n=cuts, method="inclusive")
    return points[0], points[-1]


def bootstrap_ratio_ci(numerator: Sequence[float], denominator: Sequence[float],
                       confidence: float = 0.95, resamples: int = 2000,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of median(numerator) / median(denominator), e.g. a speedup
    eager_median / compiled_median, resampling each side independently."""
    rng = random.Random(seed)
    ratios = [
        statistics.median(rng.choices(numerator, k=len(numerator)))
        / statistics.median(rng.choices(denominator, k=len(denominator)))
        for _ in range(resamples)
    ]
    return _interval(ratios, confidence)


def bootstrap_median_ci(samples: Sequence[float], confidence: float = 0.95,
                        resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of a median, for samples that are independent units (e.g.
    one ratio per interleaved round, where a round's epochs share the machine's state)."""
    rng = random.Random(seed)
    medians = [statistics.median(rng.choices(samples, k=len(samples)))
               for _ in range(resamples)]
    return _interval(medians, confidence)


def speedup(eager_steps: Sequence[float], compiled_steps: Sequence[float],
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
