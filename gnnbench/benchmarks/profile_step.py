"""What bounds a training step? Per step, from torch.profiler, for eager, model-compiled and
whole-step-compiled training: on CUDA, the kernels, the GPU's busy time against the wall
time and the costliest kernels; on the CPU, the ATen ops, their time against the wall time
and the costliest ops.

    python -m gnnbench.benchmarks.profile_step --data-mirror DIR --out profile.json
    python -m gnnbench.benchmarks.profile_step --tiny --device cpu --out profile-cpu.json

A step whose kernels keep the GPU busy for much less than its wall time is bound by
launches and Python, not by the kernels: fewer launches (CUDA graphs) is the remedy. The
step is the runner's own (training/epochs.py), built from the composed config, so what is
profiled is what a run times. `--tiny`: a few steps on small graphs, to check it runs.

Each row also holds the step's floor (benchmarks/floor.py: the bytes it must move at the
least, at `--hbm-gbps`, and its GEMMs at the precision's peak) and the share of it reached,
floor / wall: a busy GPU far from its floor is bound by its kernels, and on CUDA the kernel
time per class (GEMM, SpMM, other, told apart by name) beside the class's floor says which.
The final step of the performance issue, `step csr-op tf32` (the CSR custom op, TF32, the
whole step compiled and replayed as one CUDA graph):

    python -m gnnbench.benchmarks.profile_step --cases experiment=synthetic-arxiv-gcn \
        --variants "eager,step csr-op tf32" --out profile-final.json

The floor is the H200's (4300 GB/s by default): on the CPU its share is of the CPU's wall
time, a figure about the CPU's distance from an H200, not about the CPU.

A neighbour-batch step (`train.batching=neighbor`, a workload preset or an override of a
case) is profiled too: what bounds mini-batch training, and is the step or the sampler the
larger part of a batch? A case is one or more overrides, separated by spaces:

    python -m gnnbench.benchmarks.profile_step --cases "workload=synthetic-products" \
        --models sage --variants "eager,compiled,compiled tf32" --steps 20 --warmup 10 \
        --out profile-products.json
    python -m gnnbench.benchmarks.profile_step --models sage \
        --cases "dataset=synthetic-arxiv regime=ogb-products" \
        --variants "eager,compiled,compiled tf32" --steps 20 --warmup 10 --out profile-nb.json

The second is products' SAGE and batches on the arxiv-size graph: the step of `workload=
synthetic-arxiv train.batching=neighbor train.fanouts=[15,10,5] model.batch_norm=false`
(only the learning rate differs). A case naming no `model=` (nor an experiment preset,
which is renamed per model) takes each of `--models`.

The runner's own sampler draws up to BATCH_POOL batches, each gathered onto the device
(padded under `train.pad_batches=true`) before anything is timed; the step replays the
runner's batch step (Trainer.train_batch) on them in turn, so shapes vary as in training.
The row adds the median milliseconds of sampling (`sample_ms`) and of gathering
(`gather_ms`) one of those batches on their own, each between synchronisations, against the
step's `wall_ms` (with prefetching, the runner overlaps them with the step). floor.py counts
no floor for neighbour batches. Where no floor is counted, the kernel classes on CUDA add
`gather-scatter`, taken out of `other`: the COO aggregation's kernels (scatter, gather,
index_select, index_add, indexing, by ATen's CUDA names and Inductor's), and with them the
few of the loss's and indexing's backward. With a floor the classes stay the floor's, which
the committed results hold; a model floor.py does not count (GAT) gets the new class too.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
from hydra.errors import HydraException
from omegaconf import DictConfig
from torch.profiler import ProfilerActivity, profile

from gnnbench import config, data
from gnnbench.benchmarks import floor
from gnnbench.measure import dynamo
from gnnbench.measure.timer import synchronize, timed
from gnnbench.training import steps
from gnnbench.training.epochs import Trainer
from gnnbench.training.precision import matmul_precision

REDUCE_OVERHEAD = ("compile=true", "compiler.mode=reduce-overhead")
WHOLE_STEP = (*REDUCE_OVERHEAD, "compiler.scope=step")
VARIANTS = {"eager": (), "model reduce-overhead": REDUCE_OVERHEAD,
            "step reduce-overhead": WHOLE_STEP,
            "step csr-op tf32": (*WHOLE_STEP, "graph.layout=csr-op", "train.precision=tf32"),
            # For mini-batches, whose shapes change every batch: no CUDA graphs.
            "compiled": ("compile=true",),
            "compiled tf32": ("compile=true", "train.precision=tf32"),
            "eager tf32": ("train.precision=tf32",)}
# The default of --variants, as it was before the mini-batch ones came.
FULL_BATCH_VARIANTS = ("eager", "model reduce-overhead", "step reduce-overhead",
                       "step csr-op tf32")
# Only CUDA replays a whole step as one graph: on the CPU these variants would profile a
# compiled step that no run of the suite measures.
CAPTURED = ("the whole step is captured as one CUDA graph, which needs CUDA; nothing to "
            "profile on the CPU")
CUDA_ONLY = dict.fromkeys(("step reduce-overhead", "step csr-op tf32"), CAPTURED)
# Kernel classes by name, the first that matches: cuBLAS / CUTLASS GEMMs, then the CSR
# aggregation (cuSPARSE, gnnbench's Triton `_spmm`); the rest is elementwise, reductions, the
# loss and Adam. A COO step's gather / scatter kernels fall under other too: their names
# (scatter, index_add) are also the loss's and indexing's backward.
KERNEL_CLASSES = (("gemm", ("gemm", "cutlass", "xmma", "nvjet")),
                  ("spmm", ("spmm", "csrmm", "cusparse")))
# Where no floor is counted (neighbour batches), the COO aggregation's kernels are told
# apart from the rest of other (the module's docstring says why only there). ATen's CUDA
# kernels: _scatter_gather_elementwise_kernel, indexSelect*Index, indexFunc*Index
# (index_add_), index_elementwise_kernel and indexing_backward_kernel (x[idx] and its
# backward); Inductor's are named after the ops they fuse (triton_poi_fused_index_add_0).
GATHER_SCATTER = ("gather-scatter", ("scatter", "gather", "index_add", "index_select",
                                     "indexselect", "indexfunc", "indexing",
                                     "index_elementwise", "_index_"))
UNFLOORED_CLASSES = (*KERNEL_CLASSES, GATHER_SCATTER)
# Neighbour batches: how many are drawn, gathered and replayed in turn (fewer if fewer steps).
BATCH_POOL = 16
CPU_NOTE = ("CPU: ATen ops' self time against the wall time of the profiled steps; "
            "Inductor's fused C++ kernels are no ATen ops, so a compiled step's share leaves "
            "them out")
# --tiny: the synthetic graphs shrunk to a few thousand nodes (Cora is small already).
TINY_GRAPH = ("dataset.num_nodes=2000", "dataset.num_edges=8000")


def train_step(cfg, device: torch.device, batches: int = BATCH_POOL) \
        -> tuple[Callable, floor.Workload | None, dict]:
    """The training step the runner times for `cfg`, as one call, what its floor is counted
    from (None: a step floor.py does not model) and, for neighbour batches, what the row
    says of them (neighbor_step)."""
    torch.manual_seed(cfg.train.seed)
    task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
    trainer = Trainer(cfg, task, device)
    workload = floor.workload_of(cfg, task, edge_index=trainer.coo[0])
    if trainer.batches is not None:
        step, said = neighbor_step(trainer, batches)
        return step, workload, said
    v = trainer.variants[0]
    if v.step is not None:
        return v.step, workload, {}
    return (lambda: steps.train_step(v.forward, v.model, v.optimizer, task, trainer.edge_index,
                                     trainer.edge_weight)), workload, {}


def neighbor_step(trainer: Trainer, count: int) -> tuple[Callable, dict]:
    """The runner's batch step over `count` batches of its own sampler, gathered beforehand
    so that only the step is timed, replayed in turn: one batch replayed would hide how its
    changing shapes cost (recompiles, allocator, launches). Each batch's sampling and
    gathering are timed on their own, between synchronisations, as the row's medians."""
    device, drawn, sample_s, gather_s = trainer.device, [], [], []
    it = iter(trainer.batches)
    while len(drawn) < count:
        batch, seconds = timed(lambda i=it: next(i, None), device)
        if batch is None:  # the epoch's end: the next epoch's batches, reshuffled
            it = iter(trainer.batches)
            continue
        inputs, gathered = timed(lambda b=batch: trainer._gather(b), device)
        drawn.append(inputs)
        sample_s.append(seconds)
        gather_s.append(gathered)
    v, turn = trainer.variants[0], itertools.cycle(drawn)
    sampling = {k: trainer.batching.get(k) for k in ("sampler", "fanouts", "batch_size",
                                                     "padded")}
    said = {"batching": "neighbor", "batches": count, **sampling,
            "sample_ms": statistics.median(sample_s) * 1e3,
            "gather_ms": statistics.median(gather_s) * 1e3,
            "nodes_per_batch": statistics.median(x.size(0) for x, *_ in drawn),
            "edges_per_batch": statistics.median(e.size(1) for _, e, *_ in drawn)}
    return (lambda: trainer.train_batch(v, next(turn))), said


