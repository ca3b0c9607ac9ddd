"""How long does gnnbench's own neighbour sampler take against the training step it feeds?

    python -m gnnbench.benchmarks.sampler --device cuda --out results/sampler-h200.json
    python -m gnnbench.benchmarks.sampler --device cuda --dedup mark,unique   # A/B in one process
    python -m gnnbench.benchmarks.sampler --device cuda --prefetch            # sampling overlapped

Generates (or loads from data_dir) the products-size synthetic graph on the device, then
times, each between device synchronisations, for `--batches` batches of 1024 seeds:
sampling (15/10/5), gathering the batch's features and labels, and one SAGE 3x256 training
step on it. Prints and writes medians with IQR.

With several `--dedup` choices, one sampler per choice (same seed, so the same batches:
checked) samples every batch, the order rotating per batch so neither always runs first on
a warm cache; the report adds each one's sampling time and their ratio with a bootstrap CI.
With `--prefetch` the batch is timed as one region (wait for the batch, gather, step),
sampling of the next batch running meanwhile (training/prefetch.py; on CUDA a side stream).
`--no-step` times sampling only. `--tiny` (to check that it runs): the Cora-size synthetic
graph, 3 batches of 64 seeds after 1 untimed, unless those flags are given.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import torch
from omegaconf import OmegaConf

from gnnbench import config, models
from gnnbench.benchmarks import parse_with_tiny
from gnnbench.data.parts import NodeGraph
from gnnbench.data.synthetic import load_synthetic
from gnnbench.measure.stats import bootstrap_ratio_ci, summarize
from gnnbench.measure.timer import timed
from gnnbench.training import steps
from gnnbench.training.optim import make_optimizer
from gnnbench.training.prefetch import Prefetcher
from gnnbench.training.sampler import DEDUP, CSRGraph, NeighborSampler

TINY = {"dataset": "synthetic", "batches": 3, "warmup": 1, "batch_size": 64}
STEP_REGIONS = ("gather", "step")  # timed after sampling, per batch, unless --no-step


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="synthetic-products")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--dedup", default="mark",
                        help=f"one of {', '.join(DEDUP)}, or several comma-separated to compare")
    parser.add_argument("--prefetch", action="store_true")
    parser.add_argument("--no-step", action="store_true")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--data-dir", default=str(Path(config.project_dir()) / "data"))
    parser.add_argument("--tiny", action="store_true", help="a small graph and a few batches")
    parser.add_argument("--out", type=Path)
    args = parse_with_tiny(parser, TINY, argv)
    args.dedup = args.dedup.split(",")
    if not set(args.dedup) <= set(DEDUP):
        parser.error(f"--dedup takes {', '.join(DEDUP)}; got {','.join(args.dedup)}")
    if args.prefetch and (len(args.dedup) > 1 or args.no_step):
        parser.error("--prefetch times whole batches: one --dedup, and not with --no-step")
    return args


def command_line(args: argparse.Namespace) -> str:
    words = ["python -m gnnbench.benchmarks.sampler"]
    for key, value in vars(args).items():
        if key == "out" or value in (None, False):
            continue
        words.append(f"--{key.replace('_', '-')}")
        if value is not True:
            words.append(",".join(value) if isinstance(value, list) else str(value))
    return " ".join(words)


def same_batch(a, b) -> bool:
    return (torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
            and torch.equal(a.e_id, b.e_id))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    fanouts = [int(f) for f in args.fanouts.split(",")]

    cfg = OmegaConf.load(config.CONF_DIR / "dataset" / f"{args.dataset}.yaml")
    parts = NodeGraph.model_validate(load_synthetic(cfg, Path(args.data_dir), device))
    x, y = parts.x.to(device), parts.y.to(device)
    edge_index = parts.edge_index.to(device)
    graph, csr_s = timed(lambda: CSRGraph.from_edge_index(edge_index, x.size(0)), device)
    train = parts.splits["train"].to(device)
    samplers = {d: NeighborSampler(graph, train, fanouts, args.batch_size, shuffle=True, seed=0,
                                   dedup=d) for d in args.dedup}

    model_cfg = OmegaConf.create({"name": "sage", "_target_": "gnnbench.models.sage.SAGE",
                                  "num_layers": len(fanouts), "hidden": 256,
                                  "dropout": 0.5, "input_dropout": 0.0, "batch_norm": False,
                                  "aggr": "mean"})
    model = models.build_model(model_cfg, x.size(1), int(cfg.num_classes)).to(device)
    optimizer = make_optimizer(model.parameters(), OmegaConf.create({"lr": 0.003,
                                                                     "weight_decay": 0.0}))

    def gather(b):
        return x[b.n_id], y[b.n_id[: b.batch_size]]

    def step(b, xb, yb):
        return steps.train_batch_step(model, model, optimizer, xb, b.edge_index, None, yb)

    samples, sizes = time_batches(args, samplers, gather, step, device)
    stats = {k: summarize(v) for k, v in samples.items()}
    median = {k: summary["median"] for k, summary in stats.items()}
    device_name = (torch.cuda.get_device_name(device) if device.type == "cuda"
                   else platform.processor() or platform.machine())
    out = dict(
        command=command_line(args),
        when=time.strftime("%Y-%m-%d %H:%M:%S"),
        device=device_name,
        torch=torch.__version__,
        cpu_threads=torch.get_num_threads() if device.type == "cpu" else None,
        graph={"nodes": x.size(0), "directed_edges": edge_index.size(1),
               **{k: v for k, v in parts.info.items() if k != "cache_file"}},
        csr_build_s=csr_s,
        batch=dict(seeds=args.batch_size, fanouts=fanouts,
                   median_nodes=statistics.median_low(s[0] for s in sizes),
                   median_edges=statistics.median_low(s[1] for s in sizes)),
        seconds=stats,
    )
    speedups = {}
    if len(args.dedup) > 1:
        base, *others = args.dedup
        speedups = {f"{base}_vs_{o}": dict(ratio=median[f"sample_{o}"]
                                           / median[f"sample_{base}"],
                                           ci95=bootstrap_ratio_ci(samples[f"sample_{o}"],
                                                                   samples[f"sample_{base}"]))
                    for o in others}
        out.update(sampling_speedup=speedups)
    share = None
    if not args.no_step and not args.prefetch:
        sampling = f"sample_{args.dedup[0]}"
        total = [sum(p) for p in zip(*(samples[k] for k in (sampling, *STEP_REGIONS)),
                                     strict=True)]
        whole = summarize(total)
        share = median[sampling] / whole["median"]
        out.update(whole_batch_s=whole, sampling_share_of_batch=share)
    report(device_name, csr_s, stats, speedups, share, x.size(0), edge_index.size(1),
           parts.info)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n")


def epochs(batches: Iterable) -> Iterator:
    """Batch after batch, epoch after epoch: more batches than one epoch has can be timed
    (a small graph's train split). Every sampler starts its next epoch at the same batch,
    so samplers of one seed keep sampling the same batches."""
    while True:
        empty = True
        for batch in batches:
            empty = False
            yield batch
        if empty:
            raise ValueError("the sampler gave no batch: no training nodes")


def time_batches(args: argparse.Namespace, samplers: dict[str, NeighborSampler],
                 gather: Callable, step: Callable,
                 device: torch.device) -> tuple[dict[str, list[float]], list[tuple[int, int]]]:
    """Seconds of each timed region per steady batch, and each batch's (nodes, edges)."""
    samples: dict[str, list[float]] = {f"sample_{d}": [] for d in args.dedup}
    samples.update({k: [] for k in STEP_REGIONS} if not args.no_step else {})
    sizes = []
    if args.prefetch:
        samples = {"batch": []}
        it = epochs(Prefetcher(samplers[args.dedup[0]], device))
    else:
        its = {d: epochs(s) for d, s in samplers.items()}
    for i in range(args.warmup + args.batches):
        if args.prefetch:  # one region: the wait for the batch, its gather, its step
            (batch, _), t_batch = timed(lambda: (b := next(it), step(b, *gather(b))), device)
            seconds = {"batch": t_batch}
        else:
            order = args.dedup[i % len(args.dedup):] + args.dedup[: i % len(args.dedup)]
            got, seconds = {}, {}
            for d in order:
                got[d], seconds[f"sample_{d}"] = timed(lambda d=d: next(its[d]), device)
            batch = got[args.dedup[0]]
            if not all(same_batch(batch, b) for b in got.values()):
                raise AssertionError(f"batch {i}: the dedup choices sampled different batches")
            if not args.no_step:
                inputs, gather_s = timed(lambda b=batch: gather(b), device)
                _, step_s = timed(lambda b=batch, xy=inputs: step(b, *xy), device)
                seconds.update(gather=gather_s, step=step_s)
        if i >= args.warmup:
            for k, v in seconds.items():
                samples[k].append(v)
            sizes.append((batch.n_id.numel(), batch.edge_index.size(1)))
    return samples, sizes


def report(device: str, csr_s: float, stats: dict[str, dict], speedups: dict[str, dict],
           share: float | None, nodes: int, edges: int, info: dict) -> None:
    print(f"{device}: graph {nodes:,} nodes / {edges:,} edges "
          f"(generated in {info.get('generate_s', float('nan')):.1f} s, "
          f"from cache: {info['from_cache']}); CSR build {csr_s:.2f} s")
    for k, s in stats.items():
        print(f"  {k:13s} median {s['median'] * 1e3:8.2f} ms  IQR {s['iqr'] * 1e3:6.2f} ms  "
              f"(n={s['n']})")
    for name, s in speedups.items():
        print(f"  sampling {name.replace('_vs_', ' vs ')}: {s['ratio']:.2f}x "
              f"[95% CI {s['ci95'][0]:.2f}-{s['ci95'][1]:.2f}]")
    if share is not None:
        print(f"  sampling is {share:.0%} of sample+gather+step")


if __name__ == "__main__":
    main()
