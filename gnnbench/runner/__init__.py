"""One experiment: validate, load the data, build and (maybe) compile, train, measure,
record, compare with eager records of the same setting, publish.

Whatever happens, `results.json` is written: a failed run is a result too.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Iterable
from contextlib import nullcontext
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from gnnbench import config, data, models
from gnnbench.measure import dynamo, memory, stability
from gnnbench.measure.environment import environment
from gnnbench.measure.summary import accuracy_summary, timing_summary
from gnnbench.measure.timer import synchronize
from gnnbench.records import compare, identity, publish, schema, store
from gnnbench.runner import interrupts
from gnnbench.runner.progress import Progress
from gnnbench.training import compilation, sampler
from gnnbench.training.epochs import Trainer
from gnnbench.training.precision import matmul_precision


def validate(cfg: DictConfig) -> None:
    """Every check, each registry checking its own options."""
    config.validate(cfg)
    models.validate(cfg.model)
    data.validate(cfg.dataset)
    compilation.validate(cfg.compiler)
    if cfg.get("graph", {}).get("layout") == "csr-op":
        config.require(models.csr_aggregation(cfg.model) is not None,
                       f"graph.layout=csr-op aggregates by one SpMM: it supports gcn "
                       f"(normalize=precompute) and sage (aggr=mean), not "
                       f"model={cfg.model.name}")
    if cfg.train.batching == "neighbor" and cfg.train.sampler == "pyg":
        config.require(sampler.pyg_available(), "train.sampler='pyg' needs pyg-lib or "
                       "torch-sparse; choose one of: auto, gnnbench")


def _cuda_graph_audit(trainer: Trainer, recorder: dynamo.DynamoRecorder,
                      device: torch.device) -> dict:
    """Which CUDA graphs the run really ran under, from what happened, not from its config."""
    skips = recorder.cudagraph_skips()
    if skips["skips"] and not skips["reasons"] and device.type != "cuda":
        # Inductor logs no reason for graphs without CUDA tensors; they cannot be graphed.
        skips["reasons"] = [f"no CUDA tensors in the graph (the run is on {device.type})"]
    trees = dynamo.recorded_cudagraph_trees(device)
    captured = trainer.captured is not None and trainer.captured.captured
    metrics = getattr(trainer, "captured_metrics", None)
    used = ("whole epoch" if captured and metrics is not None and metrics.captured
            else "whole step" if captured else "cudagraph trees" if trees else "none")
    return {"requested": trainer.requested_cuda_graphs, "used": used,
            "whole_step_captured": captured, "inductor_recorded_graphs": trees,
            "inductor_skips": skips["skips"], "inductor_skip_reasons": skips["reasons"]}


def _non_finite_loss(row: dict) -> str | None:
    for key in ("loss", "eager_loss"):
        value = row.get(key)
        if value is not None and not math.isfinite(value):
            return f"non-finite {'eager twin ' if key == 'eager_loss' else ''}loss ({value})"
    return None


def _train(cfg: DictConfig, device: torch.device, record: dict,
           recorder: dynamo.DynamoRecorder | None) -> None:
    torch.manual_seed(cfg.train.seed)
    task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
    record["dataset"] = task.info
    trainer = Trainer(cfg, task, device)
    record["batching"], record["graph"] = trainer.batching, trainer.graph
    memory.reset_peak(device)
    progress = Progress(cfg.train.epochs, label=record["name"])
    epochs = record["epochs"]
    machine_before = stability.machine_state(device)
    try:
        for epoch in range(cfg.train.epochs):
            synchronize(device)
            started = time.perf_counter()
            row = trainer.epoch(epoch)
            if recorder is not None:
                row["recompiles"] = recorder.recompiles()
                row["recompiles_this_epoch"] = row["recompiles"] - (
                    epochs[-1]["recompiles"] if epochs else 0)
            synchronize(device)
            # The whole epoch as a user's loop would see it, the runner's bookkeeping included.
            row["epoch_wall_s"] = time.perf_counter() - started
            epochs.append(row)
            progress.update(row)
            # Checked between epochs, outside the timed regions: the loss is read anyway.
            bad = _non_finite_loss(row)
            if bad:
                record["status"], record["reason"] = "diverged", f"{bad} at epoch {epoch}"
                break
            signum = interrupts.requested()
            if signum is not None and epoch + 1 < cfg.train.epochs:
                record["status"] = "interrupted"
                record["reason"] = (f"{interrupts.name(signum)} after epoch {epoch + 1} of "
                                    f"{cfg.train.epochs}")
                break
        if record["status"] == "ok" and not trainer.parameters_finite():
            record["status"] = "diverged"
            record["reason"] = f"non-finite parameters after epoch {len(epochs) - 1}"
    finally:
        progress.close()
        machine_after = stability.machine_state(device)
        record["memory"] = memory.peak(device)
        if trainer.batching["mode"] == "neighbor" and trainer.padding() is not None:
            record["batching"]["padding"] = trainer.padding()
        if recorder is not None:
            record["compile"] = recorder.snapshot()
            expected, why = compilation.expected_graph_breaks(record["compile"], cfg.compiler)
            record["compile"].update(expected_graph_breaks=expected, expected_why=why)
            record["cuda_graph_audit"] = _cuda_graph_audit(trainer, recorder, device)
            record["cuda_graphs"] = record["cuda_graph_audit"]["used"]
        else:
            captured = trainer.captured is not None and trainer.captured.captured
            record["cuda_graphs"] = "whole step" if captured else "none"
            if cfg.get("capture"):
                record["cuda_graph_audit"] = {
                    "requested": trainer.requested_cuda_graphs, "used": record["cuda_graphs"],
                    "whole_step_captured": captured, "inductor_recorded_graphs": 0,
                    "inductor_skips": 0, "inductor_skip_reasons": []}
        if epochs:
            record["accuracy"] = accuracy_summary(epochs)
        steady = [r["train_s"] for r in epochs[cfg.train.warmup_epochs:]]
        if steady:
            record["stability"] = stability.assess(steady, machine_before, machine_after)
    if len(trainer.variants) > 1:
        eager = [{k.removeprefix("eager_"): v for k, v in r.items()
                  if k == "epoch" or k.startswith("eager_")} for r in epochs]
        record["paired"] = {"accuracy": accuracy_summary(eager),
                            "loss_max_abs_diff": max(abs(r["loss"] - r["eager_loss"])
                                                     for r in epochs)}


def _out_of_memory(exc: BaseException) -> bool:
    """CUDA running out of memory, also when a compiler wrapped it in its own error."""
    seen = exc
    while seen is not None:
        if isinstance(seen, torch.OutOfMemoryError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def skipped_record(cfg: DictConfig, holder: str) -> dict:
    """A sweep job that would repeat an eager run another job of the sweep makes (`holder`)."""
    record = schema.new_record(cfg)
    record.update(name=config.run_name(cfg), status="skipped", env=environment(None),
                  reason=f"same eager run as {holder}",
                  timing={"wall_s": 0.0, "compile_overhead_s": None})
    return record


def run_experiment(cfg: DictConfig, out_dir: Path, *, reference_dirs: Iterable[Path] = (),
                   wandb_group: str | None = None, log_dir: Path | None = None) -> dict:
    """Run one configuration, write `out_dir/results.json`, then log it to W&B; never raises
    for a failed run. A compiled run compares itself with the newest eager record of the
    same setting and seed found under `reference_dirs` (or with its paired twin)."""
    started = time.perf_counter()
    reference_dirs = list(reference_dirs)
    record = schema.new_record(cfg)
    record["name"] = config.run_name(cfg)
    record["env"] = environment(None)
    stopped_at_once: BaseException | None = None
    try:
        validate(cfg)
        device = config.resolve_device(cfg.train.device)
        if device.type == "cuda":
            torch.cuda.set_device(device)
        record["env"] = environment(device)
        with matmul_precision(cfg.train.get("precision", "fp32")), \
                dynamo.DynamoRecorder() if cfg.compile else nullcontext() as recorder:
            _train(cfg, device, record, recorder)
    except config.ConfigError as exc:
        record["status"], record["reason"] = "error", str(exc)
    except (interrupts.Interrupted, KeyboardInterrupt) as exc:
        # A second signal (or Ctrl-C without gnnbench's handler): save what is there, now.
        stopped_at_once = exc
        what = exc.args[0] if isinstance(exc, interrupts.Interrupted) else "SIGINT"
        record["status"] = "interrupted"
        record["reason"] = (f"{what}: stopped at once during epoch {len(record['epochs'])} "
                            f"of {cfg.train.epochs}")
    except Exception as exc:  # a failed run is an outcome: classify it and keep going
        if _out_of_memory(exc):
            record["status"], record["reason"] = "oom", _one_line(exc)
        else:
            record["status"], record["reason"] = dynamo.classify_failure(exc) or (
                "error", _one_line(exc))
        record["traceback"] = traceback.format_exc()
    wall_s = time.perf_counter() - started
    if record["epochs"]:
        warmup = min(cfg.train.warmup_epochs, len(record["epochs"]) - 1)
        # A captured eager step also pays once, for the capture: it counts as one-off cost.
        one_off = bool(cfg.compile) or bool(cfg.get("capture"))
        record["timing"] = timing_summary(record["epochs"], warmup, wall_s, one_off,
                                          cfg.train.warmup_epochs)
    else:
        record["timing"] = {"wall_s": wall_s, "compile_overhead_s": None}
    if record["status"] == "ok" and (cfg.compile or cfg.get("capture")):
        if record.get("paired"):
            record["comparison"] = compare.compare_paired([record])
        else:
            record["reference_search"] = [str(d) for d in reference_dirs]
            eager = store.eager_references(reference_dirs, record["config"],
                                           identity.device_type(record))
            if eager:
                record["comparison"] = compare.compare(eager[-1:], [record])
    store.write(record, out_dir)
    if stopped_at_once is not None:  # asked to stop now: no W&B, and the caller sees it
        if isinstance(stopped_at_once, KeyboardInterrupt):
            raise stopped_at_once
        return record
    group = wandb_group or cfg.wandb.group or f"{cfg.model.name}-{cfg.dataset.name}"
    record["wandb_dir"] = publish.publish_to_wandb(
        record, OmegaConf.to_container(cfg, resolve=True), out_dir, group, log_dir)
    store.write(record, out_dir)
    return record