def measure(cfg, device: torch.device, steps_: int, warmup: int,
            hbm_gbps: float = floor.HBM_GBPS, tflops: float | None = None) -> dict:
    """The profile of `cfg`'s step with its floor: the rates are the H200's unless given."""
    precision = cfg.train.get("precision", "fp32")
    with matmul_precision(precision):
        row, workload = _measure(cfg, device, steps_, warmup)
    if workload is not None:
        row.update(floor=asdict(floor.count(workload).summary(
            floor.rates_for(precision, hbm_gbps, tflops), row.get("wall_ms"))))
    return row


def _measure(cfg, device: torch.device, steps_: int,
             warmup: int) -> tuple[dict, floor.Workload | None]:
    if cfg.compile:  # a fresh dynamo cache, as each run of the runner starts with
        dynamo.reset()
    step, workload, said = train_step(cfg, device, min(BATCH_POOL, warmup + steps_))
    for _ in range(warmup):  # compilation, CUDA-graph capture, allocator warm-up
        step()
    synchronize(device)
    started = time.perf_counter()
    for _ in range(steps_):
        step()
    synchronize(device)
    wall = (time.perf_counter() - started) / steps_
    cuda = device.type == "cuda"
    with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
        started = time.perf_counter()
        for _ in range(steps_):
            step()
        synchronize(device)
        profiled = (time.perf_counter() - started) / steps_
    if cuda:
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        busy = sum(e.device_time for e in kernels) / 1e6 / steps_
        classes = KERNEL_CLASSES if workload is not None else UNFLOORED_CLASSES
        return {**said, "wall_ms": wall * 1e3, "kernels_per_step": len(kernels) / steps_,
                "gpu_busy_ms": busy * 1e3, "gpu_busy_share": busy / wall,
                "kernel_classes_ms": kernel_classes(kernels, steps_, classes),
                "top_kernels": costliest(kernels, steps_, "device_time", "kernel")}, workload
    # Self time: an op's time without the ops it calls, so the sum counts every moment once.
    # Recording every op slows a CPU step, so its share is of the profiled steps' wall time.
    ops = [e for e in prof.events() if e.name.startswith("aten::")]
    busy = sum(e.self_cpu_time_total for e in ops) / 1e6 / steps_
    return {**said, "wall_ms": wall * 1e3, "profiled_wall_ms": profiled * 1e3,
            "ops_per_step": len(ops) / steps_, "cpu_op_ms": busy * 1e3,
            "cpu_op_share": busy / profiled,
            "top_ops": costliest(ops, steps_, "self_cpu_time_total", "op")}, workload


