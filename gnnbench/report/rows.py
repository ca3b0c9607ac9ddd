"""The comparison table over a set of records: one row per (setting, variant), compiled rows
against the eager runs of the same setting, from records alone (so the table is the same
whichever launcher, host or order produced them)."""

from __future__ import annotations

import statistics

from gnnbench.config import variant_label
from gnnbench.measure.stats import summarize
from gnnbench.records import identity
from gnnbench.records.compare import compare, steady_steps

COLUMNS = ["model", "dataset", "variant", "runs", "status", "steady_epochs", "epoch_ms",
           "epoch_ms_iqr",
           "run_median_ms_min", "run_median_ms_max", "speedup", "speedup_ci_low",
           "speedup_ci_high", "compile_overhead_s", "compile_overhead_max_s",
           "break_even_epochs", "graph_breaks",
           "recompiles", "cuda_graphs", "cudagraph_skips", "memory_ratio", "test_acc_mean",
           "test_acc_std", "test_acc_delta", "reason"]


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def cuda_graphs_cell(runs: list[dict]) -> tuple[str, int | None]:
    """What CUDA graphs the runs ran under, and Inductor's skips. Records before schema 2
    wrote what the setting asked for, not what was observed: they say so."""
    kinds = sorted({r.get("cuda_graphs") or "none" for r in runs})
    audits = [r.get("cuda_graph_audit") for r in runs]
    label = ", ".join(kinds)
    if any(a is None for a in audits) and any(r["config"]["compile"] for r in runs):
        return f"{label} (not observed)", None
    observed = [a for a in audits if a]
    return label, sum(a["inductor_skips"] for a in observed) if observed else None


def build_rows(runs: list[dict]) -> list[dict]:
    """One row per (setting, variant); skipped jobs (repeats of an eager run) are left out."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        if run["status"] == "skipped":
            continue
        key = (identity.record_setting_key(run), variant_label(run["config"]))
        groups.setdefault(key, []).append(run)

    def order(item: tuple) -> tuple:
        (setting, variant), members = item
        cfg = members[0]["config"]
        return cfg["model"]["name"], cfg["dataset"]["name"], setting, variant != "eager", variant

    rows = []
    for (setting, variant), members in sorted(groups.items(), key=order):
        cfg = members[0]["config"]
        ok = [r for r in members if r["status"] == "ok"]
        failed = [r for r in members if r["status"] != "ok"]
        row = {c: None for c in COLUMNS}
        row.update(model=cfg["model"]["name"], dataset=cfg["dataset"]["name"], variant=variant,
                   runs=f"{len(ok)}/{len(members)} ok",
                   status="ok" if not failed else failed[0]["status"],
                   reason=failed[0]["reason"] if failed else None)
        rows.append(row)
        if not ok:
            continue
        stats = summarize([s for r in ok for s in steady_steps(r)])
        medians = [r["timing"]["train_step_s"]["median"] for r in ok]
        row.update(steady_epochs=stats["n"], epoch_ms=stats["median"] * 1e3,
                   epoch_ms_iqr=stats["iqr"] * 1e3,
                   run_median_ms_min=min(medians) * 1e3, run_median_ms_max=max(medians) * 1e3)
        row["test_acc_mean"], row["test_acc_std"] = _mean_std(
            [r["accuracy"]["test_at_best_val"] for r in ok])
        row["cuda_graphs"], row["cudagraph_skips"] = cuda_graphs_cell(ok)
        if variant == "eager":
            continue
        overheads = [r["timing"]["compile_overhead_s"] for r in ok
                     if r["timing"]["compile_overhead_s"] is not None]
        # The median is what a run with a warm Inductor cache pays; the max is usually the
        # first, cold-cache compile of a sweep (autotuning modes: minutes, not seconds).
        row["compile_overhead_s"] = statistics.median(overheads) if overheads else None
        row["compile_overhead_max_s"] = max(overheads, default=None)
        row["graph_breaks"] = max(r["compile"]["graph_breaks"] for r in ok)
        row["recompiles"] = max(r["compile"]["recompiles"] for r in ok)
        paired = bool(cfg["train"].get("paired"))
        cmp = compare([] if paired else groups.get((setting, "eager"), []), ok)
        if cmp is None:
            continue
        row.update(speedup=cmp["speedup"], speedup_ci_low=cmp["speedup_ci95"][0],
                   speedup_ci_high=cmp["speedup_ci95"][1],
                   break_even_epochs=cmp["break_even_epochs"],
                   test_acc_delta=cmp["test_acc_delta"], memory_ratio=cmp["memory_ratio"])
    return rows
