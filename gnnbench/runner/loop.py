"""The epoch loop of one process's training, and how a failure becomes a status: shared by
single-process runs and by every rank of a DDP run (gnnbench/runner/distributed.py)."""

from __future__ import annotations

import contextlib
import math
import time
import traceback
from collections.abc import Mapping

import torch
from omegaconf import DictConfig
from pydantic import TypeAdapter, ValidationError

from gnnbench import data
from gnnbench.measure import dynamo, memory, stability
from gnnbench.measure.summary import accuracy_summary, steady_rows
from gnnbench.measure.timer import synchronize
from gnnbench.records.model import CudaGraphAudit, Epoch, Paired, Record, Shapes
from gnnbench.runner import interrupts
from gnnbench.runner.progress import Progress
from gnnbench.training import compilation
from gnnbench.training.epochs import Trainer


def _cuda_graph_audit(trainer: Trainer, recorder: dynamo.DynamoRecorder,
                      device: torch.device) -> CudaGraphAudit:
    """Which CUDA graphs the run really ran under, from what happened, not from its config."""
    count, reasons = recorder.cudagraph_skips()
    if count and not reasons and device.type != "cuda":
        # Inductor logs no reason for graphs without CUDA tensors; they cannot be graphed.
        reasons = [f"no CUDA tensors in the graph (the run is on {device.type})"]
    trees = dynamo.recorded_cudagraph_trees(device)
    captured = trainer.captured is not None and trainer.captured.captured
    metrics = trainer.captured_metrics
    used = ("whole epoch" if captured and metrics is not None and metrics.captured
            else "whole step" if captured else "cudagraph trees" if trees else "none")
    return CudaGraphAudit(requested=trainer.requested_cuda_graphs, used=used,
                          whole_step_captured=captured, inductor_recorded_graphs=trees,
                          inductor_skips=count, inductor_skip_reasons=reasons)


def _non_finite_loss(row: Mapping) -> str | None:
    for key, whose in (("loss", ""), ("eager_loss", "eager twin ")):
        value = row.get(key)
        if value is not None and not math.isfinite(value):
            return f"non-finite {whose}loss ({value})"
    return None


_EPOCHS = TypeAdapter(list[Epoch])


def _validated(rows: list[dict]) -> tuple[list[Epoch], ValidationError | None]:
    """The epochs' records, validated once when the loop ends (one call, not one per epoch
    and one per field set after it: 8 µs an epoch on a 2-core CPU host). A row that fails
    is a bug in gnnbench: the epochs before it are kept and the error is returned."""
    try:
        return _EPOCHS.validate_python(rows), None
    except ValidationError as exc:
        kept = []
        for row in rows:
            try:
                kept.append(Epoch.model_validate(row))
            except ValidationError:
                break
        return kept, exc


def _check_device_best(record: Record, device_best: dict | None) -> None:
    """A grouped whole-epoch run kept its best-validation bookkeeping on the device: the
    record keeps it (`accuracy.on_device`), and it must be what the host finds in the
    epochs it read (same best epoch, same accuracies); anything else is a bug, not a
    measurement, and fails the run."""
    if device_best is None:
        return
    record.accuracy.on_device = device_best
    host = {k: getattr(record.accuracy, k) for k in device_best}
    if host != device_best and record.status == "ok":
        record.status = "error"
        record.reason = (f"the device's best-validation bookkeeping {device_best} disagrees "
                         f"with the epochs read {host}")


def make_trainer(cfg: DictConfig, task: data.Task | data.GraphTask | data.HeteroTask,
                 device: torch.device) -> Trainer:
    """The trainer of this process: batches of whole graphs (a graph-level dataset), a
    heterogeneous graph, a rank's share of a DDP run, or the whole run."""
    if isinstance(task, data.GraphTask):
        from gnnbench.training.graph_batches import GraphBatchTrainer

        return GraphBatchTrainer(cfg, task, device)
    if isinstance(task, data.HeteroTask):
        from gnnbench.training.hetero import HeteroTrainer

        return HeteroTrainer(cfg, task, device)
    if cfg.train.get("distributed", "none") == "ddp":
        from gnnbench.training.distributed import DistributedTrainer

        return DistributedTrainer(cfg, task, device)
    return Trainer(cfg, task, device)


