"""Does measuring cost anything? The same model trained by a bare PyG loop and by
gnnbench's runner, in one process, rounds interleaved, compared on the median wall time of
an epoch (train step + inference + accuracy read-out, device-synchronised at the epoch's
ends only in the bare loop, as a user would time it). Then the runner's bookkeeping on its
own (benchmarks/bookkeeping.py: the same loops with the work replaced by stand-ins), in µs
per epoch and as a share of the bare epoch: a difference of a few tens of µs is lost in
the noise of whole epochs.

    python -m gnnbench.benchmarks.overhead --device cuda --out results/overhead-h200.json

`--tiny` (to check that it runs): Cora only, 2 rounds of 3 epochs after 1 warm-up (and of
20 for the bookkeeping), unless those flags are given; an arxiv-size case asked for is
shrunk to 2,000 nodes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from gnnbench import config, data, models
from gnnbench.benchmarks import bookkeeping, parse_with_tiny
from gnnbench.measure import dynamo, stats
from gnnbench.measure.timer import synchronize
from gnnbench.runner import run_experiment
from gnnbench.training import compilation
from gnnbench.training.optim import make_optimizer

CASES = {"cora": ("dataset=cora",), "arxiv-size": ("experiment=synthetic-arxiv-gcn",)}
TINY = {"cases": "cora", "rounds": 2, "epochs": 3, "warmup": 1, "bookkeeping_epochs": 20}
TINY_GRAPH = ("dataset.num_nodes=2000", "dataset.num_edges=8000")


def bare_loop(cfg, device: torch.device) -> list[float]:
    """PyG's example loop, timed per epoch."""
    torch.manual_seed(cfg.train.seed)
    task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
    edge_index, edge_weight = models.graph_inputs(cfg.model, task.edge_index, task.num_nodes)
    model = models.build_model(cfg.model, task.num_features, task.num_classes).to(device)
    optimizer = make_optimizer(model.parameters(), cfg.train)
    if cfg.compile:  # a clean dynamo cache, as the runner starts every run with
        dynamo.reset()
    forward = compilation.compile_model(model, cfg.compiler) if cfg.compile else model
    train_idx, y = task.splits.train, task.y
    epochs = []
    for _ in range(cfg.train.epochs):
        synchronize(device)
        started = time.perf_counter()
        model.train()
        optimizer.zero_grad()
        loss = F.cross_entropy(forward(task.x, edge_index, edge_weight)[train_idx], y[train_idx])
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            pred = forward(task.x, edge_index, edge_weight).argmax(dim=-1)
        accs = [(pred[i] == y[i]).float().mean().item() for i in task.splits.values()]
        loss.item()
        synchronize(device)
        epochs.append(time.perf_counter() - started)
        assert len(accs) == 3
    return epochs


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--cases", default="cora,arxiv-size")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--bookkeeping-epochs", type=int, default=200,
                        help="epochs of each run that measures the bookkeeping on its own")
    parser.add_argument("--data-mirror", default=None)
    parser.add_argument("--data-dir", default=str(Path(config.project_dir()) / "data"))
    parser.add_argument("--tiny", action="store_true", help="a few short rounds on Cora")
    parser.add_argument("--out", type=Path)
    return parse_with_tiny(parser, TINY, argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rows = []
    for case in args.cases.split(","):
        for compiled in (False, True):
            overrides = [*CASES[case], f"compile={str(compiled).lower()}",
                         f"train.device={args.device}", f"train.epochs={args.epochs}",
                         f"train.warmup_epochs={args.warmup}", "wandb.mode=disabled",
                         f"data_dir={args.data_dir}"]
            if args.data_mirror:
                overrides.append(f"data_mirror={args.data_mirror}")
            if args.tiny and case != "cora":
                overrides += TINY_GRAPH
            cfg = config.compose_config(overrides)
            device = config.resolve_device(cfg.train.device)
            bare, runner, per_round = [], [], []
            for i in range(args.rounds):  # interleaved, and who goes first alternates
                for side in (("bare", "runner") if i % 2 == 0 else ("runner", "bare")):
                    if side == "bare":
                        round_bare = bare_loop(cfg, device)[args.warmup:]
                        continue
                    with tempfile.TemporaryDirectory() as out:
                        result = run_experiment(cfg, Path(out))
                    assert result.status == "ok", result.reason
                    round_runner = [r.epoch_wall_s for r in result.epochs[args.warmup:]]
                bare += round_bare
                runner += round_runner
                per_round.append((statistics.median(round_runner)
                                  / statistics.median(round_bare) - 1) * 100)
            b, r = statistics.median(bare), statistics.median(runner)
            own = bookkeeping.measure(cfg, device, args.bookkeeping_epochs, args.rounds)
            lo, hi = stats.bootstrap_ratio_ci(runner, bare)
            # A round's epochs share the machine's state of the moment, so the rounds, not
            # the epochs, are the independent samples: the CI over rounds is the honest one.
            round_lo, round_hi = stats.bootstrap_median_ci(per_round)
            rows.append({"case": case, "model": cfg.model.name, "compiled": compiled,
                         "bare_epoch_ms": b * 1e3, "runner_epoch_ms": r * 1e3,
                         "overhead_pct": (r / b - 1) * 100,
                         "ratio_ci95": [lo, hi], "overhead_pct_per_round": per_round,
                         "round_median_overhead_pct": statistics.median(per_round),
                         "round_median_ci95_pct": [round_lo, round_hi],
                         "bare": stats.summarize(bare),
                         "runner": stats.summarize(runner), "bookkeeping": own,
                         "bookkeeping_pct_of_bare_epoch": own.get("amortised_us") / (b * 1e4)})
            print(f"{case:10s} {'compiled' if compiled else 'eager':8s} bare {b * 1e3:8.3f} ms  "
                  f"runner {r * 1e3:8.3f} ms  overhead {rows[-1]['overhead_pct']:+.1f} % "
                  f"(epoch-pooled ratio CI {lo:.3f}-{hi:.3f}, epoch noise only); per round "
                  f"(each a run): median {statistics.median(per_round):+.1f} % "
                  f"[CI {round_lo:+.1f}..{round_hi:+.1f}]"
                  + (": no measurable difference" if round_lo <= 0 <= round_hi else "")
                  + f", range {min(per_round):+.1f}..{max(per_round):+.1f} %", flush=True)
            print(f"{'':19s} {bookkeeping.describe(own, b)}", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"command": "python -m gnnbench.benchmarks.overhead",
                                        "args": {k: str(v) for k, v in vars(args).items()},
                                        "device": str(device), "torch": torch.__version__,
                                        "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
