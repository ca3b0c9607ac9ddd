"""How compiled runs stand against eager runs of the same setting: the one function behind
each run's `comparison` and every row of the report, so both always agree.

Three steady-state speedups, each from the epochs after the warm-up: the train step
(mini-batch: the train part of an epoch), inference (the eval forward), and the whole epoch
(`epoch_wall_s`: train, eval and the metric reads; the runner's own per-epoch bookkeeping is
`bookkeeping_s`, apart). Each interval resamples runs, then epochs (`stats.ratio_interval`);
with one run a side it covers epoch noise only and says so (`interval.level`).

Beside them, what a user pays and gets back over the whole run as configured: the
end-to-end speedup (wall time of the run: data, build, compile, every epoch) and the epoch
at which the compiled run's cumulative time fell below its eager reference's for good,
measured from the epochs (not projected), by the state of the compile cache it started
with."""

from __future__ import annotations

import itertools
import statistics

from gnnbench.measure import stability
from gnnbench.measure.stats import measurable, per_run_ratios, run_speedup
from gnnbench.measure.summary import steady_rows
from gnnbench.records import identity
from gnnbench.records.model import Comparison, Epoch, Record, Scaling, Speedup, Verdict

MEASURES = {"train": "train_s", "inference": "eval_s", "epoch": "epoch_wall_s"}
# Mini-batch epochs also time their stages: `compute_s` is the train step proper (forward,
# backward, optimizer over the epoch's batches) without sampling, collating or moving them.
STAGE_MEASURES = {"compute": "compute_s"}
# A reference run that started this much earlier than the run it is compared with is named
# as old: the machine, its drivers or its load may have changed since.
OLD_REFERENCE_S = 24 * 3600


def steady(run: Record, key: str = "train_s", prefix: str = "") -> list[float]:
    """`key` of every epoch after the warm-up (of epochs timed in groups, one per group:
    measure/summary.steady_rows); `prefix="eager_"` reads a paired run's twin."""
    name = f"{prefix}{key}"
    warmup = run.timing.warmup_epochs

    def values() -> list[float]:
        rows = steady_rows(run.epochs, warmup)
        if name in Epoch.model_fields:  # a declared time: None where the epoch has none
            return [v for r in rows if (v := getattr(r, name)) is not None]
        return [r.get(name) for r in rows if r.has(name)]

    # A report asks each record for the same times several times; a running record's
    # epochs grow, so their number is part of what the answer depends on.
    return list(run.remembered(("steady", name, warmup, len(run.epochs)), values))


def steady_steps(run: Record, prefix: str = "") -> list[float]:
    """The train-step (mini-batch: train-epoch) times after the warm-up."""
    return steady(run, "train_s", prefix)


def steady_train_and_eval(run: Record) -> list[float]:
    """Train and eval of each epoch after the warm-up: what the train time of epochs timed
    in groups holds (one graph runs both), so it is what their reference is measured by."""
    rows = steady_rows(run.epochs, run.timing.warmup_epochs)
    return [r.train_s + r.eval_s for r in rows if r.train_s is not None and r.eval_s is not None]


def timed_epochs(runs: list[Record]) -> int | None:
    """The group size the runs' epochs were timed in (compiler.capture_epochs), or None
    where each epoch was timed by itself."""
    return max((r.timing.timed_epochs or 0 for r in runs if r.timing is not None),
               default=0) or None


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def run_stability(run: Record) -> Verdict | None:
    """A run's stability verdict: the one it recorded, or for a record written before the
    checks existed, its steady epochs judged now (no machine load: it was not sampled).
    None for runs that did not finish."""
    if run.status != "ok":
        return None
    if run.schema_version >= 3:  # checked when it ran (None: no steady epoch)
        return None if run.stability is None else run.remembered(
            ("verdict", id(run.stability)),
            lambda: Verdict(**run.stability.model_dump(), recorded=True))
    return Verdict(**stability.assess(steady_steps(run)), recorded=False)


