"""How close does the best-engineered step come to the hardware? The performance issue's
workloads, measured side by side in one process: every variant of a case trained by the
runner in rounds whose order alternates. Each round is a run with a seed of its own
(round i: train.seed=i, listed as `seeds`; result files without `seeds` ran every round
with seed 0), so the variance between runs includes the seed's. Speedups carry the suite's
own two-level interval (rounds resampled, then their steady epochs; Student's t over the
rounds), times a bootstrap interval of the pooled median; each case's best variant is
held against its goal, met or missed by how much.

    python -m gnnbench.benchmarks.limits --parts epoch,step,minibatch --rounds 3 \
        --out results/limits.json

epoch:     Cora GCN and SAGE, the whole epoch (`epoch_wall_s`): eager, whole-step,
           whole-epoch, and whole-epoch with 10 epochs captured as one unit (COO, and the
           CSR custom op). Goals: GCN >= 20x, SAGE >= 10x the eager epoch.
step:      the arxiv-size graph, 3x256 + batch norm, the train step: eager COO, compiled
           CSR custom op (cuSPARSE) with TF32, and gnnbench's Triton CSR kernel
           (csr-triton) in fp32, TF32 and bf16, each in a compiled whole step. Goals: GCN
           <= 2.5 ms, SAGE <= 3 ms.
minibatch: arxiv-size and products-size SAGE with 15/10/5 neighbour batches, the train
           epoch: eager, compiled, compiled with prefetching (exact shapes, or padded to
           buckets under CUDA graphs), compiled with TF32 and prefetching, each prefetching
           variant also with the sampler's stream at high priority (`... high`). Goals:
           arxiv-size >= 2x, never below 1x; products-size >= 1.8x. Controls, eager with
           TF32 and prefetching (and high), are never held against a goal: the compiled
           variant over its control is compile's own share of what the engineering gives.

What bounds a speedup goal, printed beside it from the same runs' stage times: for
neighbour batches, the longer of sampling and the best variant's step (no overlap makes
an epoch shorter than that); for whole epochs, the epoch time the goal needs against the whole-step
variant's train step alone.

What bounds a millisecond goal: the step's floor (benchmarks/floor.py, the bytes it must
move at `--hbm-gbps` and its GEMMs at the best variant's precision), printed beside the goal
and the measurement, with the share of the floor's speed reached; benchmarks/profile_step.py
splits the measured kernel time by class against the same floor.

`--settings` and `--variants` run a subset (eager always runs: the others are held
against it):

    python -m gnnbench.benchmarks.limits --parts minibatch --settings sage/products-size \
        --variants "compiled,compiled tf32 prefetch,eager tf32 prefetch" --rounds 3

`--tiny` (to check that it runs, e.g. on a CPU): each part's first setting, 6 epochs after
1 warm-up (5 steady ones: the fewest an interval is given for), one round, the synthetic
graphs shrunk to 2,000 nodes, no groups of 10 epochs, no stream priorities.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
from omegaconf import DictConfig
from pydantic import BaseModel, ConfigDict

from gnnbench import config, data
from gnnbench.benchmarks import floor
from gnnbench.measure import stats
from gnnbench.measure.summary import steady_rows
from gnnbench.records.model import Speedup
from gnnbench.runner import run_experiment

Overrides = tuple[str, ...]
EAGER = "eager"  # every case's first variant: the others are held against it
WHOLE_STEP = ("compile=true", "compiler.scope=step", "compiler.mode=reduce-overhead")
TRITON_STEP = (*WHOLE_STEP, "graph.layout=csr-triton")


@dataclass(frozen=True)
class Case:
    """A part of the benchmark: what it times per epoch, for how long, of which settings
    (name -> overrides), and which variants of each (name -> overrides)."""

    metric: str
    epochs: int
    warmup: int
    settings: dict[str, Overrides]
    variants: dict[str, Overrides]
    # name -> ("speedup", at least) or ("ms", at most), held by the best variant
    goals: dict[str, tuple[str, float]]
    # compiled variant -> its control: an eager variant with the same engineering, measured
    # to tell compile's own share and never held against a goal.
    controls: dict[str, str] = field(default_factory=dict)


def prefetching(name: str, *overrides: str) -> dict[str, Overrides]:
    """A prefetching variant, and its twin whose sampler's stream has high priority."""
    both = (*overrides, "train.prefetch=true")
    return {name: both, f"{name} high": (*both, "train.prefetch_stream=high")}


