"""Which set-up of PyG's stock EdgeCNN and GAT learns Cora (eager, 200 epochs, test accuracy
at the best validation epoch, mean over seeds). Run from the repository root:
    python results/h200-own-gnn/setups.py > results/h200-own-gnn/setups.txt
Each line: model, overrides, the seeds' accuracies and their mean."""

import itertools
import statistics
import sys
import tempfile
from pathlib import Path

from gnnbench import config
from gnnbench.runner import run_experiment

BASE = ["dataset=cora", "wandb.mode=disabled", "data_dir=/tmp/data", "compile=false"]


def accuracy(model: str, extra: list[str], seeds: range) -> list[float]:
    accs = []
    for seed in seeds:
        cfg = config.compose_config([*BASE, f"model={model}", f"train.seed={seed}", *extra])
        record = run_experiment(cfg, Path(tempfile.mkdtemp()))
        accs.append(record["accuracy"]["test_at_best_val"] if record["status"] == "ok"
                    else float("nan"))
    return accs


def report(model: str, extra: list[str], seeds: range) -> None:
    accs = accuracy(model, extra, seeds)
    print(f"{model:12s} {' '.join(extra) or '(as configured)':75s} "
          f"{' '.join(f'{a:.3f}' for a in accs)}  mean {statistics.fmean(accs):.4f}", flush=True)


if __name__ == "__main__":
    which = sys.argv[1:] or ["gat", "edgecnn"]
    if "gat" in which:
        for model, epochs in itertools.product(("gat", "pyg-gat"), (200, 400)):
            report(model, [f"train.epochs={epochs}"], range(10))
    if "edgecnn" in which:
        report("pyg-edgecnn", [], range(3))
        for norm, aggr, hidden, wd, layers in itertools.product(
                ("batch_norm", "null"), ("max", "mean"), (16, 64), (5e-4, 5e-3), (1, 2)):
            report("pyg-edgecnn", [f"model.norm={norm}", f"+model.aggr={aggr}",
                                   f"model.hidden_channels={hidden}",
                                   f"train.weight_decay={wd}", f"model.num_layers={layers}"],
                   range(2))
