"""One experiment: load the data, build the model, (compile it), train, measure, record.

Whatever happens, `results.json` is written: a failed run is a result too.
"""

from __future__ import annotations

import copy
import functools
import os
import platform
import time
import traceback
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from gnnbench import compile as compiler
from gnnbench import config, data, loop, memory, models, timing, tracking
from gnnbench import sampler as sampling
from gnnbench.progress import Progress


def environment(device: torch.device | None) -> dict:
    import torch_geometric

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_geometric": torch_geometric.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "device": str(device) if device is not None else None,
        "device_name": platform.processor() or platform.machine(),
        "cuda": torch.version.cuda,
    }
    if device is not None and device.type == "cuda":
        env["device_name"] = torch.cuda.get_device_name(device)
    return env


def _new_result(cfg: DictConfig) -> dict:
    return {
        "status": "ok",
        "reason": None,
        "config": OmegaConf.to_container(cfg, resolve=True),
        "env": environment(None),
        "dataset": None,
        "timing": None,
        "compile": None,
        "memory": None,
        "accuracy": None,
        "comparison": None,
        "paired": None,
        "batching": {"mode": "full"},
        "cuda_graphs": None,
        "epochs": [],
    }


def _timing(records: list[dict], warmup: int, wall_s: float) -> dict:
    train = [r["train_s"] for r in records]
    evals = [r["eval_s"] for r in records]
    steady_train, steady_eval = timing.summarize(train[warmup:]), timing.summarize(evals[warmup:])
    first_epoch = train[0] + evals[0]
    steady_epoch = steady_train["median"] + steady_eval["median"]
    # The one-off cost is not all in epoch 0: CUDA graphs are recorded on a later call
    # (cudagraph trees on the 2nd, a captured whole step on the 4th). So it is the excess of
    # every warm-up epoch over the steady epoch.
    one_off = sum(train[i] + evals[i] - steady_epoch for i in range(max(warmup, 1)))
    stages = {f"{stage}_s": timing.summarize([r[f"{stage}_s"] for r in records[warmup:]])
              for stage in ("sample", "transfer", "compute") if f"{stage}_s" in records[0]}
    return {
        **stages,
        "warmup_epochs": warmup,
        "train_step_s": steady_train,
        "eval_s": steady_eval,
        "first_epoch_s": first_epoch,
        "first_train_step_s": train[0],
        "first_eval_s": evals[0],
        "first_epoch_overhead_s": first_epoch - steady_epoch,
        "warmup_overhead_s": one_off,
        "wall_s": wall_s,
    }


def _accuracy(records: list[dict]) -> dict:
    best = max(records, key=lambda r: r["val_acc"])  # first epoch reaching the best val
    last = records[-1]
    return {
        "final": {"train": last["train_acc"], "val": last["val_acc"], "test": last["test_acc"]},
        "best_val": best["val_acc"],
        "best_epoch": best["epoch"],
        "test_at_best_val": best["test_acc"],
    }