def kernel_class(name: str, classes: tuple = KERNEL_CLASSES) -> str:
    lowered = name.lower()
    return next((kind for kind, marks in classes if any(m in lowered for m in marks)),
                "other")


def kernel_classes(kernels: list, steps_: int,
                   classes: tuple = KERNEL_CLASSES) -> dict[str, float]:
    """GPU time per step of each kernel class: the floor's (KERNEL_CLASSES), or where no
    floor is counted UNFLOORED_CLASSES."""
    out = dict.fromkeys((*(kind for kind, _ in classes), "other"), 0.0)
    for e in kernels:
        out[kernel_class(e.name, classes)] += e.device_time / 1e3 / steps_
    return out


def costliest(events: list, steps_: int, time_of: str, label: str,
              count: int = 8) -> list[dict]:
    """Where a step's time goes: the kernels (or CPU ops) with the most time per step.
    Kernel names are CUDA's (eager: ATen's kernels; compiled: Inductor's fused Triton
    kernels, named after the ops they fuse, e.g. `..._index_add_...` for a scatter). On the
    CPU, Inductor's fused C++ kernels are no ATen ops: a compiled step's share is lower."""
    total = sum(getattr(e, time_of) for e in events) or 1.0
    per_name: dict[str, float] = {}
    for e in events:
        per_name[e.name] = per_name.get(e.name, 0.0) + getattr(e, time_of)
    ranked = sorted(per_name.items(), key=lambda item: -item[1])[:count]
    return [{label: name[:160], "ms_per_step": t / 1e3 / steps_, "share": t / total}
            for name, t in ranked]