CASES = {
    "epoch": Case(
        # 210 epochs: 20 timed units of 10 epochs a round after the 10 warm-up ones
        metric="epoch_wall_s", epochs=210, warmup=10,
        settings={f"{m}/cora": ("dataset=cora", f"model={m}") for m in ("gcn", "sage")},
        variants={EAGER: (), "whole-step": ("variant=whole-step",),
                  "whole-epoch": ("variant=whole-epoch",),
                  "whole-epoch x10": ("variant=whole-epoch", "compiler.capture_epochs=10"),
                  "whole-epoch x10 csr-op": ("variant=whole-epoch", "compiler.capture_epochs=10",
                                             "graph.layout=csr-op")},
        goals={"gcn/cora": ("speedup", 20.0), "sage/cora": ("speedup", 10.0)}),
    "step": Case(
        metric="train_s", epochs=30, warmup=10,
        settings={f"{m}/arxiv-size": ("workload=synthetic-arxiv", f"model={m}")
                  for m in ("gcn", "sage")},
        variants={EAGER: (),
                  "compiled csr-op tf32": (*WHOLE_STEP, "graph.layout=csr-op",
                                           "train.precision=tf32"),
                  "compiled csr-triton": TRITON_STEP,
                  "compiled csr-triton tf32": (*TRITON_STEP, "train.precision=tf32"),
                  "compiled csr-triton bf16": (*TRITON_STEP, "train.precision=bf16")},
        goals={"gcn/arxiv-size": ("ms", 2.5), "sage/arxiv-size": ("ms", 3.0)}),
    "minibatch": Case(
        metric="train_s", epochs=4, warmup=1,
        settings={"sage/arxiv-size": ("workload=synthetic-arxiv", "model=sage",
                                      "train.batching=neighbor", "train.fanouts=[15,10,5]",
                                      "model.batch_norm=false"),
                  # OGB's products SAGE (3x256, 1,024 seeds a batch, 192 batches an epoch)
                  "sage/products-size": ("workload=synthetic-products", "model=sage")},
        variants={EAGER: (), "compiled": ("compile=true",),
                  **prefetching("compiled prefetch", "compile=true"),
                  **prefetching("compiled padded prefetch", "compile=true",
                                "compiler.mode=reduce-overhead", "train.pad_batches=true"),
                  **prefetching("compiled tf32 prefetch", "compile=true",
                                "train.precision=tf32"),
                  **prefetching("compiled tf32 padded prefetch", "compile=true",
                                "train.precision=tf32", "compiler.mode=reduce-overhead",
                                "train.pad_batches=true"),
                  **prefetching("eager tf32 prefetch", "train.precision=tf32")},
        goals={"sage/arxiv-size": ("speedup", 2.0), "sage/products-size": ("speedup", 1.8)},
        controls={f"compiled tf32 {how}prefetch{high}": f"eager tf32 prefetch{high}"
                  for how in ("", "padded ") for high in ("", " high")}),
}
TINY_GRAPH = ("dataset.num_nodes=2000", "dataset.num_edges=8000")


