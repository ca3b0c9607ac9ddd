"""How compiled runs stand against eager runs of the same setting: the one function behind
each run's `comparison` and every row of the report, so both always agree.

Three speedups, each from the epochs after the warm-up: the train step (mini-batch: the
train part of an epoch), inference (the eval forward), and the whole epoch as a user's loop
sees it (`epoch_wall_s`: train, eval, metric reads and the runner's bookkeeping)."""

from __future__ import annotations

import statistics

from gnnbench.measure.stats import speedup
from gnnbench.records import identity

MEASURES = {"train": "train_s", "inference": "eval_s", "epoch": "epoch_wall_s"}


def steady(run: dict, key: str = "train_s", prefix: str = "") -> list[float]:
    """`key` of every epoch after the warm-up; `prefix="eager_"` reads a paired run's twin."""
    warmup = run["timing"]["warmup_epochs"]
    return [r[f"{prefix}{key}"] for r in run["epochs"][warmup:] if f"{prefix}{key}" in r]


def steady_steps(run: dict, prefix: str = "") -> list[float]:
    """The train-step (mini-batch: train-epoch) times after the warm-up."""
    return steady(run, "train_s", prefix)


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _pooled(runs: list[dict], key: str, prefix: str = "") -> list[float]:
    return [s for r in runs for s in steady(r, key, prefix)]


def compare(eager: list[dict], compiled: list[dict]) -> dict | None:
    """Pooled over runs: the three speedups of the compiled runs over the eager runs with
    bootstrap CIs, break-even epochs for the median compile overhead, accuracy delta (mean
    test accuracy at best validation), and peak-memory ratio of the medians. Only ok runs
    are compared; None when either side has none."""
    eager = [r for r in eager if r["status"] == "ok"]
    compiled = [r for r in compiled if r["status"] == "ok"]
    if not eager or not compiled:
        return None
    eager_peak = _median([r["memory"]["peak_bytes"] for r in eager])
    peak = _median([r["memory"]["peak_bytes"] for r in compiled])
    reference = {m: _pooled(eager, key) for m, key in MEASURES.items()}
    return _against(compiled, reference,
                    [r["accuracy"]["test_at_best_val"] for r in eager],
                    peak / eager_peak if eager_peak and peak is not None else None,
                    ", ".join(r["name"] for r in eager),
                    [r.get("_dir") for r in eager])


def compare_paired(compiled: list[dict]) -> dict | None:
    """The same, against the eager twins that paired runs trained in their own processes.
    One process holds both models, so their peak memories cannot be told apart, and an
    epoch holds both models' work, so there is no whole-epoch speedup."""
    compiled = [r for r in compiled if r["status"] == "ok" and r.get("paired")]
    if not compiled:
        return None
    reference = {"train": _pooled(compiled, "train_s", "eager_"),
                 "inference": _pooled(compiled, "eval_s", "eager_"), "epoch": []}
    return _against(compiled, reference,
                    [r["paired"]["accuracy"]["test_at_best_val"] for r in compiled],
                    None, "paired eager twin", None)


def _against(compiled: list[dict], reference: dict[str, list[float]],
             eager_accs: list[float], memory_ratio: float | None, name: str,
             reference_dirs: list | None) -> dict:
    overhead = _median([r["timing"]["compile_overhead_s"] for r in compiled])
    out = speedup(reference["train"], _pooled(compiled, "train_s"), overhead)
    for measure in ("inference", "epoch"):
        mine = _pooled(compiled, MEASURES[measure])
        out[measure] = (speedup(reference[measure], mine, overhead)
                        if reference[measure] and mine else None)
    accs = [r["accuracy"]["test_at_best_val"] for r in compiled]
    out["test_acc_delta"] = statistics.fmean(accs) - statistics.fmean(eager_accs)
    out["eager_test_acc"] = statistics.fmean(eager_accs)
    out["memory_ratio"] = memory_ratio
    out["reference"] = name
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