def train_epochs(cfg: DictConfig, device: torch.device, record: Record,
                 recorder: dynamo.DynamoRecorder | None, live_progress: bool = True) -> None:
    """Load the data, build the trainer and train epoch by epoch into `record`. Every
    decision to stop early (a signal, a non-finite loss) is one that all ranks of a DDP run
    take at the same epoch (`Trainer.agree`)."""
    train = cfg.train  # read once: each lookup in an OmegaConf config costs µs
    total = train.epochs
    torch.manual_seed(train.seed)
    task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
    record.dataset = task.info
    trainer = make_trainer(cfg, task, device)
    record.batching, record.graph = trainer.batching, trainer.graph
    memory.reset_peak(device)
    progress = Progress(total, label=record.name, enabled=trainer.is_main,
                        live=live_progress)
    # Each epoch's record as the trainer made it (a dict), validated into record.epochs
    # once, when the loop ends: the checks below read the rows themselves.
    rows: list[dict] = []
    machine_before = stability.machine_state(device)
    limit = contextlib.ExitStack()  # a ladder of static shapes: one compile per rung
    limit.enter_context(compilation.recompile_limit_at_least(trainer.recompile_bound))
    try:
        # One unit at a time: an epoch, or a group of compiler.capture_epochs epochs that
        # train as one (its epochs share its time; every check below acts between groups).
        for first in range(0, total, trainer.group_epochs):
            synchronize(device)
            started = time.perf_counter()
            unit = trainer.epochs_from(first)
            synchronize(device)
            # The whole epoch as a user's loop would see it: train, eval and the metric
            # reads. The runner's own work after it (recompilations, progress, checks) is
            # `bookkeeping_s`.
            wall_s = (time.perf_counter() - started) / len(unit)
            kept = time.perf_counter()
            if recorder is not None:  # a group's recompilations counted at its first epoch
                before = rows[-1].get("recompiles") if rows else 0
                for i, row in enumerate(unit):
                    count = recorder.recompiles()
                    row.update(recompiles=count,
                               recompiles_this_epoch=count - before if i == 0 else 0)
            for row in unit:
                row.update(epoch_wall_s=wall_s)
                rows.append(row)
                progress.update(row)
            # Checked between epochs, outside the timed regions: the loss is read anyway.
            bad = next(((why, r.get("epoch")) for r in unit if (why := _non_finite_loss(r))),
                       None)
            signum = trainer.agree(interrupts.requested() or 0) or None
            bookkeeping_s = (time.perf_counter() - kept) / len(unit)
            for row in unit:
                row.update(bookkeeping_s=bookkeeping_s)
            last = unit[-1].get("epoch")
            if bad:
                record.status, record.reason = "diverged", f"{bad[0]} at epoch {bad[1]}"
                break
            if signum is not None and last + 1 < total:
                record.status = "interrupted"
                record.reason = f"{interrupts.name(signum)} after epoch {last + 1} of {total}"
                break
        if record.status == "ok" and not trainer.parameters_finite():
            record.status = "diverged"
            record.reason = f"non-finite parameters after epoch {len(rows) - 1}"
    finally:
        limit.close()  # first: whatever fails below, the next run has dynamo's own limit
        validated, invalid = _validated(rows)
        record.epochs.extend(validated)
        epochs = record.epochs
        progress.close()
        machine_after = stability.machine_state(device)
        record.memory = memory.peak(device)
        if trainer.batching.get("mode") != "full" and trainer.padding() is not None:
            record.batching.padding = trainer.padding()
        if recorder is not None:
            snapshot = recorder.snapshot()
            expected, why = compilation.expected_graph_breaks(
                snapshot, cfg.compiler, ddp=cfg.train.get("distributed") == "ddp")
            record.compile = {**snapshot, "expected_graph_breaks": expected,
                              "expected_why": why,
                              **({"regions": trainer.regions} if trainer.regions else {})}
            record.cuda_graph_audit = _cuda_graph_audit(trainer, recorder, device)
            record.cuda_graphs = record.cuda_graph_audit.used
        else:
            captured = trainer.captured is not None and trainer.captured.captured
            record.cuda_graphs = "whole step" if captured else "none"
            if cfg.get("capture"):
                record.cuda_graph_audit = CudaGraphAudit(
                    requested=trainer.requested_cuda_graphs, used=record.cuda_graphs,
                    whole_step_captured=captured, inductor_recorded_graphs=0,
                    inductor_skips=0, inductor_skip_reasons=[])
        record.shapes = shape_record(trainer, record, recorder)
        chance = task.info.get("test_majority_share")
        if epochs:
            record.accuracy = accuracy_summary(epochs, chance)
            _check_device_best(record, trainer.device_best)
        # One timing sample per group of epochs timed together (each epoch: its share).
        steady = [r.train_s for r in steady_rows(epochs, train.warmup_epochs)]
        if steady:
            record.stability = stability.assess(steady, machine_before, machine_after)
        if invalid is not None:  # a bug: it fails the run, as it would have at its epoch
            raise invalid
    if len(trainer.variants) > 1:
        eager = [Epoch.model_validate({"epoch": r.epoch, **{
            k.removeprefix("eager_"): v for k, v in r.model_dump().items()
            if k.startswith("eager_")}}) for r in epochs]
        record.paired = Paired(accuracy=accuracy_summary(eager, chance),
                               loss_max_abs_diff=max(abs(r.loss - r.eager_loss)
                                                     for r in epochs))