def tiny_cases() -> dict[str, Case]:
    """CASES made small: the first setting of each part, 6 epochs (1 warm-up), small graphs."""
    out = {}
    for part, case in CASES.items():
        name, base = next(iter(case.settings.items()))
        small = (*base, *TINY_GRAPH) if any("synthetic" in o for o in base) else base
        # 6 epochs: no groups of 10; a stream priority changes nothing to check it runs
        variants = {k: v for k, v in case.variants.items()
                    if not any(o.startswith(("compiler.capture_epochs",
                                             "train.prefetch_stream")) for o in v)}
        out[part] = replace(case, epochs=6, warmup=1, settings={name: small},
                            variants=variants, controls={v: c for v, c in case.controls.items()
                                                         if c in variants and v in variants})
    return out


class RoundsSpeedup(BaseModel):
    """A variant's speedup over eager: the pooled medians' ratio, its 95 % interval, the
    interval's level, and the steady epochs behind each side."""

    model_config = ConfigDict(extra="forbid")
    speedup: float
    speedup_ci95: list[float | None]
    level: str | None
    n_eager: int
    n: int


class Row(BaseModel):
    """A variant of a setting, as written: its outcome and steady epochs; where it ran, their
    median and interval (ms); against eager, its speedup (and per round, with 2 or more).
    Written as set (`exclude_unset`)."""

    model_config = ConfigDict(extra="forbid")
    outcome: str | None
    n: int
    median_ms: float | None = None
    ci95_ms: list[float] | None = None
    speedup: RoundsSpeedup | None = None
    speedup_per_round: list[float] | None = None
    speedup_per_round_ci95: list[float] | None = None
    # Median per steady epoch of each timed stage the records hold (ms): train, eval; for
    # neighbour batches sampling, gathering and the step apart. What a bound is read from.
    stages_ms: dict[str, float] | None = None


@dataclass(frozen=True)
class Verdict:
    """The best variant against a goal; `best` None: no variant was measured."""

    goal: str
    best: str | None = None
    value: float | None = None
    ci95: tuple[float | None, float | None] | None = None
    met: bool | None = None
    missed_by: float | None = None

    def as_json(self) -> dict:
        if self.best is None:
            return dict(goal=self.goal, met=self.met, best=self.best)
        return dict(goal=self.goal, best=self.best, value=self.value, ci95=list(self.ci95),
                    met=self.met, missed_by=self.missed_by)


def ratio(eager_rounds: list[list[float]], rounds: list[list[float]]) -> RoundsSpeedup:
    """Speedup of the pooled medians with the suite's 95 % interval: rounds are runs
    (resampled, then their epochs) from two rounds a side; one round: epochs only, and
    `level` says so."""
    out = Speedup(**stats.run_speedup(eager_rounds, rounds, None))
    return RoundsSpeedup(speedup=out.speedup, speedup_ci95=out.speedup_ci95,
                         level=out.interval.level, n_eager=out.n_eager, n=out.n_compiled)


def _interval(speedup: RoundsSpeedup) -> str:
    low, high = speedup.speedup_ci95
    if low is None:
        return "[no CI: too few epochs]"
    said = f"[{low:.2f}-{high:.2f}] ({speedup.level})"
    return said + (": no measurable difference" if low <= 1.0 <= high else "")


def _bounds(ci: Sequence[float | None]) -> str:
    """An interval as printed, or why there is none (too few steady epochs: one round of a
    few epochs)."""
    return "[no CI]" if ci[0] is None else f"[{ci[0]:.3g}-{ci[1]:.3g}]"


def verdict(goal: tuple[str, float], rows: dict[str, Row]) -> Verdict:
    """The best variant against the goal: met, or missed by how much (its interval's bound
    nearer the goal decides "met": a goal met only by a point estimate is not met)."""
    kind, target = goal
    if kind == "speedup":
        found = {v: r.speedup for v, r in rows.items() if r.speedup is not None}
        if not found:
            return Verdict(goal=f">= {target:g}x")
        best = max(found, key=lambda v: found[v].speedup)
        value, (low, high) = found[best].speedup, found[best].speedup_ci95
        met = low is not None and low >= target
        return Verdict(goal=f">= {target:g}x", best=best, value=value, ci95=(low, high),
                       met=met, missed_by=None if met else target / value)
    found = {v: r for v, r in rows.items() if r.median_ms is not None}
    if not found:
        return Verdict(goal=f"<= {target:g} ms")
    best = min(found, key=lambda v: found[v].median_ms)
    value, (low, high) = found[best].median_ms, found[best].ci95_ms
    met = high is not None and high <= target
    return Verdict(goal=f"<= {target:g} ms", best=best, value=value, ci95=(low, high),
                   met=met, missed_by=None if met else value / target)