def choose_reference(eager: list[Record]) -> list[Record]:
    """The reference a single compiled run compares with: the newest eager run whose own
    stability checks passed, else the newest of them (its answer then says it was
    unstable). `eager` is ordered oldest first."""
    stable = [r for r in eager if (verdict := run_stability(r)) is None or verdict.ok]
    return (stable or eager)[-1:]


def cache_state(run: Record) -> str | None:
    """The compile cache a run started with, from its own lookups in Inductor's FX-graph
    cache (the one that holds compiled kernels): "cold" (every lookup missed), "warm"
    (every one hit), "mixed"; None where not recorded (older records, or nothing compiled).
    AOTAutograd's cache is left out: some graphs are never cacheable there, so a warm
    run still misses it."""
    cache = run.compile.get("cache") if run.compile is not None else None
    if not cache:
        return None
    hits, misses = cache.get("fxgraph_hits", 0), cache.get("fxgraph_misses", 0)
    if hits + misses == 0:
        return None
    return "warm" if not misses else "cold" if not hits else "mixed"


def _host(run: Record) -> str | None:
    return run.env.host if run.env is not None else None


def _references(reference: list[Record], against: list[Record]) -> tuple[list[dict], list[str]]:
    """Who the reference runs were (when, where, whether their own checks passed) and what
    a reader should know of them: unstable, much older, or from another host."""
    newest = max((r.started_at or 0 for r in against), default=0)
    hosts = {_host(r) for r in against}
    described, notes = [], []
    for run in reference:
        verdict, host = run_stability(run), _host(run)
        stable = None if verdict is None else verdict.ok
        warnings = verdict.warnings if verdict is not None else []
        flags = []
        if stable is False:
            flags.append("unstable")
            checks = ", ".join(w.split(":", 1)[0] for w in warnings)
            notes.append(f"reference {run.name} was unstable by its own checks "
                         f"({checks}: see its record)")
        started = run.started_at
        if started and newest and newest - started > OLD_REFERENCE_S:
            flags.append(f"{(newest - started) / 86400:.1f} days older")
            notes.append(f"reference {run.name} ran {(newest - started) / 86400:.1f} days "
                         "earlier")
        if host and None not in hosts and host not in hosts:
            flags.append(f"host {host}")
            notes.append(f"reference {run.name} ran on another host ({host})")
        described.append({"name": run.name, "started_at": started, "host": host,
                          "device_name": run.env.device_name if run.env else None,
                          "stable": stable, "warnings": warnings, "flags": flags})
    return described, notes


def cumulative(times: list[float]) -> list[float]:
    """Running totals of epoch times: a run's elapsed time after each epoch."""
    return list(itertools.accumulate(times))


def paid_back_at(reference_epochs: list[float], epochs: list[float]) -> int | None:
    """The number of epochs after which this run's cumulative time stayed at or below its
    reference's for every later epoch both ran; None when it never did."""
    mine, ref = cumulative(epochs), cumulative(reference_epochs)
    n = min(len(mine), len(ref))
    at = None
    for k in range(n - 1, -1, -1):
        if mine[k] > ref[k]:
            break
        at = k + 1
    return at


def _epoch_times(run: Record, prefix: str = "") -> list[float]:
    """Every epoch's time from the first: the whole epoch where recorded, else train and
    eval (a paired run's epochs hold both models, so each side is its own train + eval)."""
    rows = run.epochs
    if not prefix and rows and all(r.epoch_wall_s is not None for r in rows):
        return [r.epoch_wall_s for r in rows]
    return [r.get(f"{prefix}train_s") + r.get(f"{prefix}eval_s", 0.0) for r in rows]


def _pays_back(pairs: list[tuple[Record, Record | None]], paired: bool) -> dict:
    """For each cache state the compiled runs started with, the median epoch at which they
    paid back (None: none did), how many runs, and how many never did within their epochs."""
    found: dict[str, list[int | None]] = {}
    for compiled, eager in pairs:
        reference = _epoch_times(compiled, "eager_") if paired else _epoch_times(eager)
        at = paid_back_at(reference, _epoch_times(compiled))
        found.setdefault(cache_state(compiled) or "not recorded", []).append(at)
    return {state: {"median_epoch": _median(ats), "runs": len(ats),
                    "never": sum(a is None for a in ats),
                    "epochs": min(len(c.epochs) for c, _ in pairs)}
            for state, ats in found.items()}


