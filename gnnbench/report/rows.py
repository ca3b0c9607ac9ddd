"""The comparison table over a set of records: one row per (setting, variant), compiled rows
against the eager runs of the same setting, from records alone (so the table is the same
whichever launcher, host or order produced them)."""

from __future__ import annotations

import statistics

from gnnbench.config import variant_label
from gnnbench.measure import stability
from gnnbench.measure.stats import summarize
from gnnbench.records import identity
from gnnbench.records.compare import (
    compare,
    compare_paired,
    compare_scaling,
    run_stability,
    steady_steps,
)

COLUMNS = ["model", "dataset", "variant", "distributed", "world_size", "runs", "status",
           "steady_epochs", "epoch_ms",
           "epoch_ms_iqr",
           "run_median_ms_min", "run_median_ms_max", "speedup", "speedup_ci_low",
           "speedup_ci_high", "compile_overhead_s", "compile_overhead_max_s",
           "break_even_epochs", "graph_breaks",
           "recompiles", "cuda_graphs", "cudagraph_skips", "memory_ratio", "test_acc_mean",
           "test_acc_std", "test_acc_delta", "reason", "unstable_runs", "precision", "layout",
           "inference_speedup", "inference_ci_low", "inference_ci_high", "epoch_speedup",
           "epoch_ci_low", "epoch_ci_high",
           # DDP rows (README, Scaling out): training nodes per second, and against the row
           # of the same setting and variant on one rank.
           "throughput_nodes_s", "scaling_speedup", "scaling_efficiency",
           "scaling_efficiency_ci_low", "scaling_efficiency_ci_high",
           # Runs whose test accuracy stayed near the majority-class share (did not learn);
           # empty for records older than the check.
           "near_chance_runs",
           # Honest uncertainty: what the interval covers ("runs": resampled runs, then
           # epochs; "epochs": one run a side, within-process only), whether it excludes
           # 1.0, each compiled run's own ratio against the eager run of its seed, the
           # end-to-end speedup of whole runs, and the measured pay-back by cache state.
           "ci_level", "measurable", "run_ratio_min", "run_ratio_max", "end_to_end_speedup",
           "pays_back_cold", "pays_back_warm", "pays_back_unrecorded", "reference_notes"]


def setting_note(row: dict) -> str:
    """The precision and layout of a row when they are not the defaults (fp32, coo): rows
    of one model, dataset and variant differ by them in a matrix sweep."""
    parts = [p for p, default in ((row.get("precision"), "fp32"), (row.get("layout"), "coo"))
             if p and p != default]
    return f" ({', '.join(parts)})" if parts else ""


def variant_cell(row: dict) -> str:
    """The variant, its precision and layout where not the defaults, and for a DDP row how
    many ranks (GPUs) trained it."""
    cell = row["variant"] + setting_note(row)
    if row.get("distributed") == "ddp":
        return f"{cell}, DDP ×{row['world_size']}"
    return cell


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """One value has no spread to report: its std is None, not a reassuring 0."""
    if not values:
        return None, None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None


def stability_warnings(members: list[dict]) -> list[tuple[str, str]]:
    """(run name or "runs", warning) for every warning of a row's runs, its runs' own
    first, then whether its runs disagree with each other."""
    ok = sorted((r for r in members if r["status"] == "ok"), key=lambda r: r["name"])
    found = [(r["name"], w) for r in ok for w in (run_stability(r) or {}).get("warnings", [])]
    medians = {r["name"]: r["timing"]["train_step_s"]["median"] for r in ok}
    return found + [("runs", w) for w in stability.across_runs(medians)]


def groups(runs: list[dict]) -> list[tuple[tuple[str, str], list[dict]]]:
    """The runs of each row, in the rows' order: ((setting key, variant), runs). Every view
    (table, plots) takes its order from here, so a row is in the same place in each."""
    found: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        if run["status"] == "skipped":
            continue
        key = (identity.record_setting_key(run), variant_label(run["config"]))
        found.setdefault(key, []).append(run)

    def order(item: tuple) -> tuple:
        (setting, variant), members = item
        cfg = members[0]["config"]
        return (cfg["model"]["name"], cfg["dataset"]["name"], identity.distributed(cfg),
                identity.world_size(cfg), setting, variant != "eager", variant)

    return sorted(found.items(), key=order)


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


def single_rank_runs(grouped: list[tuple[tuple[str, str], list[dict]]],
                     members: list[dict]) -> list[dict]:
    """The runs on one rank of the setting and variant of a DDP row on several: DDP runs
    of world_size 1 if there are any, else plain one-process runs."""
    cfg = members[0]["config"]
    key = identity.scaling_key(cfg, identity.device_type(members[0]))
    variant = identity.variant_key(cfg)
    found: dict[bool, list[dict]] = {False: [], True: []}
    for (_, row_variant), runs in grouped:
        first = runs[0]["config"]
        if (row_variant == variant and identity.world_size(first) == 1
                and identity.scaling_key(first, identity.device_type(runs[0])) == key):
            found[identity.distributed(first)] += runs
    return found[True] or found[False]