def step_floor(cfg: DictConfig) -> floor.Floor | None:
    """The floor of `cfg`'s train step, from its task (cached by the runs before it)."""
    device = config.resolve_device(cfg.train.device)
    task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
    workload = floor.workload_of(cfg, task)
    return None if workload is None else floor.count(workload)


def floor_said(goal_ms: float, value_ms: float, summary: floor.Summary) -> str:
    """Where a millisecond goal stands against the step's floor: below it, no kernel meets
    it; between its bounds, only reuse of gathered rows in cache does, this much of it."""
    low, high = summary.ms
    if goal_ms < low:
        where = "below the floor: no step of these ops meets it on this hardware"
    elif goal_ms < high:
        allowed = goal_ms * summary.hbm_gbps * 1e6  # bytes the goal's time can move
        reuse = (summary.bytes[1] - allowed) / (summary.bytes[1] - summary.bytes[0])
        where = (f"within the floor's range: met only if at least {reuse:.0%} of the "
                 "SpMMs' repeated row reads hit the cache")
    else:
        where = "above the floor"
    return f"goal {goal_ms:g} ms, {where}; {summary.said(value_ms)}"


STAGES = ("train_s", "eval_s", "sample_s", "transfer_s", "compute_s")


def stage_medians(rounds: list[list[dict]]) -> dict[str, float]:
    """Each stage's median over the steady epochs of every round, in ms."""
    rows = [row for steady in rounds for row in steady]
    return {k.removesuffix("_s") + "_ms": statistics.median(r.get(k) for r in rows) * 1e3
            for k in STAGES if rows and all(r.get(k) is not None for r in rows)}


def batches_bound(rows: dict[str, Row], best: str) -> str | None:
    """Neighbour batches: however well sampling overlaps the step, an epoch takes at least
    the longer of the two; eager's epoch over that is the most any step can give."""
    eager, mine = rows[EAGER].stages_ms or {}, rows[best].stages_ms or {}
    if not {"sample_ms", "compute_ms", "train_ms"} <= eager.keys() or "compute_ms" not in mine:
        return None
    epoch, step = eager.get("train_ms"), eager.get("compute_ms")
    sampling = eager.get("sample_ms") + eager.get("transfer_ms", 0.0)
    best_step = mine.get("compute_ms")
    floor_ms = max(sampling, best_step)
    return (f"eager epoch {epoch:.0f} ms = sampling and gathering {sampling:.0f} + step "
            f"{step:.0f}; {best}: step {best_step:.0f} ms ({step / best_step:.2f}x eager's), "
            f"waiting for batches {mine.get('sample_ms', 0.0):.0f}; overlapped perfectly, an "
            f"epoch still takes the longer of sampling and step ({floor_ms:.0f} ms): at most "
            f"{epoch / floor_ms:.2f}x")


def epochs_bound(rows: dict[str, Row], best: str, target: float) -> str | None:
    """Whole epochs: the goal's epoch time against the captured train step alone (the
    whole-step variant times it apart from evaluation)."""
    eager, step = rows[EAGER].median_ms, (rows.get("whole-step") or Row(outcome=None, n=0))
    train = (step.stages_ms or {}).get("train_ms")
    if eager is None or train is None:
        return None
    needed = eager / target
    over = ", more than the goal leaves for the whole epoch" if train > needed else ""
    return (f"{target:g}x needs an epoch (train, eval, metrics) of {needed:.3f} ms; {best} "
            f"takes {rows[best].median_ms:.3f}; the train step alone (whole-step, one CUDA "
            f"graph on CUDA) takes {train:.3f} ms{over}")