def overrides_of(case: str, model: str, args: argparse.Namespace) -> list[str]:
    """A case (overrides separated by spaces) with one of the models: an experiment preset
    names its model (experiment=synthetic-arxiv-gcn -> -sage); else the case takes
    `model=`, unless it names one itself."""
    out = [o.replace("-gcn", f"-{model}") if o.startswith("experiment=") and model != "gcn"
           else o for o in case.split()]
    if not any(o.startswith(("model=", "experiment=")) for o in out):
        out.append(f"model={model}")
    out += [f"data_dir={args.data_dir}", f"train.device={args.device}", "wandb.mode=disabled"]
    if args.tiny and "synthetic" in case:
        out += TINY_GRAPH
    return out + ([f"data_mirror={args.data_mirror}"] if args.data_mirror else [])


def compose(case: str, model: str, variant: str, args: argparse.Namespace) -> DictConfig:
    """The case's config with the model and the variant, checked as the runner checks it;
    a case Hydra or the checks refuse ends the command with one line naming it."""
    try:
        cfg = config.compose_config([*overrides_of(case, model, args), *VARIANTS[variant]])
        config.validate(cfg)
    except (HydraException, config.ConfigError) as error:
        # Hydra's choices come on lines of their own, then where it searched.
        reason = " ".join(str(error).split()).partition(" Config search path")[0]
        raise SystemExit(f"--cases {case!r} with model={model}, variant {variant!r}: "
                         f"{reason}") from None
    return cfg


def show(row: dict) -> None:
    if "skipped" in row:
        print(f"{row['case']:24s} {row['variant']:22s} skipped: {row['skipped']}", flush=True)
        return
    cuda = "gpu_busy_ms" in row
    count, busy, share, top = (("kernels_per_step", "gpu_busy_ms", "gpu_busy_share",
                                "top_kernels") if cuda else
                               ("ops_per_step", "cpu_op_ms", "cpu_op_share", "top_ops"))
    print(f"{row['case']:24s} {row['variant']:22s} wall {row['wall_ms']:7.3f} ms  "
          f"{'kernels' if cuda else 'ops'} {row[count]:6.1f}  {'GPU busy' if cuda else 'in ops'} "
          f"{row[busy]:7.3f} ms ({row[share]:.0%})", flush=True)
    if row.get("batching") == "neighbor":
        print(f"    one batch on its own: sampling {row['sample_ms']:.3f} ms, gathering "
              f"{row['gather_ms']:.3f} ms; {row['batches']} batches, median "
              f"{row['nodes_per_batch']:.0f} nodes, {row['edges_per_batch']:.0f} edges")
    show_floor(row, cuda)
    for k in row[top]:
        print(f"    {k['ms_per_step']:7.3f} ms {k['share']:5.1%}  "
              f"{k['kernel' if cuda else 'op'][:100]}")