def _scaling(row: dict, single: list[dict], ok: list[dict]) -> None:
    if ok and "ranks" in (ok[0]["timing"] or {}):
        rates = [r["timing"]["throughput_nodes_per_s"] for r in ok]
        row["throughput_nodes_s"] = statistics.median(r for r in rates if r is not None) \
            if any(r is not None for r in rates) else None
    cmp = compare_scaling(single, ok) if single else None
    if cmp is not None:
        row.update(scaling_speedup=cmp["speedup"], scaling_efficiency=cmp["efficiency"],
                   scaling_efficiency_ci_low=cmp["efficiency_ci95"][0],
                   scaling_efficiency_ci_high=cmp["efficiency_ci95"][1])


def pays_back_cell(found: dict | None) -> str | None:
    """"epoch 35 (3 runs)", "never in 200 epochs (3 runs)", "epoch 35; 1 of 3 never"."""
    if not found:
        return None
    runs, never = found["runs"], found["never"]
    if never == runs:
        return f"never in {found['epochs']} epochs ({runs} run{'s' * (runs > 1)})"
    cell = f"epoch {found['median_epoch']:.0f}"
    return cell + (f"; {never} of {runs} never" if never else
                   f" ({runs} run{'s' * (runs > 1)})")


def build_rows(runs: list[dict]) -> list[dict]:
    """One row per (setting, variant); skipped jobs (repeats of an eager run) are left out."""
    grouped = groups(runs)
    by_key = dict(grouped)
    rows = []
    for (setting, variant), members in grouped:
        cfg = members[0]["config"]
        ok = [r for r in members if r["status"] == "ok"]
        failed = [r for r in members if r["status"] != "ok"]
        row = {c: None for c in COLUMNS}
        row.update(model=cfg["model"]["name"], dataset=cfg["dataset"]["name"], variant=variant,
                   precision=cfg["train"].get("precision", "fp32"),
                   layout=cfg.get("graph", {}).get("layout", "coo"),
                   distributed=cfg["train"].get("distributed", "none"),
                   world_size=identity.world_size(cfg), runs=f"{len(ok)}/{len(members)} ok",
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
        judged = [r["accuracy"]["near_chance"] for r in ok if "near_chance" in r["accuracy"]]
        row["near_chance_runs"] = sum(judged) if judged else None
        row["cuda_graphs"], row["cudagraph_skips"] = cuda_graphs_cell(ok)
        if row["distributed"] == "ddp":
            _scaling(row, single_rank_runs(grouped, members) if row["world_size"] > 1 else [],
                     ok)
        verdicts = [v for v in map(run_stability, ok) if v is not None]
        # None, not 0, when no run had enough steady epochs (or a load sample) to judge.
        if any(not v["ok"] or v["checks"]["spread"] is not None
               or v["checks"]["load_per_cpu"] is not None for v in verdicts):
            row["unstable_runs"] = sum(not v["ok"] for v in verdicts)
        if variant == "eager":
            continue
        overheads = [r["timing"]["compile_overhead_s"] for r in ok
                     if r["timing"]["compile_overhead_s"] is not None]
        # The median is what a run with a warm Inductor cache pays; the max is usually the
        # first, cold-cache compile of a sweep (autotuning modes: minutes, not seconds).
        row["compile_overhead_s"] = statistics.median(overheads) if overheads else None
        row["compile_overhead_max_s"] = max(overheads, default=None)
        dynamo = [r["compile"] for r in ok if r.get("compile")]  # none for a captured eager step
        row["graph_breaks"] = max((d["graph_breaks"] for d in dynamo), default=None)
        row["recompiles"] = max((d["recompiles"] for d in dynamo), default=None)
        if cfg["train"].get("paired"):
            cmp = compare_paired(ok)
        else:
            cmp = compare(by_key.get((setting, "eager"), []), ok)
        if cmp is None:
            continue
        row.update(speedup=cmp["speedup"], speedup_ci_low=cmp["speedup_ci95"][0],
                   speedup_ci_high=cmp["speedup_ci95"][1],
                   break_even_epochs=cmp["break_even_epochs"],
                   test_acc_delta=cmp["test_acc_delta"], memory_ratio=cmp["memory_ratio"],
                   ci_level=cmp["interval"]["level"], measurable=cmp["measurable"],
                   run_ratio_min=min(cmp["per_run"], default=None),
                   run_ratio_max=max(cmp["per_run"], default=None),
                   end_to_end_speedup=(cmp["end_to_end"] or {}).get("speedup"),
                   reference_notes="; ".join(cmp["reference_notes"]) or None)
        for state, column in (("cold", "pays_back_cold"), ("warm", "pays_back_warm"),
                              ("not recorded", "pays_back_unrecorded")):
            row[column] = pays_back_cell(cmp["pays_back"].get(state))
        for measure in ("inference", "epoch"):
            if cmp.get(measure):
                low, high = cmp[measure]["speedup_ci95"]
                row.update({f"{measure}_speedup": cmp[measure]["speedup"],
                            f"{measure}_ci_low": low, f"{measure}_ci_high": high})
    return rows