def run_case(part: str, name: str, base: Sequence[str], rounds: int, common: list[str],
             cases: dict[str, Case] = CASES, hbm_gbps: float = floor.HBM_GBPS) -> dict:
    case = cases[part]
    variants = list(case.variants)
    stage_rounds: dict[str, list[list[dict]]] = {v: [] for v in variants}
    samples: dict[str, list[float]] = {v: [] for v in variants}
    per_round: dict[str, list[float]] = {v: [] for v in variants}
    rounds_of: dict[str, list[list[float]]] = {v: [] for v in variants}
    outcomes: dict[str, str] = {}
    for i in range(rounds):
        for variant in variants if i % 2 == 0 else variants[::-1]:
            cfg = config.compose_config([*base, *case.variants[variant], *common,
                                         f"train.epochs={case.epochs}",
                                         f"train.warmup_epochs={case.warmup}",
                                         f"train.seed={i}"])
            with tempfile.TemporaryDirectory() as out:
                result = run_experiment(cfg, Path(out))
            outcomes[variant] = result.status if result.status == "ok" else \
                f"{result.status}: {result.reason}"
            if result.status != "ok":
                continue
            # One sample per unit of epochs timed together (capture_epochs groups).
            kept = steady_rows(result.epochs, case.warmup)
            stage_rounds[variant].append(kept)
            steady = [r.get(case.metric) for r in kept]
            samples[variant] += steady
            rounds_of[variant].append(steady)
            per_round[variant].append(statistics.median(steady))
    rows: dict[str, Row] = {}
    for variant in variants:
        mine = samples[variant]
        row = Row(outcome=outcomes.get(variant), n=len(mine))
        if mine:
            low, high = stats.bootstrap_median_ci(mine)
            row.median_ms = statistics.median(mine) * 1e3
            row.ci95_ms = [low * 1e3, high * 1e3]
        if mine and samples[EAGER] and variant != EAGER:
            row.speedup = ratio(rounds_of[EAGER], rounds_of[variant])
            ratios = [e / c for e, c in zip(per_round[EAGER], per_round[variant],
                                            strict=False)]
            if len(ratios) >= 2:  # a round's epochs share the machine's state: rounds are
                row.speedup_per_round = ratios  # the independent samples
                row.speedup_per_round_ci95 = list(stats.bootstrap_median_ci(ratios))
        if mine:
            row.stages_ms = stage_medians(stage_rounds[variant])
        rows[variant] = row
        shown = (f"{row.median_ms:9.3f} ms [{row.ci95_ms[0]:.3f}-{row.ci95_ms[1]:.3f}]"
                 if mine else f"{'-':>9}")
        speed = (f"  {row.speedup.speedup:6.2f}x {_interval(row.speedup)}"
                 if row.speedup is not None else "")
        print(f"{part:9s} {name:16s} {variant:24s} {shown}{speed}  {row.outcome}", flush=True)
    out = dict(metric=case.metric, rounds=rounds, seeds=list(range(rounds)),
               variants={v: row.model_dump(exclude_unset=True) for v, row in rows.items()})
    alone = {}
    for compiled, control in case.controls.items():  # compile's own share, same engineering
        if rounds_of[control] and rounds_of[compiled]:
            alone[compiled] = ratio(rounds_of[control], rounds_of[compiled])
            print(f"{part:9s} {name:16s} {compiled} over {control}: "
                  f"{alone[compiled].speedup:.2f}x {_interval(alone[compiled])}", flush=True)
    if alone:
        out.update(compile_alone={v: {"over": c, **alone[v].model_dump()}
                                  for v, c in case.controls.items() if v in alone})
    if name in case.goals:
        found = verdict(case.goals[name], {v: r for v, r in rows.items()
                                           if v not in case.controls.values()})
        out.update(goal=found.as_json())
        unit = "x" if case.goals[name][0] == "speedup" else " ms"
        said = ("no variant measured" if found.met is None else
                f"best {found.best} {found.value:.3g}{unit} {_bounds(found.ci95)}: " +
                ("met" if found.met else f"not met (x{found.missed_by:.2f} off)"))
        print(f"{part:9s} {name:16s} goal {found.goal}: {said}", flush=True)
        kind, target = case.goals[name]
        said = (None if found.best is None or kind == "ms" else
                batches_bound(rows, found.best) if part == "minibatch" else
                epochs_bound(rows, found.best, target))
        if said is not None:
            out.update(bound=said)
            print(f"{part:9s} {name:16s} bound: {said}", flush=True)
        if kind == "ms" and found.best is not None:
            cfg = config.compose_config([*base, *case.variants[found.best], *common])
            counted = step_floor(cfg)
            if counted is not None:
                rates = floor.rates_for(cfg.train.get("precision", "fp32"), hbm_gbps)
                summary = counted.summary(rates, found.value)
                out.update(floor=asdict(summary))
                print(f"{part:9s} {name:16s} bound: {floor_said(target, found.value, summary)}",
                      flush=True)
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="epoch,step,minibatch")
    parser.add_argument("--settings", default=None,
                        help="only these settings of the parts (comma-separated names, e.g. "
                             "sage/products-size); default: all")
    parser.add_argument("--variants", default=None,
                        help="only these variants besides eager (comma-separated names, e.g. "
                             "'compiled,compiled tf32 prefetch'); default: all")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--data-dir", default=str(Path(config.project_dir()) / "data"))
    parser.add_argument("--data-mirror", default=None)
    parser.add_argument("--hbm-gbps", type=float, default=floor.HBM_GBPS,
                        help="memory bandwidth of the step's floor (default: the H200's, as "
                             "measured by a device-to-device copy)")
    parser.add_argument("--tiny", action="store_true",
                        help="each part's first setting, 6 epochs, one round, small graphs")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.tiny and args.rounds == parser.get_default("rounds"):
        args.rounds = 1
    for flag, names, known in (
            ("--parts", args.parts, CASES),
            ("--settings", args.settings, {n for c in CASES.values() for n in c.settings}),
            ("--variants", args.variants, {v for c in CASES.values() for v in c.variants})):
        unknown = set((names or "").split(",")) - set(known) - {""}
        if unknown:
            parser.error(f"{flag}: no {', '.join(sorted(unknown))}; choose from: "
                         f"{', '.join(sorted(known))}")
    return args


