"""How compiled runs stand against eager runs of the same setting: the one function behind
each run's `comparison` and every row of the report, so both always agree."""

from __future__ import annotations

import statistics

from gnnbench.measure.stats import speedup


def steady_steps(run: dict, prefix: str = "") -> list[float]:
    """The train-step (mini-batch: train-epoch) times after the warm-up; `prefix="eager_"`
    gives a paired run's eager twin."""
    warmup = run["timing"]["warmup_epochs"]
    return [r[f"{prefix}train_s"] for r in run["epochs"][warmup:]]


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def compare(eager: list[dict], compiled: list[dict]) -> dict | None:
    """Pooled over runs: speedup of the compiled steps over the eager steps with a bootstrap
    CI, break-even epochs for the median compile overhead, accuracy delta (mean test accuracy
    at best validation), and peak-memory ratio of the medians. `eager` empty means the
    compiled runs are paired: their in-process eager twins are the reference. Only ok runs
    are compared; None when either side has none."""
    compiled = [r for r in compiled if r["status"] == "ok"]
    paired = not eager
    eager = [r for r in eager if r["status"] == "ok"]
    if not compiled or (not paired and not eager):
        return None
    steps = [s for r in compiled for s in steady_steps(r)]
    overhead = _median([r["timing"]["compile_overhead_s"] for r in compiled])
    if paired:
        eager_steps = [s for r in compiled for s in steady_steps(r, "eager_")]
        eager_accs = [r["paired"]["accuracy"]["test_at_best_val"] for r in compiled]
        # One process holds both models in a paired run: their peaks cannot be told apart.
        memory_ratio = None
        reference = "paired eager twin"
    else:
        eager_steps = [s for r in eager for s in steady_steps(r)]
        eager_accs = [r["accuracy"]["test_at_best_val"] for r in eager]
        eager_peak = _median([r["memory"]["peak_bytes"] for r in eager])
        peak = _median([r["memory"]["peak_bytes"] for r in compiled])
        memory_ratio = peak / eager_peak if eager_peak and peak is not None else None
        reference = ", ".join(r["name"] for r in eager)
    out = speedup(eager_steps, steps, overhead)
    accs = [r["accuracy"]["test_at_best_val"] for r in compiled]
    out["test_acc_delta"] = statistics.fmean(accs) - statistics.fmean(eager_accs)
    out["eager_test_acc"] = statistics.fmean(eager_accs)
    out["memory_ratio"] = memory_ratio
    out["reference"] = reference
    if not paired:
        out["reference_dirs"] = [r.get("_dir") for r in eager]
    return out