def _train(cfg: DictConfig, device: torch.device, result: dict, recorder) -> None:
    torch.manual_seed(cfg.train.seed)
    task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
    result["dataset"] = task.info
    edge_index, edge_weight = models.graph_inputs(cfg.model, task.edge_index, task.num_nodes)
    model = models.build_model(cfg.model, task.num_features, task.num_classes).to(device)
    whole_step = cfg.compile and cfg.compiler.scope == "step"
    result["cuda_graphs"] = (compiler.cuda_graphs(cfg.compiler, device, cfg.train.batching)
                             if cfg.compile else "none")
    # A CUDA-graphed optimizer step needs its state on the device (capturable).
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr,
                                 weight_decay=cfg.train.weight_decay,
                                 capturable=whole_step and device.type == "cuda")
    # The paired twin starts from the same weights and trains eagerly beside the compiled
    # model, epochs interleaved, so both see the same machine state.
    twin = copy.deepcopy(model) if cfg.train.paired and cfg.compile else None
    forward = compiler.compile_model(model, cfg.compiler) if cfg.compile else model
    variants = [("", forward, model, optimizer)]
    if twin is not None:
        twin_optimizer = torch.optim.Adam(twin.parameters(), lr=cfg.train.lr,
                                          weight_decay=cfg.train.weight_decay)
        variants.append(("eager_", twin, twin, twin_optimizer))
    compiled_step = None
    if whole_step:
        full = cfg.train.batching == "full"
        loss_fn, optimizer_step = compiler.compile_step_parts(
            functools.partial(loop.loss_of if full else loop.batch_loss_of, model), optimizer,
            cfg.compiler)
        compiled_step = functools.partial(loop.whole_step, loss_fn, optimizer_step, model,
                                          optimizer)
        if full:
            compiled_step = functools.partial(compiled_step, task.x, edge_index, edge_weight,
                                              task.splits["train"], task.y)
        if result["cuda_graphs"] == "whole step":
            compiled_step = compiler.CapturedStep(compiled_step)

    def train_step(fwd, mdl, opt) -> torch.Tensor:
        if compiled_step is not None and mdl is model:
            return compiled_step()
        return loop.train_step(fwd, mdl, opt, task, edge_index, edge_weight)

    timers = {prefix: timing.EpochTimer(device) for prefix, *_ in variants}

    def epoch_of(prefix: str, fwd, mdl, opt, epoch: int) -> dict:
        if twin is not None:  # the same dropout stream for both models of a pair
            torch.manual_seed(cfg.train.seed * 100_003 + epoch)
        timer = timers[prefix]
        loss = timer.measure("train_s", lambda: train_step(fwd, mdl, opt))
        pred = timer.measure("eval_s", lambda: loop.predict(fwd, mdl, task, edge_index,
                                                            edge_weight))
        # The reads a user's loop makes anyway come first; the timer's read then finds its
        # events complete and costs no extra wait.
        acc, loss_value = loop.split_accuracy(pred, task), loss.item()
        seconds = timer.read()
        return {f"{prefix}loss": loss_value, f"{prefix}train_s": seconds["train_s"],
                f"{prefix}eval_s": seconds["eval_s"], f"{prefix}train_acc": acc["train"],
                f"{prefix}val_acc": acc["val"], f"{prefix}test_acc": acc["test"]}

    if cfg.train.batching == "neighbor":
        epoch_of = _neighbor_epochs(cfg, device, result, task, edge_index, edge_weight,
                                    compiled_step)

    memory.reset_peak(device)
    progress = Progress(cfg.train.epochs, label=result["name"])
    records = result["epochs"]
    try:
        for epoch in range(cfg.train.epochs):
            timing.synchronize(device)
            started = time.perf_counter()
            record = {"epoch": epoch}
            order = variants if epoch % 2 == 0 else variants[::-1]  # alternate who goes first
            for prefix, fwd, mdl, opt in order:
                record.update(epoch_of(prefix, fwd, mdl, opt, epoch))
            if recorder is not None:
                record["recompiles"] = recorder.recompiles()
                before = records[-1]["recompiles"] if records else 0
                record["recompiles_this_epoch"] = record["recompiles"] - before
            timing.synchronize(device)
            # The whole epoch as a user's loop would see it, the runner's bookkeeping included.
            record["epoch_wall_s"] = time.perf_counter() - started
            records.append(record)
            progress.update(record)
    finally:
        progress.close()
        result["memory"] = memory.peak(device)
        if recorder is not None:
            result["compile"] = recorder.snapshot()
    result["accuracy"] = _accuracy(records)
    if twin is not None:
        eager_records = [{k.removeprefix("eager_"): v for k, v in r.items()
                          if k == "epoch" or k.startswith("eager_")} for r in records]
        result["paired"] = {"accuracy": _accuracy(eager_records),
                            "loss_max_abs_diff": max(abs(r["loss"] - r["eager_loss"])
                                                     for r in records)}


def _neighbor_epochs(cfg: DictConfig, device: torch.device, result: dict, task: data.Task,
                     edge_index: torch.Tensor, edge_weight: torch.Tensor | None,
                     compiled_step):
    """Mini-batch epochs: each batch's sampling, gathering onto the device and compute are
    timed apart (each between synchronisations); inference is layer-wise over all nodes.
    `compiled_step`: the whole step of scope=step, taking a batch's inputs."""
    train = cfg.train
    kind = train.sampler if train.sampler != "auto" else (
        "pyg" if sampling.pyg_available() else "gnnbench")
    graph = sampling.CSRGraph.from_edge_index(edge_index, task.num_nodes)
    if kind == "pyg":
        batches = sampling.PygNeighborBatches(edge_index, task.num_nodes, task.splits["train"],
                                              train.fanouts, train.batch_size, train.seed)
    else:
        batches = sampling.NeighborSampler(graph, task.splits["train"], train.fanouts,
                                           train.batch_size, shuffle=True, seed=train.seed)
    result["batching"] = {"mode": "neighbor", "sampler": kind, "fanouts": list(train.fanouts),
                          "batch_size": train.batch_size, "batches_per_epoch": len(batches)}

    def gather(batch: sampling.Batch) -> tuple:
        batch = batch.to(device)
        weight = edge_weight[batch.e_id] if edge_weight is not None else None
        return (task.x[batch.n_id], batch.edge_index, weight,
                task.y[batch.n_id[: batch.batch_size]])

    timer = timing.EpochTimer(device)

    def epoch_of(prefix: str, fwd, mdl, opt, epoch: int) -> dict:
        total, count, it = torch.zeros((), device=device), 0, iter(batches)
        while (batch := timer.measure("sample_s", lambda: next(it, None))) is not None:
            inputs = timer.measure("transfer_s", lambda b=batch: gather(b))
            loss = timer.measure("compute_s", lambda x=inputs: (
                compiled_step(*x) if compiled_step is not None
                else loop.train_batch_step(fwd, mdl, opt, *x)))
            total, count = total + loss, count + 1
        pred = timer.measure("eval_s", lambda: loop.layerwise_predict(
            mdl, task.x, graph, edge_weight, train.eval_chunk))
        seconds, acc = timer.read(), loop.split_accuracy(pred, task)
        stages = {k: seconds[k] for k in ("sample_s", "transfer_s", "compute_s")}
        return {"loss": (total / max(count, 1)).item(), "train_s": sum(stages.values()),
                "eval_s": seconds["eval_s"], **stages, "batches": count,
                "train_acc": acc["train"], "val_acc": acc["val"], "test_acc": acc["test"]}

    return epoch_of