def chosen_variants(cases: dict[str, Case], names: str | None) -> dict[str, Case]:
    """`cases` with only eager and the variants `names` lists (None: all of them)."""
    if names is None:
        return cases
    keep = {EAGER, *names.split(",")}
    return {part: replace(case, variants={v: o for v, o in case.variants.items() if v in keep},
                          controls={v: c for v, c in case.controls.items()
                                    if c in keep and v in keep})
            for part, case in cases.items()}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    cases = chosen_variants(tiny_cases() if args.tiny else CASES, args.variants)
    common = [f"train.device={args.device}", "wandb.mode=disabled", f"data_dir={args.data_dir}"]
    if args.data_mirror:
        common.append(f"data_mirror={args.data_mirror}")
    started = time.time()
    chosen = set(args.settings.split(",")) if args.settings else None
    results = {part: {name: run_case(part, name, base, args.rounds, common, cases,
                                     args.hbm_gbps)
                      for name, base in cases[part].settings.items()
                      if chosen is None or name in chosen}
               for part in args.parts.split(",")}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "command": "python -m gnnbench.benchmarks.limits " + " ".join(
                f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}")
                for k, v in vars(args).items() if k != "out" and v not in (None, False)),
            "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
            "torch": torch.__version__, "wall_s": time.time() - started,
            "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