def _by_seed(runs: list[Record]) -> dict[int, Record]:
    return {r.config.train.seed: r for r in runs}


def _end_to_end(eager: dict[int, Record], compiled: dict[int, Record]) -> dict | None:
    """Whole runs, as configured: median wall time of the eager runs over the compiled
    ones' (data, build, compile, every epoch), and each seed's own ratio."""
    walls = [{s: r.timing.wall_s if r.timing else None for s, r in side.items()}
             for side in (eager, compiled)]
    if any(w is None for side in walls for w in side.values()):
        return None
    eager_wall, compiled_wall = (statistics.median(side.values()) for side in walls)
    return {"speedup": eager_wall / compiled_wall, "eager_wall_s": eager_wall,
            "compiled_wall_s": compiled_wall,
            "per_run": per_run_ratios({s: [w] for s, w in walls[0].items()},
                                      {s: [w] for s, w in walls[1].items()})}


def compare(eager: list[Record], compiled: list[Record]) -> Comparison | None:
    """The speedups of the compiled runs over the eager runs, with intervals over runs;
    each compiled run's own ratio against the eager run of its seed; the end-to-end
    speedup and the measured pay-back; break-even epochs for the median compile overhead,
    accuracy delta (mean test accuracy at best validation), peak-memory ratio of the
    medians, and who the references were. Runs of the same seeds on both sides are
    resampled as pairs. Only ok runs are compared; None when either side has none."""
    eager = [r for r in eager if r.status == "ok"]
    compiled = [r for r in compiled if r.status == "ok"]
    if not eager or not compiled:
        return None
    eager_by_seed, compiled_by_seed = _by_seed(eager), _by_seed(compiled)
    paired = (len(eager_by_seed) == len(eager) == len(compiled) == len(compiled_by_seed)
              and eager_by_seed.keys() == compiled_by_seed.keys())
    if paired:
        eager = [eager_by_seed[s] for s in sorted(eager_by_seed)]
        compiled = [compiled_by_seed[s] for s in sorted(eager_by_seed)]
    eager_peak = _median([r.memory.peak_bytes for r in eager])
    peak = _median([r.memory.peak_bytes for r in compiled])
    reference = {m: [steady(r, key) for r in eager] for m, key in MEASURES.items()}
    if _staged(compiled[0]):
        reference |= {m: [steady(r, key) for r in eager] for m, key in STAGE_MEASURES.items()}
    # Epochs timed in groups hold train and eval in their train time: so does the reference.
    grouped = timed_epochs(compiled)
    train_of = steady_train_and_eval if grouped else steady_steps
    reference["train"] = [train_of(r) for r in eager]
    out = _against(compiled, reference, paired, [r.accuracy.test_at_best_val for r in eager],
                   peak / eager_peak if eager_peak and peak is not None else None,
                   ", ".join(r.name for r in eager), [r.folder for r in eager])
    if grouped:
        out.timed_epochs = grouped
    out.per_run = per_run_ratios({s: train_of(r) for s, r in eager_by_seed.items()},
                                 {s: steady_steps(r) for s, r in compiled_by_seed.items()})
    out.pays_back = _pays_back([(c, eager_by_seed.get(c.config.train.seed, eager[-1]))
                                for c in compiled], paired=False)
    out.end_to_end = _end_to_end(eager_by_seed, compiled_by_seed)
    out.reference_runs, out.reference_notes = _references(eager, compiled)
    return out


