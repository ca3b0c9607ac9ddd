"""How close does the best-engineered step come to the hardware? The performance issue's
workloads, measured side by side in one process: every variant of a case trained by the
runner in rounds whose order alternates, medians pooled over the steady epochs with a
bootstrap 95 % CI, and one ratio per round for a CI over rounds.

    python -m gnnbench.benchmarks.limits --parts epoch,step,minibatch --out results/limits.json

epoch:     Cora GCN and SAGE, the whole epoch (`epoch_wall_s`): eager, whole-step,
           whole-epoch. Goals: GCN >= 15x, SAGE >= 8x the eager epoch.
step:      the arxiv-size graph, 3x256 + batch norm, the train step: eager COO, compiled COO
           (whole step), eager cuSPARSE CSR, compiled CSR custom op (whole step), and with
           TF32. Goals: GCN <= 4 ms, SAGE <= 5 ms.
minibatch: arxiv-size SAGE with 15/10 neighbour batches, the train epoch: eager, compiled,
           compiled on padded batches with prefetching. Goal: >= 1.5x, never below 1x.

`--tiny` (to check that it runs, e.g. on a CPU): each part's first setting, 3 epochs after
1 warm-up, one round, the synthetic graphs shrunk to 2,000 nodes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from gnnbench import config
from gnnbench.measure import stats
from gnnbench.runner import run_experiment

WHOLE_STEP = ["compile=true", "compiler.scope=step", "compiler.mode=reduce-overhead"]
@dataclass(frozen=True)
class Case:
    """A part of the benchmark: what it times per epoch, for how long, of which settings
    (name -> overrides), and which variants of each (name -> overrides)."""

    metric: str
    epochs: int
    warmup: int
    settings: dict[str, list[str]]
    variants: dict[str, list[str]]


CASES = {
    "epoch": Case(
        metric="epoch_wall_s", epochs=60, warmup=10,
        settings={f"{m}/cora": ["dataset=cora", f"model={m}"] for m in ("gcn", "sage")},
        variants={"eager": [], "whole-step": ["variant=whole-step"],
                  "whole-epoch": ["variant=whole-epoch"]}),
    "step": Case(
        metric="train_s", epochs=30, warmup=10,
        settings={f"{m}/arxiv-size": ["workload=synthetic-arxiv", f"model={m}"]
                  for m in ("gcn", "sage")},
        variants={"eager": [], "compiled": WHOLE_STEP, "eager csr": ["graph.layout=csr"],
                  "compiled csr-op": [*WHOLE_STEP, "graph.layout=csr-op"],
                  "compiled csr-op tf32": [*WHOLE_STEP, "graph.layout=csr-op",
                                           "train.precision=tf32"]}),
    "minibatch": Case(
        metric="train_s", epochs=4, warmup=1,
        settings={"sage/arxiv-size": ["workload=synthetic-arxiv", "model=sage",
                                      "train.batching=neighbor", "train.fanouts=[15,10,5]",
                                      "model.batch_norm=false"]},
        variants={"eager": [], "compiled": ["compile=true"],
                  "compiled padded prefetch": ["compile=true", "compiler.mode=reduce-overhead",
                                               "train.pad_batches=true", "train.prefetch=true"]}),
}
TINY_GRAPH = ["dataset.num_nodes=2000", "dataset.num_edges=8000"]


def tiny_cases() -> dict[str, Case]:
    """CASES made small: the first setting of each part, 3 epochs (1 warm-up), small graphs."""
    out = {}
    for part, case in CASES.items():
        name, base = next(iter(case.settings.items()))
        small = [*base, *TINY_GRAPH] if any("synthetic" in o for o in base) else base
        out[part] = replace(case, epochs=3, warmup=1, settings={name: small})
    return out


def ratio(eager: list[float], mine: list[float]) -> dict:
    """Speedup of the pooled medians with its bootstrap 95 % CI (epochs resampled)."""
    low, high = stats.bootstrap_ratio_ci(eager, mine)
    return {"speedup": statistics.median(eager) / statistics.median(mine),
            "speedup_ci95": [low, high], "n_eager": len(eager), "n": len(mine)}


def run_case(part: str, name: str, base: list[str], rounds: int, common: list[str],
             cases: dict[str, Case] = CASES) -> dict:
    case = cases[part]
    variants = list(case.variants)
    samples: dict[str, list[float]] = {v: [] for v in variants}
    per_round: dict[str, list[float]] = {v: [] for v in variants}
    outcomes: dict[str, str] = {}
    for i in range(rounds):
        for variant in variants if i % 2 == 0 else variants[::-1]:
            cfg = config.compose_config([*base, *case.variants[variant], *common,
                                         f"train.epochs={case.epochs}",
                                         f"train.warmup_epochs={case.warmup}"])
            with tempfile.TemporaryDirectory() as out:
                result = run_experiment(cfg, Path(out))
            outcomes[variant] = result.status if result.status == "ok" else \
                f"{result.status}: {result.reason}"
            if result.status != "ok":
                continue
            steady = [r.get(case.metric) for r in result.epochs[case.warmup:]]
            samples[variant] += steady
            per_round[variant].append(statistics.median(steady))
    eager = samples["eager"]
    rows = {}
    for variant in variants:
        mine = samples[variant]
        row = {"outcome": outcomes.get(variant), "n": len(mine)}
        if mine:
            low, high = stats.bootstrap_median_ci(mine)
            row.update(median_ms=statistics.median(mine) * 1e3, ci95_ms=[low * 1e3, high * 1e3])
        if mine and eager and variant != "eager":
            row["speedup"] = ratio(eager, mine)
            ratios = [e / c for e, c in zip(per_round["eager"], per_round[variant],
                                            strict=False)]
            if len(ratios) >= 2:  # a round's epochs share the machine's state: rounds are
                row["speedup_per_round"] = ratios  # the independent samples
                row["speedup_per_round_ci95"] = list(stats.bootstrap_median_ci(ratios))
        rows[variant] = row
        shown = (f"{row['median_ms']:9.3f} ms [{row['ci95_ms'][0]:.3f}-{row['ci95_ms'][1]:.3f}]"
                 if mine else f"{'-':>9}")
        speed = (f"  {row['speedup']['speedup']:6.2f}x "
                 f"[{row['speedup']['speedup_ci95'][0]:.2f}-{row['speedup']['speedup_ci95'][1]:.2f}]"
                 if "speedup" in row else "")
        print(f"{part:9s} {name:16s} {variant:22s} {shown}{speed}  {row['outcome']}", flush=True)
    return {"metric": case.metric, "rounds": rounds, "variants": rows}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="epoch,step,minibatch")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--data-dir", default=str(Path(config.project_dir()) / "data"))
    parser.add_argument("--data-mirror", default=None)
    parser.add_argument("--tiny", action="store_true",
                        help="each part's first setting, 3 epochs, one round, small graphs")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.tiny and args.rounds == parser.get_default("rounds"):
        args.rounds = 1
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    cases = tiny_cases() if args.tiny else CASES
    common = [f"train.device={args.device}", "wandb.mode=disabled", f"data_dir={args.data_dir}"]
    if args.data_mirror:
        common.append(f"data_mirror={args.data_mirror}")
    started = time.time()
    results = {part: {name: run_case(part, name, base, args.rounds, common, cases)
                      for name, base in cases[part].settings.items()}
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