def shape_record(trainer: Trainer, record: Record,
                 recorder: dynamo.DynamoRecorder | None) -> Shapes | None:
    """What shapes the model met and what that cost (README, "Graphs of many sizes"): the
    trainer's own count of shapes and padding, recompilations per epoch, whether dynamo's
    recompile limit was hit, and how many CUDA graphs Inductor recorded. None for trainers
    that keep no shape log (node-level ones)."""
    summary = getattr(trainer, "shape_summary", None)
    if summary is None:
        return None
    shapes = Shapes.model_validate(summary())
    shapes.recompiles_per_epoch = None
    if recorder is not None:
        per_epoch = [r.recompiles_this_epoch or 0 for r in record.epochs]
        # An epoch a failure cut short (the recompile limit, under fullgraph=True) has no
        # row: its recompilations are the last entry.
        unfinished = recorder.recompiles() - (record.epochs[-1].recompiles or 0
                                              if record.epochs else 0)
        shapes.recompiles_per_epoch = per_epoch + ([unfinished] if unfinished > 0 else [])
        hits = recorder.recompile_limit_hits()
        # The limit the run had: dynamo's, or the trainer's bound where that was higher.
        shapes.recompile_limit = max(filter(None, (compilation.recompile_limit(),
                                                   trainer.recompile_bound)), default=None)
        shapes.recompile_limit_hit = bool(hits)
        shapes.recompile_limit_hits = hits
    audit = record.cuda_graph_audit
    shapes.cuda_graphs_recorded = audit.get("inductor_recorded_graphs") if audit else None
    return shapes


def _out_of_memory(exc: BaseException) -> bool:
    """CUDA running out of memory, also when a compiler wrapped it in its own error."""
    seen = exc
    while seen is not None:
        if isinstance(seen, torch.OutOfMemoryError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def record_failure(record: Record, exc: Exception) -> None:
    """A failed run is an outcome: its status (oom, graph_break, compile_error, error), a
    one-line reason and the traceback, into `record`. Call from an `except` block."""
    if _out_of_memory(exc):
        record.status, record.reason = "oom", one_line(exc)
    else:
        record.status, record.reason = dynamo.classify_failure(exc) or ("error", one_line(exc))
        if record.status == "graph_break":  # where, in the model's code, and dynamo's why
            record.graph_break = dynamo.graph_break_site(exc)
    record.traceback = traceback.format_exc()


def record_stopped_at_once(record: Record, exc: BaseException, epochs: int) -> None:
    """A second signal (or Ctrl-C without gnnbench's handler): what there is, now."""
    what = exc.args[0] if isinstance(exc, interrupts.Interrupted) else "SIGINT"
    record.status = "interrupted"
    record.reason = f"{what}: stopped at once during epoch {len(record.epochs)} of {epochs}"