def skipped_result(cfg: DictConfig, same_as: dict) -> dict:
    """A sweep job that would repeat an eager run already made in this sweep."""
    result = _new_result(cfg)
    result["name"] = same_as["name"]
    result.update(status="skipped", reason=f"same eager run as {same_as['out_dir']}",
                  env=same_as["env"], timing={"wall_s": 0.0, "compile_overhead_s": None})
    return result


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def compare_to_eager(result: dict, eager: dict) -> dict:
    """How a compiled run stands against its eager reference (a paired twin or an eager run
    of the same configuration)."""
    warmup = result["timing"]["warmup_epochs"]
    paired = eager is result
    prefix = "eager_" if paired else ""
    eager_steps = [r[f"{prefix}train_s"] for r in eager["epochs"][warmup:]]
    compiled_steps = [r["train_s"] for r in result["epochs"][warmup:]]
    out = timing.compare(eager_steps, compiled_steps, result["timing"]["compile_overhead_s"])
    eager_acc = eager["paired"]["accuracy"] if paired else eager["accuracy"]
    out["test_acc_delta"] = result["accuracy"]["test_at_best_val"] - eager_acc["test_at_best_val"]
    out["eager_test_acc"] = eager_acc["test_at_best_val"]
    # One process holds both models in a paired run: their peaks cannot be told apart.
    out["memory_ratio"] = (None if paired else
                           result["memory"]["peak_bytes"] / eager["memory"]["peak_bytes"])
    out["reference"] = "paired eager twin" if paired else eager["name"]
    return out


def run_experiment(cfg: DictConfig, out_dir: Path, *, eager_reference: dict | None = None,
                   wandb_group: str | None = None) -> dict:
    """Run one configuration, write `out_dir/results.json`, then log it to W&B; never raises
    for a failed run. `eager_reference`: a finished eager run of the same configuration."""
    started = time.perf_counter()
    result = _new_result(cfg)
    result["name"] = config.run_name(cfg.model.name, cfg.dataset.name, cfg.compile,
                                     cfg.compiler.mode, cfg.compiler.scope, cfg.train.seed)
    try:
        config.validate(cfg)
        device = config.resolve_device(cfg.train.device)
        result["env"] = environment(device)
        if cfg.compile:
            with compiler.DynamoRecorder() as recorder:
                _train(cfg, device, result, recorder)
        else:
            _train(cfg, device, result, None)
    except config.ConfigError as exc:
        result["status"], result["reason"] = "error", str(exc)
    except Exception as exc:  # a failed run is an outcome: classify it and keep going
        result["status"], result["reason"] = compiler.classify_failure(exc) or (
            "error", _one_line(exc))
        result["traceback"] = traceback.format_exc()
    wall_s = time.perf_counter() - started
    if result["epochs"]:
        warmup = min(cfg.train.warmup_epochs, len(result["epochs"]) - 1)
        result["timing"] = _timing(result["epochs"], warmup, wall_s)
        # The warm-up epochs pay for tracing, code generation and CUDA-graph recording.
        # Without epochs after the warm-up (a run that failed early) there is no steady state.
        steady = len(result["epochs"]) > cfg.train.warmup_epochs
        result["timing"]["compile_overhead_s"] = (
            result["timing"]["warmup_overhead_s"] if cfg.compile and steady else None)
    else:
        result["timing"] = {"wall_s": wall_s, "compile_overhead_s": None}
    if result["status"] == "ok" and cfg.compile:
        if result.get("paired"):
            result["comparison"] = compare_to_eager(result, result)
        elif eager_reference is not None and eager_reference["status"] == "ok":
            result["comparison"] = compare_to_eager(result, eager_reference)
    tracking.write_results(result, out_dir)
    group = wandb_group or cfg.wandb.group or f"{cfg.model.name}-{cfg.dataset.name}"
    result["wandb_dir"] = tracking.publish_to_wandb(
        result, OmegaConf.to_container(cfg, resolve=True), out_dir, group)
    tracking.write_results(result, out_dir)
    return result