def show_floor(row: dict, cuda: bool) -> None:
    """The floor line; on CUDA, each kernel class's time against its floor."""
    if row.get("floor") is None:
        which = "neighbour batches" if row.get("batching") else "this model"
        print(f"    floor: not counted for {which} (benchmarks/floor.py)")
        if cuda:
            parts = [f"{kind} {ms:.3f} ms" for kind, ms in row.get("kernel_classes_ms").items()]
            print(f"    kernels by class: {' | '.join(parts)}")
        return
    said = floor.Summary(**row.get("floor"))
    print(f"    {said.said(row.get('wall_ms'), 'GPU wall' if cuda else 'CPU wall')}"
          f"{'' if cuda else '; the floor is the GPU of --hbm-gbps'}")
    if cuda:
        measured = row.get("kernel_classes_ms", {})
        parts = [f"{kind} {measured.get(kind, 0.0):.3f} ms (floor {low:.3f}-{high:.3f})"
                 for kind, (low, high) in said.kernel_classes_ms.items()]
        print(f"    kernels by class: {' | '.join(parts)}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="dataset=cora;experiment=synthetic-arxiv-gcn",
                        help="cases separated by ';', each one or more Hydra overrides "
                             "separated by spaces")
    parser.add_argument("--models", default="gcn,sage")
    parser.add_argument("--variants", default=",".join(FULL_BATCH_VARIANTS),
                        help=f"comma-separated, of: {', '.join(VARIANTS)} (default: "
                             f"{', '.join(FULL_BATCH_VARIANTS)})")
    parser.add_argument("--hbm-gbps", type=float, default=floor.HBM_GBPS,
                        help="memory bandwidth of the floor (default: the H200's, as measured "
                             "by a device-to-device copy)")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="GEMM peak of the floor (default: the H200's datasheet peak for "
                             "the step's precision: fp32 67, tf32 494, bf16 989)")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=30, help="untimed steps first")
    parser.add_argument("--device", default="auto", help="auto (CUDA if present) | cpu | cuda")
    parser.add_argument("--tiny", action="store_true",
                        help="3 steps after 3 untimed, synthetic graphs of 2,000 nodes")
    parser.add_argument("--data-mirror", default=None)
    parser.add_argument("--data-dir", default=str(Path(config.project_dir()) / "data"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.tiny:
        args.steps, args.warmup = min(args.steps, 3), min(args.warmup, 3)
    unknown = set(args.variants.split(",")) - set(VARIANTS)
    if unknown:
        parser.error(f"--variants: no variant {', '.join(sorted(unknown))}; "
                     f"choose from: {', '.join(VARIANTS)}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device = config.resolve_device(args.device)
    if device.type == "cpu":
        print(CPU_NOTE, flush=True)
    rows = []
    for case in args.cases.split(";"):
        for model in args.models.split(","):
            for variant in args.variants.split(","):
                cfg = compose(case, model, variant, args)
                row = {"case": f"{cfg.model.name}/{cfg.dataset.name}", "variant": variant,
                       "overrides": case}
                if variant in CUDA_ONLY and device.type != "cuda":
                    row.update(skipped=CUDA_ONLY[variant])
                else:
                    row.update(measure(cfg, device, args.steps, args.warmup, args.hbm_gbps,
                                       args.peak_tflops))
                rows.append(row)
                show(row)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "args": vars(args) | {"out": str(args.out)}, "torch": torch.__version__,
            "activity": device.type, **({"note": CPU_NOTE} if device.type == "cpu" else {}),
            "device": torch.cuda.get_device_name(device) if device.type == "cuda"
            else platform.processor() or platform.machine(), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
