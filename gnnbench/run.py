"""One experiment: load the data, build the model, (compile it), train, measure, record.

Whatever happens, `results.json` is written: a failed run is a result too.
"""

from __future__ import annotations

import os
import platform
import time
import traceback
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from gnnbench import compile as compiler
from gnnbench import config, data, loop, memory, models, timing, tracking
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
        "epochs": [],
    }


def _timing(records: list[dict], warmup: int, wall_s: float) -> dict:
    train = [r["train_s"] for r in records]
    evals = [r["eval_s"] for r in records]
    steady_train, steady_eval = timing.summarize(train[warmup:]), timing.summarize(evals[warmup:])
    first_epoch = train[0] + evals[0]
    overhead = first_epoch - (steady_train["median"] + steady_eval["median"])
    return {
        "warmup_epochs": warmup,
        "train_step_s": steady_train,
        "eval_s": steady_eval,
        "first_epoch_s": first_epoch,
        "first_train_step_s": train[0],
        "first_eval_s": evals[0],
        "first_epoch_overhead_s": overhead,
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
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr,
                                 weight_decay=cfg.train.weight_decay)
    forward = compiler.compile_model(model, cfg.compiler) if cfg.compile else model

    memory.reset_peak(device)
    progress = Progress(cfg.train.epochs, label=result["name"])
    records = result["epochs"]
    try:
        for epoch in range(cfg.train.epochs):
            loss, train_s = timing.timed(
                lambda: loop.train_step(forward, model, optimizer, task, edge_index, edge_weight),
                device)
            pred, eval_s = timing.timed(
                lambda: loop.predict(forward, model, task, edge_index, edge_weight), device)
            acc = loop.split_accuracy(pred, task)
            record = {"epoch": epoch, "loss": loss.item(), "train_s": train_s, "eval_s": eval_s,
                      "train_acc": acc["train"], "val_acc": acc["val"], "test_acc": acc["test"]}
            if recorder is not None:
                record["recompiles"] = recorder.snapshot()["recompiles"]
            records.append(record)
            progress.update(record)
    finally:
        progress.close()
        result["memory"] = memory.peak(device)
        if recorder is not None:
            result["compile"] = recorder.snapshot()
    result["accuracy"] = _accuracy(records)


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def run_experiment(cfg: DictConfig, out_dir: Path) -> dict:
    """Run one configuration and write `out_dir/results.json`; never raises for a failed run."""
    started = time.perf_counter()
    result = _new_result(cfg)
    result["name"] = config.run_name(cfg.model.name, cfg.dataset.name, cfg.compile,
                                     cfg.compiler.mode, cfg.train.seed)
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
        # The first epoch pays for tracing and code generation; steady state does not.
        result["timing"]["compile_overhead_s"] = (
            result["timing"]["first_epoch_overhead_s"] if cfg.compile else None)
    else:
        result["timing"] = {"wall_s": wall_s, "compile_overhead_s": None}
    tracking.write_results(result, out_dir)
    return result