def compare_paired(compiled: list[Record]) -> Comparison | None:
    """The same, against the eager twins that paired runs trained in their own processes
    (each run and its twin resampled as a pair). One process holds both models, so their
    peak memories cannot be told apart, and an epoch and the whole run hold both models'
    work, so there is no whole-epoch or end-to-end speedup."""
    compiled = [r for r in compiled if r.status == "ok" and r.paired is not None]
    if not compiled:
        return None
    reference = {"train": [steady(r, "train_s", "eager_") for r in compiled],
                 "inference": [steady(r, "eval_s", "eager_") for r in compiled], "epoch": []}
    out = _against(compiled, reference, True,
                   [r.paired.accuracy.test_at_best_val for r in compiled],
                   None, "paired eager twin", None)
    out.per_run = [statistics.median(steady(r, "train_s", "eager_"))
                   / statistics.median(steady_steps(r)) for r in compiled if steady_steps(r)]
    out.pays_back = _pays_back([(c, None) for c in compiled], paired=True)
    out.end_to_end = None
    out.reference_runs, out.reference_notes = [], []
    return out


def _speedup(reference: list[list[float]], mine: list[list[float]], overhead: float | None,
             paired: bool) -> dict:
    out = run_speedup(reference, mine, overhead, paired=paired)
    return {**out, "measurable": measurable(out["speedup_ci95"])}


def _against(compiled: list[Record], reference: dict[str, list[list[float]]], paired: bool,
             eager_accs: list[float], memory_ratio: float | None, name: str,
             reference_dirs: list | None) -> Comparison:
    overhead = _median([r.timing.compile_overhead_s for r in compiled])
    out = Comparison(**_speedup(reference["train"], [steady(r) for r in compiled], overhead,
                                paired))
    for measure, key in (("inference", "eval_s"), ("epoch", "epoch_wall_s"),
                         ("compute", "compute_s")):
        if not any(reference.get(measure, ())):
            continue
        mine = [steady(r, key) for r in compiled]
        if any(mine):
            setattr(out, measure, _speedup(reference[measure], mine, overhead, paired))
    accs = [r.accuracy.test_at_best_val for r in compiled]
    out.test_acc_delta = statistics.fmean(accs) - statistics.fmean(eager_accs)
    out.eager_test_acc = statistics.fmean(eager_accs)
    out.memory_ratio = memory_ratio
    out.reference = name
    if reference_dirs is not None:
        out.reference_dirs = reference_dirs
    return out


def _staged(run: Record) -> bool:
    """Whether a run's epochs time their stages (mini-batch runs do; full batch does not)."""
    return bool(run.epochs) and run.epochs[-1].has("compute_s")


def train_nodes(run: Record) -> int | None:
    """The training nodes an epoch covers (all ranks together)."""
    sizes = run.dataset.split_sizes if run.dataset is not None else None
    return sizes.train if sizes is not None else None


def compare_scaling(single: list[Record], multi: list[Record]) -> Scaling | None:
    """How runs on N ranks (GPUs) stand against the same setting and variant on one: speedup
    of the epoch (one rank's median / N ranks' median, 95 % interval over runs), throughput
    in training nodes per second, and scaling efficiency = speedup / N (1.0 is perfect).
    None when either side has no ok run."""
    single = [r for r in single if r.status == "ok"]
    multi = [r for r in multi if r.status == "ok"]
    if not single or not multi:
        return None
    world = identity.record_world_size(multi[0])
    out = Speedup(**run_speedup([steady_steps(r) for r in single],
                                [steady_steps(r) for r in multi], None))
    nodes = train_nodes(multi[0])
    low, high = out.speedup_ci95
    return Scaling(
        world_size=world, speedup=out.speedup, speedup_ci95=out.speedup_ci95,
        interval=out.interval.model_dump(), efficiency=out.speedup / world,
        efficiency_ci95=[low / world if low is not None else None,
                         high / world if high is not None else None],
        epoch_median_s=out.compiled_step_median_s,
        single_epoch_median_s=out.eager_step_median_s,
        throughput_nodes_per_s=nodes / out.compiled_step_median_s if nodes else None,
        single_throughput_nodes_per_s=nodes / out.eager_step_median_s if nodes else None,
        reference=", ".join(r.name for r in single),
        reference_dirs=[r.folder for r in single],
        reference_world_size=identity.record_world_size(single[0]))
