"""How compiled runs stand against eager runs of the same setting: the one function behind
each run's `comparison` and every row of the report, so both always agree."""

from __future__ import annotations

import statistics

from gnnbench.measure.stats import speedup
from gnnbench.records import identity


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


def train_nodes(run: dict) -> int | None:
    """The training nodes an epoch covers (all ranks together)."""
    return ((run.get("dataset") or {}).get("split_sizes") or {}).get("train")


def compare_scaling(single: list[dict], multi: list[dict]) -> dict | None:
    """How runs on N ranks (GPUs) stand against the same setting and variant on one: speedup
    of the epoch (one rank's median / N ranks' median, bootstrap 95 % CI), throughput in
    training nodes per second, and scaling efficiency = speedup / N (1.0 is perfect).
    Pooled over runs; None when either side has no ok run."""
    single = [r for r in single if r["status"] == "ok"]
    multi = [r for r in multi if r["status"] == "ok"]
    if not single or not multi:
        return None
    world = identity.world_size(multi[0]["config"])
    out = speedup([s for r in single for s in steady_steps(r)],
                  [s for r in multi for s in steady_steps(r)], None)
    nodes = train_nodes(multi[0])
    low, high = out["speedup_ci95"]
    return {
        "world_size": world,
        "speedup": out["speedup"],
        "speedup_ci95": out["speedup_ci95"],
        "efficiency": out["speedup"] / world,
        "efficiency_ci95": [low / world if low is not None else None,
                            high / world if high is not None else None],
        "epoch_median_s": out["compiled_step_median_s"],
        "single_epoch_median_s": out["eager_step_median_s"],
        "throughput_nodes_per_s": nodes / out["compiled_step_median_s"] if nodes else None,
        "single_throughput_nodes_per_s": (nodes / out["eager_step_median_s"]
                                          if nodes else None),
        "reference": ", ".join(r["name"] for r in single),
        "reference_dirs": [r.get("_dir") for r in single],
        "reference_world_size": identity.world_size(single[0]["config"]),
    }
