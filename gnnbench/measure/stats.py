"""The statistics every reported number goes through: medians with spread, bootstrap CIs,
and the speedup of one set of runs over another.

A run is a process. Its epochs share the process's clocks, allocator state and placement,
and two processes of the same run differ far more than two epochs of one (the same eager
Cora run: 2.32 and 3.28 ms a step in two processes). So an interval over several runs comes
from a two-level bootstrap (runs, then the epochs of each drawn run; paired runs as pairs),
and an interval from one run a side covers epoch noise only and says so."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

import numpy as np

# A bootstrap of a median from fewer samples than this has too few distinct values to be
# an interval anyone should quote (two epochs a side give three possible medians).
MIN_CI_SAMPLES = 5
# Values drawn per bootstrap side (replicates x runs x epochs) before epochs per run are
# thinned: a report over thousands of runs stays within seconds. Above every committed
# report's largest (570,000: 3 runs of 190 steady epochs), so none of them is thinned.
DRAWS_MAX = 600_000


def summarize(samples: Sequence[float]) -> dict:
    """median, quartiles, IQR, mean, std, min, max and n of a list of seconds. Quartiles by
    linear interpolation between closest ranks (numpy's default)."""
    if not samples:
        return {"n": 0, "median": None, "q1": None, "q3": None, "iqr": None,
                "mean": None, "std": None, "min": None, "max": None}
    values = sorted(samples)
    q1, median, q3 = _quartiles(values)
    return {
        "n": len(values),
        "median": median,
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": values[0],
        "max": values[-1],
    }


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    """q1, median, q3 of sorted `values` (at least one)."""
    if len(values) > 1:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
    return q1, statistics.median(values), q3


def median_iqr(samples: Sequence[float]) -> tuple[int, float | None, float | None]:
    """n, median and IQR as `summarize` gives them, without the exact standard deviation
    (a report row pools every epoch of its runs: tens of thousands over a big sweep)."""
    if not samples:
        return 0, None, None
    q1, median, q3 = _quartiles(sorted(samples))
    return len(samples), median, q3 - q1


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
    """Speedup of one run a side (or of rounds interleaved in one process): `run_speedup`
    with one run each, so its interval covers epoch noise only."""
    return run_speedup([eager_steps], [compiled_steps], compile_overhead_s)


def run_speedup(eager_runs: Sequence[Sequence[float]],
                compiled_runs: Sequence[Sequence[float]],
                compile_overhead_s: float | None, paired: bool = False) -> dict:
    """Speedup = median of the eager runs' pooled steady epochs / the compiled runs' one,
    with the 95 % interval of `ratio_interval` (None when a side has fewer than
    MIN_CI_SAMPLES epochs in all); break-even = compile overhead / time saved per epoch
    (None when compiling saves nothing). `paired`: run i of each side belong together."""
    eager_runs = [list(r) for r in eager_runs if len(r)]
    compiled_runs = [list(r) for r in compiled_runs if len(r)]
    eager = statistics.median(s for r in eager_runs for s in r)
    compiled = statistics.median(s for r in compiled_runs for s in r)
    saved = eager - compiled
    interval = ratio_interval(eager_runs, compiled_runs, paired=paired)
    return {
        "speedup": eager / compiled,
        "speedup_ci95": interval["ci"],
        "interval": {k: v for k, v in interval.items() if k != "ci"},
        "n_eager": sum(map(len, eager_runs)),
        "n_compiled": sum(map(len, compiled_runs)),
        "eager_step_median_s": eager,
        "compiled_step_median_s": compiled,
        "break_even_epochs": (compile_overhead_s / saved
                              if saved > 0 and compile_overhead_s is not None else None),
    }


def measurable(ci: Sequence[float | None] | None) -> bool | None:
    """Whether an interval excludes 1.0 (None without an interval). One that contains it
    reads "no measurable difference", never a speedup."""
    if not ci or ci[0] is None or ci[1] is None:
        return None
    return not (ci[0] <= 1.0 <= ci[1])


def _log_medians(runs: list[np.ndarray], picks: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
    """log median of each replicate's pooled sample. `picks[b]`: the runs replicate b drew
    (one row per replicate); then each drawn run's epochs are drawn again. Every drawn run
    contributes as many draws as the longest run has epochs, so each process weighs the
    same; past DRAWS_MAX values a replicate, fewer (at least 5) per run, which widens the
    within-run part a little and keeps a report over thousands of runs fast."""
    width = max(len(r) for r in runs)
    table = np.zeros((len(runs), width))
    for i, r in enumerate(runs):
        table[i, :len(r)] = r
    lengths = np.array([len(r) for r in runs])
    n = lengths[picks]                                          # [B, R]
    per_run = max(5, min(width, DRAWS_MAX // picks.size))
    # Truncation is floor here (non-negative); flat indices into the table with `take`, and
    # a median that partitions its own copy: the same numbers as fancy indexing, faster.
    draws = (rng.random((*picks.shape, per_run)) * n[..., None]).astype(np.intp)
    draws += (picks * width)[..., None]
    values = table.ravel().take(draws).reshape(len(picks), -1)  # [B, R * draws]
    median = np.median(values, axis=1, overwrite_input=True)
    return np.log(median)


def ratio_interval(reference: Sequence[Sequence[float]], mine: Sequence[Sequence[float]],
                   paired: bool = False, confidence: float = 0.95, resamples: int = 1000,
                   seed: int = 0) -> dict:
    """The interval of median(reference) / median(mine), each pooled over its runs.

    The spread comes from a two-level bootstrap: draw runs with replacement, then the
    epochs of each drawn run (paired runs: draw pairs, the same on both sides). A bootstrap
    of few runs is too narrow twice over: it shrinks the between-run variance by
    (R - 1) / R, and its percentiles ignore that the variance itself is estimated from R
    runs. So the interval is the point estimate ± Student's t quantile (the runs' degrees
    of freedom, Welch's for two independent sides) times the bootstrap standard error of
    the log ratio, corrected by R / (R - 1). A side with one run contributes its epochs'
    noise only: `level` is then "epochs" (within-process), else "runs"."""
    reference = [np.asarray(r, dtype=float) for r in reference if len(r)]
    mine = [np.asarray(r, dtype=float) for r in mine if len(r)]
    enough = min(sum(map(len, reference)), sum(map(len, mine))) >= MIN_CI_SAMPLES
    level = "runs" if min(len(reference), len(mine)) >= 2 else "epochs"
    out = {"ci": [None, None], "level": level, "runs": [len(reference), len(mine)],
           "paired": bool(paired and len(reference) == len(mine) and len(mine) >= 2)}
    if not enough:
        return out
    point = (math.log(np.median(np.concatenate(reference)))
             - math.log(np.median(np.concatenate(mine))))
    rng = np.random.default_rng(seed)
    if out["paired"]:
        picks = rng.integers(0, len(mine), (resamples, len(mine)))
        diff = (_log_medians(reference, picks, rng)
                - _log_medians(mine, picks, rng))
        variance = float(np.var(diff, ddof=1)) * len(mine) / (len(mine) - 1)
        df = float(len(mine) - 1)
    else:
        parts = []
        for runs in (reference, mine):
            if len(runs) >= 2:
                picks = rng.integers(0, len(runs), (resamples, len(runs)))
                v = float(np.var(_log_medians(runs, picks, rng), ddof=1))
                parts.append((v * len(runs) / (len(runs) - 1), len(runs) - 1))
            else:  # one process: its epochs are all there is to resample
                picks = np.zeros((resamples, 1), dtype=int)
                v = float(np.var(_log_medians(runs, picks, rng), ddof=1))
                parts.append((v, max(len(runs[0]) - 1, 1)))
        variance = sum(v for v, _ in parts)
        df = (variance ** 2 / sum(v ** 2 / d for v, d in parts)
              if variance > 0 else math.inf)
    # Student's t quantile, as scipy.stats.t.ppf computes it, without importing scipy.stats
    # (a second or two); imported here, not at the top, for the same reason.
    from scipy.special import stdtrit

    half = float(stdtrit(df, 0.5 + confidence / 2)) * math.sqrt(variance)
    out.update(ci=[math.exp(point - half), math.exp(point + half)], df=df)
    return out


def per_run_ratios(reference: dict[object, Sequence[float]],
                   mine: dict[object, Sequence[float]]) -> list[float]:
    """Each run's own ratio: the median of the reference run with its key (its seed) over
    its median, or, where no reference run has its key, the pooled reference median over
    it. What a reader checks an interval against: seeds at 0.76, 1.04 and 1.17 are not
    1.05 ± 0.03."""
    pooled = statistics.median(s for r in reference.values() for s in r) if reference else None
    out = []
    for key, steps in mine.items():
        if not steps:
            continue
        ref = reference.get(key)
        base = statistics.median(ref) if ref else pooled
        if base is not None:
            out.append(base / statistics.median(steps))
    return out
