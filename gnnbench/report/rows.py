"""The comparison table over a set of records: one row per (setting, variant), compiled rows
against the eager runs of the same setting, from records alone (so the table is the same
whichever launcher, host or order produced them)."""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict

from gnnbench.measure import stability
from gnnbench.measure.stats import median_iqr
from gnnbench.records import identity
from gnnbench.records.compare import (
    compare,
    compare_paired,
    compare_scaling,
    run_stability,
    steady_steps,
)
from gnnbench.records.model import Comparison, PayBack, Record
from gnnbench.report import parallel


class Row(BaseModel):
    """One row of the comparison table (report.csv's columns, in order)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    dataset: str | None = None
    variant: str | None = None
    distributed: str | None = None
    world_size: int | None = None
    runs: str | None = None
    status: str | None = None
    steady_epochs: int | None = None
    # The train step's median over the steady epochs of the row's runs (mini-batch: the
    # train part of an epoch), and its IQR.
    train_ms: float | None = None
    train_ms_iqr: float | None = None
    run_median_ms_min: float | None = None
    run_median_ms_max: float | None = None
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    compile_overhead_s: float | None = None
    compile_overhead_max_s: float | None = None
    break_even_epochs: float | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    cuda_graphs: str | None = None
    cudagraph_skips: int | None = None
    memory_ratio: float | None = None
    test_acc_mean: float | None = None
    test_acc_std: float | None = None
    test_acc_delta: float | None = None
    reason: str | None = None
    unstable_runs: int | None = None
    precision: str | None = None
    layout: str | None = None
    inference_speedup: float | None = None
    inference_ci_low: float | None = None
    inference_ci_high: float | None = None
    epoch_speedup: float | None = None
    epoch_ci_low: float | None = None
    epoch_ci_high: float | None = None
    # DDP rows (README, Scaling out): training nodes per second, and against the row of the
    # same setting and variant on one rank.
    throughput_nodes_s: float | None = None
    scaling_speedup: float | None = None
    scaling_efficiency: float | None = None
    scaling_efficiency_ci_low: float | None = None
    scaling_efficiency_ci_high: float | None = None
    # Runs whose test accuracy stayed near the majority-class share (did not learn); empty
    # for records older than the check.
    near_chance_runs: int | None = None
    # Honest uncertainty: what the interval covers ("runs": resampled runs, then epochs;
    # "epochs": one run a side, within-process only), whether it excludes 1.0, each compiled
    # run's own ratio against the eager run of its seed, the end-to-end speedup of whole
    # runs, and the measured pay-back by cache state.
    ci_level: str | None = None
    measurable: bool | None = None
    run_ratio_min: float | None = None
    run_ratio_max: float | None = None
    end_to_end_speedup: float | None = None
    pays_back_cold: str | None = None
    pays_back_warm: str | None = None
    pays_back_unrecorded: str | None = None
    reference_notes: str | None = None
    # Batches of whole graphs and heterogeneous graphs (records with `shapes`): how batches
    # met the model, the most distinct shapes a run met, recompilations per epoch after the
    # warm-up (mean over runs), the share of computed rows and edges that were padding, and
    # how many runs hit dynamo's recompile limit. CSV columns only where a row has them.
    shape_policy: str | None = None
    distinct_shapes: int | None = None
    recompiles_per_epoch: float | None = None
    padding_share: float | None = None
    recompile_limit_hits: int | None = None
    # The train step without its batches' loading (sampling or collating, moving): what
    # compiling can speed up, beside the train time that a loader on the host may bound.
    compute_speedup: float | None = None
    compute_ci_low: float | None = None
    compute_ci_high: float | None = None

    def cells(self, columns: list[str] | None = None) -> dict:
        """The row as report.csv writes it."""
        return {column: getattr(self, column) for column in columns or COLUMNS}


COLUMNS = list(Row.model_fields)
SHAPE_COLUMNS = ("shape_policy", "distinct_shapes", "recompiles_per_epoch", "padding_share",
                 "recompile_limit_hits", "compute_speedup", "compute_ci_low", "compute_ci_high")


def columns(rows: list[Row]) -> list[str]:
    """report.csv's columns: the shape columns only where some row has shapes (reports of
    node-level runs keep the columns they had)."""
    if any(r.shape_policy is not None for r in rows):
        return COLUMNS
    return [c for c in COLUMNS if c not in SHAPE_COLUMNS]


def setting_note(row: Row) -> str:
    """The precision and layout of a row when they are not the defaults (fp32, coo): rows
    of one model, dataset and variant differ by them in a matrix sweep."""
    parts = [p for p, default in ((row.precision, "fp32"), (row.layout, "coo"),
                                  (row.shape_policy, "exact")) if p and p != default]
    return f" ({', '.join(parts)})" if parts else ""


def variant_cell(row: Row) -> str:
    """The variant, its precision and layout where not the defaults, and for a DDP row how
    many ranks (GPUs) trained it."""
    cell = row.variant + setting_note(row)
    if row.distributed == "ddp":
        return f"{cell}, DDP ×{row.world_size}"
    return cell


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """One value has no spread to report: its std is None, not a reassuring 0."""
    if not values:
        return None, None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None


def stability_warnings(members: list[Record]) -> list[tuple[str, str]]:
    """(run name or "runs", warning) for every warning of a row's runs, its runs' own
    first, then whether its runs disagree with each other."""
    ok = sorted((r for r in members if r.status == "ok"), key=lambda r: r.name)
    found = [(r.name, w) for r in ok if (v := run_stability(r)) is not None for w in v.warnings]
    medians = {r.name: r.timing.train_s.median for r in ok}
    return found + [("runs", w) for w in stability.across_runs(medians)]


Group = tuple[tuple[str, str], list[Record]]


def groups(runs: list[Record]) -> list[Group]:
    """The runs of each row, in the rows' order: ((setting key, variant), runs). Every view
    (table, plots) takes its order from here, so a row is in the same place in each."""
    found: dict[tuple[str, str], list[Record]] = {}
    for run in runs:
        if run.status == "skipped":
            continue
        key = (identity.record_setting_key(run), identity.record_variant(run))
        found.setdefault(key, []).append(run)

    def order(item: Group) -> tuple:
        (setting, variant), members = item
        first = members[0]
        return (first.config.model.name, first.config.dataset.name,
                identity.record_distributed(first), identity.record_world_size(first),
                setting, variant != "eager", variant)

    return sorted(found.items(), key=order)


def cuda_graphs_cell(runs: list[Record]) -> tuple[str, int | None]:
    """What CUDA graphs the runs ran under, and Inductor's skips. Records before schema 2
    wrote what the setting asked for, not what was observed: they say so."""
    kinds = sorted({r.cuda_graphs or "none" for r in runs})
    audits = [r.cuda_graph_audit for r in runs]
    label = ", ".join(kinds)
    if any(a is None for a in audits) and any(r.config.compile for r in runs):
        return f"{label} (not observed)", None
    observed = [a for a in audits if a]
    return label, sum(a.inductor_skips for a in observed) if observed else None


def single_rank_runs(grouped: list[Group], members: list[Record]) -> list[Record]:
    """The runs on one rank of the setting and variant of a DDP row on several: DDP runs
    of world_size 1 if there are any, else plain one-process runs."""
    key = identity.record_scaling_key(members[0])
    variant = identity.record_variant(members[0])
    found: dict[bool, list[Record]] = {False: [], True: []}
    for (_, row_variant), runs in grouped:
        if (row_variant == variant and identity.record_world_size(runs[0]) == 1
                and identity.record_scaling_key(runs[0]) == key):
            found[identity.record_distributed(runs[0])] += runs
    return found[True] or found[False]


def _scaling(row: Row, single: list[Record], ok: list[Record]) -> None:
    if ok and ok[0].timing is not None and ok[0].timing.ranks is not None:
        rates = [r.timing.throughput_nodes_per_s for r in ok]
        row.throughput_nodes_s = statistics.median(r for r in rates if r is not None) \
            if any(r is not None for r in rates) else None
    cmp = compare_scaling(single, ok) if single else None
    if cmp is not None:
        row.scaling_speedup, row.scaling_efficiency = cmp.speedup, cmp.efficiency
        row.scaling_efficiency_ci_low, row.scaling_efficiency_ci_high = cmp.efficiency_ci95


def pays_back_cell(found: PayBack | None) -> str | None:
    """"epoch 35 (3 runs)", "never in 200 epochs (3 runs)", "epoch 35; 1 of 3 never"."""
    if not found:
        return None
    runs, never = found.runs, found.never
    if never == runs:
        return f"never in {found.epochs} epochs ({runs} run{'s' * (runs > 1)})"
    cell = f"epoch {found.median_epoch:.0f}"
    return cell + (f"; {never} of {runs} never" if never else
                   f" ({runs} run{'s' * (runs > 1)})")


def _measured(row: Row, ok: list[Record]) -> None:
    """What every row with finished runs shows: step times, accuracy, CUDA graphs, stability."""
    n, median, iqr = median_iqr([s for r in ok for s in steady_steps(r)])
    medians = [r.timing.train_s.median for r in ok]
    row.steady_epochs, row.train_ms, row.train_ms_iqr = n, median * 1e3, iqr * 1e3
    row.run_median_ms_min, row.run_median_ms_max = min(medians) * 1e3, max(medians) * 1e3
    row.test_acc_mean, row.test_acc_std = _mean_std([r.accuracy.test_at_best_val for r in ok])
    judged = [r.accuracy.near_chance for r in ok if r.accuracy.has("near_chance")]
    row.near_chance_runs = sum(judged) if judged else None
    row.cuda_graphs, row.cudagraph_skips = cuda_graphs_cell(ok)
    verdicts = [v for v in map(run_stability, ok) if v is not None]
    # None, not 0, when no run had enough steady epochs (or a load sample) to judge.
    if any(not v.ok or v.checks.spread is not None or v.checks.load_per_cpu is not None
           for v in verdicts):
        row.unstable_runs = sum(not v.ok for v in verdicts)


def _shapes(row: Row, ok: list[Record], members: list[Record]) -> None:
    """The shape columns, from the runs' `shapes` (failed runs count for the recompile
    limit: hitting it is how a static-shape run fails)."""
    found = [r.shapes for r in members if r.shapes is not None]
    if not found:
        return
    row.shape_policy = found[0].policy
    row.distinct_shapes = max((s.distinct_shapes or 0) for s in found)
    shares = [r.shapes.padding_share for r in ok if r.shapes is not None
              and r.shapes.padding_share is not None]
    row.padding_share = statistics.fmean(shares) if shares else None
    later = [statistics.fmean(per[r.timing.warmup_epochs:] or [0]) for r in ok
             if r.shapes is not None and (per := r.shapes.recompiles_per_epoch) is not None]
    row.recompiles_per_epoch = statistics.fmean(later) if later else None
    hits = [s.recompile_limit_hit for s in found if s.recompile_limit_hit is not None]
    row.recompile_limit_hits = sum(hits) if hits else None


def _compiled(row: Row, ok: list[Record], cmp: Comparison | None) -> None:
    """What a compiled row adds: its one-off cost, dynamo's counts and the comparison."""
    overheads = [r.timing.compile_overhead_s for r in ok
                 if r.timing.compile_overhead_s is not None]
    # The median is what a run with a warm Inductor cache pays; the max is usually the
    # first, cold-cache compile of a sweep (autotuning modes: minutes, not seconds).
    row.compile_overhead_s = statistics.median(overheads) if overheads else None
    row.compile_overhead_max_s = max(overheads, default=None)
    dynamo = [r.compile for r in ok if r.compile]  # none for a captured eager step
    row.graph_breaks = max((d.graph_breaks for d in dynamo), default=None)
    row.recompiles = max((d.recompiles for d in dynamo), default=None)
    if cmp is None:
        return
    row.speedup, (row.speedup_ci_low, row.speedup_ci_high) = cmp.speedup, cmp.speedup_ci95
    row.break_even_epochs, row.test_acc_delta = cmp.break_even_epochs, cmp.test_acc_delta
    row.memory_ratio, row.measurable = cmp.memory_ratio, cmp.measurable
    row.ci_level = cmp.interval.level if cmp.interval else None
    row.run_ratio_min = min(cmp.per_run, default=None)
    row.run_ratio_max = max(cmp.per_run, default=None)
    row.end_to_end_speedup = (cmp.end_to_end or {}).get("speedup")
    row.reference_notes = "; ".join(cmp.reference_notes) or None
    row.pays_back_cold = pays_back_cell(cmp.pays_back.get("cold"))
    row.pays_back_warm = pays_back_cell(cmp.pays_back.get("warm"))
    row.pays_back_unrecorded = pays_back_cell(cmp.pays_back.get("not recorded"))
    if cmp.inference is not None:
        row.inference_speedup = cmp.inference.speedup
        row.inference_ci_low, row.inference_ci_high = cmp.inference.speedup_ci95
    if cmp.epoch is not None:
        row.epoch_speedup = cmp.epoch.speedup
        row.epoch_ci_low, row.epoch_ci_high = cmp.epoch.speedup_ci95
    if cmp.compute is not None:
        row.compute_speedup = cmp.compute.speedup
        row.compute_ci_low, row.compute_ci_high = cmp.compute.speedup_ci95


