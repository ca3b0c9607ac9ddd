"""How long does gnnbench's own neighbour sampler take against the training step it feeds?

    python -m gnnbench.benchmarks.sampler --device cuda --out results/sampler-h200.json

Generates (or loads from data_dir) the products-size synthetic graph on the device, then
times, each between device synchronisations, for `--batches` batches of 1024 seeds:
sampling (15/10/5), gathering the batch's features and labels, and one SAGE 3x256 training
step on it. Prints and writes medians with IQR.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

from gnnbench import config, models
from gnnbench.data.synthetic import load_synthetic
from gnnbench.measure.stats import summarize
from gnnbench.measure.timer import timed
from gnnbench.training import steps
from gnnbench.training.optim import make_optimizer
from gnnbench.training.sampler import CSRGraph, NeighborSampler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="synthetic-products")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--data-dir", default=str(Path(config.project_dir()) / "data"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = torch.device(args.device)
    fanouts = [int(f) for f in args.fanouts.split(",")]

    cfg = OmegaConf.load(config.CONF_DIR / "dataset" / f"{args.dataset}.yaml")
    parts = load_synthetic(cfg, Path(args.data_dir), device)
    x, y = parts["x"].to(device), parts["y"].to(device)
    edge_index = parts["edge_index"].to(device)
    _, csr_s = timed(lambda: CSRGraph.from_edge_index(edge_index, x.size(0)), device)
    graph = CSRGraph.from_edge_index(edge_index, x.size(0))
    sampler = NeighborSampler(graph, parts["splits"]["train"].to(device), fanouts,
                              args.batch_size, shuffle=True, seed=0)

    model_cfg = OmegaConf.create({"name": "sage", "_target_": "gnnbench.models.sage.SAGE",
                                  "num_layers": len(fanouts), "hidden": 256,
                                  "dropout": 0.5, "input_dropout": 0.0, "batch_norm": False,
                                  "aggr": "mean"})
    model = models.build_model(model_cfg, x.size(1), int(cfg.num_classes)).to(device)
    optimizer = make_optimizer(model.parameters(), OmegaConf.create({"lr": 0.003,
                                                                     "weight_decay": 0.0}))

    samples: dict[str, list[float]] = {"sample": [], "gather": [], "step": []}
    sizes = []
    it = iter(sampler)
    for i in range(args.warmup + args.batches):
        batch, t_sample = timed(lambda: next(it), device)
        (xb, yb), t_gather = timed(
            lambda b=batch: (x[b.n_id], y[b.n_id[: b.batch_size]]), device)
        _, t_step = timed(lambda b=batch, xb=xb, yb=yb: steps.train_batch_step(
            model, model, optimizer, xb, b.edge_index, None, yb), device)
        if i >= args.warmup:
            samples["sample"].append(t_sample)
            samples["gather"].append(t_gather)
            samples["step"].append(t_step)
            sizes.append((batch.n_id.numel(), batch.edge_index.size(1)))

    stats = {k: summarize(v) for k, v in samples.items()}
    total = [a + b + c for a, b, c in zip(*samples.values(), strict=True)]
    out = {
        "command": "python -m gnnbench.benchmarks.sampler " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda"
        else platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "graph": {"nodes": x.size(0), "directed_edges": edge_index.size(1),
                  **{k: v for k, v in parts["info"].items() if k != "cache_file"}},
        "csr_build_s": csr_s,
        "batch": {"seeds": args.batch_size, "fanouts": fanouts,
                  "median_nodes": sorted(s[0] for s in sizes)[len(sizes) // 2],
                  "median_edges": sorted(s[1] for s in sizes)[len(sizes) // 2]},
        "seconds": stats,
        "whole_batch_s": summarize(total),
        "sampling_share_of_batch": stats["sample"]["median"] / summarize(total)["median"],
    }
    print(f"{out['device']}: graph {x.size(0):,} nodes / {edge_index.size(1):,} edges "
          f"(generated in {parts['info'].get('generate_s', float('nan')):.1f} s, "
          f"from cache: {parts['info']['from_cache']}); CSR build {csr_s:.2f} s")
    for k, s in stats.items():
        print(f"  {k:7s} median {s['median'] * 1e3:8.2f} ms  IQR {s['iqr'] * 1e3:6.2f} ms  "
              f"(n={s['n']})")
    print(f"  sampling is {out['sampling_share_of_batch']:.0%} of sample+gather+step")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
