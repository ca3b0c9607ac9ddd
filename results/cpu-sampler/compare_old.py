"""Old (aa371c8) vs new sampler on one graph, in one process, interleaved per batch.

    git show aa371c8:gnnbench/training/sampler.py > /tmp/old_sampler.py
    OMP_NUM_THREADS=1 python results/cpu-sampler/compare_old.py /tmp/old_sampler.py \
        --dataset synthetic-arxiv --data-dir /tmp/perf-data --batches 60 --out old-vs-new-arxiv.json

Every batch is sampled by all three samplers, in an order that rotates per batch: the old
code, the new code with dedup="unique" and with dedup="mark" (the default). Seeds are the
same chunks; the random stream differs between old and new (draw order changed), so their
batches are of the same distribution, not identical. Also counts, for one batch, the aten
ops each runs (a proxy for kernel launches on a GPU) and those that read a device value
back to the host (a stream synchronisation on CUDA).
"""

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from omegaconf import OmegaConf
from torch.utils._python_dispatch import TorchDispatchMode

from gnnbench import config
from gnnbench.data.synthetic import load_synthetic
from gnnbench.measure.stats import bootstrap_ratio_ci, summarize
from gnnbench.training import sampler as new

SYNCING = {"nonzero", "_unique2", "unique_dim", "unique_consecutive", "_local_scalar_dense",
           "masked_select"}
VIEWS = {"view", "slice", "select", "unsqueeze", "expand", "alias", "as_strided",
         "_reshape_alias", "t", "transpose"}


class Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old_sampler")
    p.add_argument("--dataset", default="synthetic-arxiv")
    p.add_argument("--data-dir", default="/tmp/perf-data")
    p.add_argument("--batches", type=int, default=60)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    spec = importlib.util.spec_from_file_location("old_sampler", args.old_sampler)
    old = importlib.util.module_from_spec(spec)
    sys.modules["old_sampler"] = old
    spec.loader.exec_module(old)

    cfg = OmegaConf.load(config.CONF_DIR / "dataset" / f"{args.dataset}.yaml")
    parts = load_synthetic(cfg, Path(args.data_dir), torch.device("cpu"))
    g = new.CSRGraph.from_edge_index(parts["edge_index"], parts["x"].size(0))
    og = old.CSRGraph(g.rowptr, g.col, g.perm, g.num_nodes)
    train = parts["splits"]["train"]
    chunks = train[torch.randperm(train.numel(), generator=torch.Generator().manual_seed(1))]
    chunks = chunks.split(1024)
    fan = [15, 10, 5]
    gens = {k: torch.Generator().manual_seed(0) for k in ("old", "unique", "mark")}
    marks = new.NodeMarks(g.num_nodes, "cpu")
    run = {
        "old": lambda c: old.sample_neighbors(og, c, fan, gens["old"]),
        "unique": lambda c: new.sample_neighbors(g, c, fan, gens["unique"]),
        "mark": lambda c: new.sample_neighbors(g, c, fan, gens["mark"], marks),
    }
    names = list(run)
    times = {k: [] for k in names}
    sizes = {k: [] for k in names}
    for i in range(args.warmup + args.batches):
        chunk = chunks[i % (len(chunks) - 1)]  # the last, short chunk left out
        for name in names[i % 3:] + names[:i % 3]:
            t = time.perf_counter()
            b = run[name](chunk)
            dt = time.perf_counter() - t
            if i >= args.warmup:
                times[name].append(dt)
                sizes[name].append([b.n_id.numel(), b.edge_index.size(1)])
    counts = {}
    reads = []
    host = new._host
    new._host = lambda t: reads.append(1) or host(t)  # tolist() dispatches no aten op
    for name in names:
        reads.clear()
        with Ops() as o:
            run[name](chunks[0])
        total = sum(o.ops.values())
        syncing = {k: v for k, v in o.ops.items() if k in SYNCING}
        counts[name] = {"aten_ops": total,
                        "non_view_ops": total - sum(v for k, v in o.ops.items() if k in VIEWS),
                        "syncing_ops": syncing, "tolist_reads": len(reads),
                        "host_syncs": sum(syncing.values()) + len(reads)}
    new._host = host
    stats = {k: summarize(v) for k, v in times.items()}
    out = {
        "command": "OMP_NUM_THREADS=" + str(torch.get_num_threads()) + " python "
                   + " ".join(sys.argv),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "device": f"cpu ({platform.machine()}), {torch.get_num_threads()} torch thread(s)",
        "torch": torch.__version__,
        "graph": {"dataset": args.dataset, "nodes": g.num_nodes, "directed_edges": g.col.numel()},
        "batch": {"seeds": 1024, "fanouts": fan,
                  "median_nodes": {k: statistics.median(s[0] for s in v) for k, v in sizes.items()},
                  "median_edges": {k: statistics.median(s[1] for s in v) for k, v in sizes.items()}},
        "seconds": stats,
        "speedup_vs_old": {k: {"ratio": stats["old"]["median"] / stats[k]["median"],
                               "ci95": bootstrap_ratio_ci(times["old"], times[k])}
                           for k in ("unique", "mark")},
        "ops_per_batch": counts,
    }
    for k, s in stats.items():
        print(f"{k:7s} median {s['median'] * 1e3:8.2f} ms  IQR {s['iqr'] * 1e3:6.2f}  (n={s['n']})")
    print(json.dumps(out["speedup_vs_old"]), json.dumps(counts))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
