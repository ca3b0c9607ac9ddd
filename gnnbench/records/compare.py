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
    """Pooled over runs: speedup of the compiled steps over the eager runs' steps with a
    bootstrap CI, break-even epochs for the median compile overhead, accuracy delta (mean
    test accuracy at best validation), and peak-memory ratio of the medians. Only ok runs
    are compared; None when either side has none."""
    eager = [r for r in eager if r["status"] == "ok"]
    compiled = [r for r in compiled if r["status"] == "ok"]
    if not eager or not compiled:
        return None
    eager_peak = _median([r["memory"]["peak_bytes"] for r in eager])
    peak = _median([r["memory"]["peak_bytes"] for r in compiled])
    return _against(compiled, [s for r in eager for s in steady_steps(r)],
                    [r["accuracy"]["test_at_best_val"] for r in eager],
                    peak / eager_peak if eager_peak and peak is not None else None,
                    ", ".join(r["name"] for r in eager),
                    [r.get("_dir") for r in eager])


def compare_paired(compiled: list[dict]) -> dict | None:
    """The same, against the eager twins that paired runs trained in their own processes.
    One process holds both models, so their peak memories cannot be told apart."""
    compiled = [r for r in compiled if r["status"] == "ok" and r.get("paired")]
    if not compiled:
        return None
    return _against(compiled, [s for r in compiled for s in steady_steps(r, "eager_")],
                    [r["paired"]["accuracy"]["test_at_best_val"] for r in compiled],
                    None, "paired eager twin", None)


def _against(compiled: list[dict], eager_steps: list[float], eager_accs: list[float],
             memory_ratio: float | None, reference: str,
             reference_dirs: list | None) -> dict:
    steps = [s for r in compiled for s in steady_steps(r)]
    overhead = _median([r["timing"]["compile_overhead_s"] for r in compiled])
    out = speedup(eager_steps, steps, overhead)
    accs = [r["accuracy"]["test_at_best_val"] for r in compiled]
    out["test_acc_delta"] = statistics.fmean(accs) - statistics.fmean(eager_accs)
    out["eager_test_acc"] = statistics.fmean(eager_accs)
    out["memory_ratio"] = memory_ratio
    out["reference"] = reference
    if reference_dirs is not None:
        out["reference_dirs"] = reference_dirs
    return out