def build_rows(runs: list[Record]) -> list[Row]:
    """One row per (setting, variant); skipped jobs (repeats of an eager run) are left out."""
    grouped = groups(runs)
    by_key = dict(grouped)
    rows, compiled = [], []
    for (setting, variant), members in grouped:
        cfg = members[0].config
        ok = [r for r in members if r.status == "ok"]
        failed = [r for r in members if r.status != "ok"]
        row = Row(model=cfg.model.name, dataset=cfg.dataset.name, variant=variant,
                  precision=cfg.train.precision,
                  layout=cfg.graph.layout if cfg.graph is not None else "coo",
                  distributed=cfg.train.distributed,
                  world_size=identity.record_world_size(members[0]),
                  runs=f"{len(ok)}/{len(members)} ok",
                  status="ok" if not failed else failed[0].status,
                  reason=failed[0].reason if failed else None)
        rows.append(row)
        _shapes(row, ok, members)
        if not ok:
            continue
        _measured(row, ok)
        if row.distributed == "ddp":
            _scaling(row, single_rank_runs(grouped, members) if row.world_size > 1 else [], ok)
        if variant == "eager":
            continue
        compiled.append((row, ok, bool(cfg.train.paired), by_key.get((setting, "eager"), [])))
    for (row, ok, _, _), cmp in zip(compiled, _comparisons(compiled), strict=True):
        _compiled(row, ok, cmp)
    return rows


def _comparisons(jobs: list[tuple[Row, list[Record], bool, list[Record]]]) \
        -> list[Comparison | None]:
    """Each compiled row's comparison with its eager runs. Their bootstraps are most of a
    big report's time, so every other one is computed in a forked child where the machine
    has a core to spare (report/parallel.py); the numbers are the same either way."""
    def compute(part: list) -> list[Comparison | None]:
        return [compare_paired(ok) if paired else compare(eager, ok)
                for _, ok, paired, eager in part]

    if len(jobs) < 2:
        return compute(jobs)
    mine, theirs = parallel.both(lambda: compute(jobs[::2]), lambda: compute(jobs[1::2]))
    out: list[Comparison | None] = [None] * len(jobs)
    out[::2], out[1::2] = mine, theirs
    return out
