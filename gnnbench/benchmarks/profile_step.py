"""What bounds a training step? Kernel count, GPU busy time and wall time per step, for
eager, model-compiled and whole-step-compiled training, from torch.profiler.

    python -m gnnbench.benchmarks.profile_step --data-mirror DIR --out results/profile.json

A step whose kernels keep the GPU busy for much less than its wall time is bound by
launches and Python, not by the kernels: fewer launches (CUDA graphs) is the remedy.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from gnnbench import config, data, models
from gnnbench.training import compilation
from gnnbench.training.optim import make_optimizer

VARIANTS = {"eager": None, "model reduce-overhead": "model", "step reduce-overhead": "step"}


def measure(cfg, device: torch.device, scope: str | None, steps: int) -> dict:
    torch.manual_seed(0)
    task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
    edge_index, edge_weight = models.graph_inputs(cfg.model, task.edge_index, task.num_nodes)
    model = models.build_model(cfg.model, task.num_features, task.num_classes).to(device)
    optimizer = make_optimizer(model.parameters(), cfg.train, capturable=scope == "step")
    if scope == "step":
        loss_fn, opt_step = compilation.compile_step_parts(
            functools.partial(steps.loss_of, model), optimizer, cfg.compiler)

        step = compilation.CapturedStep(functools.partial(
            steps.whole_step, loss_fn, opt_step, model, optimizer, task.x, edge_index,
            edge_weight, task.splits["train"], task.y))
    else:
        forward = compilation.compile_model(model, cfg.compiler) if scope else model

        def step():
            return steps.train_step(forward, model, optimizer, task, edge_index, edge_weight)

    for _ in range(30):
        step()
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - started) / steps
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy = sum(e.device_time for e in kernels) / 1e6 / steps
    return {"wall_ms": wall * 1e3, "kernels_per_step": len(kernels) / steps,
            "gpu_busy_ms": busy * 1e3, "gpu_busy_share": busy / wall,
            "top_kernels": top_kernels(kernels, steps)}


def top_kernels(kernels: list, steps: int, count: int = 8) -> list[dict]:
    """Where a kernel-bound step's GPU time goes: the kernels with the most time per step.
    Names are CUDA's (eager: ATen's kernels; compiled: Inductor's fused Triton kernels,
    named after the ops they fuse, e.g. `..._index_add_...` for a scatter)."""
    total = sum(e.device_time for e in kernels)
    per_name: dict[str, float] = {}
    for e in kernels:
        per_name[e.name] = per_name.get(e.name, 0.0) + e.device_time
    ranked = sorted(per_name.items(), key=lambda item: -item[1])[:count]
    return [{"kernel": name[:160], "ms_per_step": t / 1e3 / steps, "share": t / total}
            for name, t in ranked]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="dataset=cora;experiment=synthetic-arxiv-gcn")
    parser.add_argument("--models", default="gcn,sage")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--data-mirror", default=None)
    parser.add_argument("--data-dir", default=str(Path(config.project_dir()) / "data"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = torch.device("cuda")
    rows = []
    for case in args.cases.split(";"):
        for model in args.models.split(","):
            overrides = [case, f"data_dir={args.data_dir}", "compilation.mode=reduce-overhead"]
            if case.startswith("dataset="):
                overrides.append(f"model={model}")
            elif model != "gcn":
                overrides = [case.replace("-gcn", f"-{model}"), *overrides[1:]]
            if args.data_mirror:
                overrides.append(f"data_mirror={args.data_mirror}")
            cfg = config.compose_config(overrides)
            for variant, scope in VARIANTS.items():
                row = {"case": f"{cfg.model.name}/{cfg.dataset.name}", "variant": variant,
                       **measure(cfg, device, scope, args.steps)}
                rows.append(row)
                print(f"{row['case']:24s} {variant:22s} wall {row['wall_ms']:7.3f} ms  "
                      f"kernels {row['kernels_per_step']:6.1f}  GPU busy "
                      f"{row['gpu_busy_ms']:7.3f} ms ({row['gpu_busy_share']:.0%})", flush=True)
                for k in row["top_kernels"]:
                    print(f"    {k['ms_per_step']:7.3f} ms {k['share']:5.1%}  {k['kernel'][:100]}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)},
                                        "torch": torch.__version__,
                                        "device": torch.cuda.get_device_name(), "rows": rows},
                                       indent=2) + "\n")


if __name__ == "__main__":
    main()
