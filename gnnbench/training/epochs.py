"""One run's training, epoch by epoch: the model (compiled or not, with an eager twin when
paired), its optimizer and step, and how an epoch of full-batch or neighbour-sampled
training is timed region by region. The runner decides how many epochs and what to keep."""

from __future__ import annotations

import copy
import functools
import math
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from omegaconf import DictConfig
from torch import Tensor

from gnnbench import models
from gnnbench.data import Task
from gnnbench.measure.timer import EpochTimer, timed
from gnnbench.training import (
    buckets,
    compilation,
    epoch_groups,
    layouts,
    prefetch,
    sampler,
    steps,
)
from gnnbench.training.optim import make_optimizer
from gnnbench.training.precision import autocast, forward_in

# How an eager twin's figures are keyed in an epoch's record (eager_loss, eager_train_s...).
TWIN_PREFIX = "eager_"
TIMED_STAGES = ("train_s", "eval_s")
ROW_SPLITS = ("train", "val", "test")
ROW_KEYS = ("loss", *TIMED_STAGES, *(f"{split}_acc" for split in ROW_SPLITS))


_STAGE_SECONDS = operator.itemgetter(*TIMED_STAGES)
_SPLIT_ACCURACIES = operator.itemgetter(*ROW_SPLITS)


def epoch_row(loss: float, seconds: dict[str, float], acc: dict[str, float],
              prefix: str = "") -> dict:
    """An epoch's figures as its record holds them: the loss, the train and eval seconds
    and each split's accuracy, every key under `prefix` (`eager_`: a paired run's twin).
    Built in one go (it runs between every two epochs)."""
    row = dict(zip(ROW_KEYS, (loss, *_STAGE_SECONDS(seconds), *_SPLIT_ACCURACIES(acc)),
                   strict=True))
    return {f"{prefix}{k}": v for k, v in row.items()} if prefix else row


BATCH_STAGES = ("sample_s", "transfer_s", "compute_s")


def train_batches(timer: EpochTimer, batches: Iterable, prepare: Callable[[Any], Any],
                  step: Callable[[Any], Tensor], device: torch.device) \
        -> tuple[Tensor, int]:
    """One epoch over mini-batches, each timed in three parts: drawing the batch from
    `batches` (`sample_s`), `prepare` (gathering and moving it: `transfer_s`) and `step`
    (`compute_s`). Returns the sum of the steps' losses, on the device (read once, after
    the epoch), and how many batches there were."""
    total, count = torch.zeros((), device=device), 0
    it = iter(batches)
    while (batch := timer.measure("sample_s", lambda: next(it, None))) is not None:
        inputs = timer.measure("transfer_s", lambda b=batch: prepare(b))
        loss = timer.measure("compute_s", lambda x=inputs: step(x))
        total, count = total + loss, count + 1
    return total, count


def batches_row(epoch: int, total: Tensor, count: int, seconds: dict[str, float]) -> dict:
    """What an epoch of mini-batches records besides its accuracies: the mean loss, the
    train time as the sum of its three parts, each part, the eval time and the batches."""
    stages = {k: seconds.get(k, 0.0) for k in BATCH_STAGES}
    return {"epoch": epoch, "loss": (total / max(count, 1)).item(),
            "train_s": sum(stages.values()), "eval_s": seconds.get("eval_s"), **stages,
            "batches": count}


@dataclass
class Variant:
    """A model as one epoch trains it: the measured model, or (`twin`) a paired run's eager
    twin, whose figures are keyed with `prefix` in an epoch's record."""

    forward: Callable[..., Tensor]  # the model itself or its compiled wrapper
    model: torch.nn.Module  # a models.GNN, or a models.Foreign around the user's module
    optimizer: torch.optim.Optimizer
    step: Callable[..., Tensor] | None = None  # scope=step: the compiled whole step
    twin: bool = False

    @property
    def prefix(self) -> str:
        return TWIN_PREFIX if self.twin else ""


class TrainerBase:
    """What the runner's epoch loop reads of every trainer (Trainer here, and the
    graph-batch and heterogeneous ones), with the defaults of one that compiles the model
    as a whole and captures nothing."""

    # Whether this process evaluates, reports progress and records the run: every trainer
    # but the ranks of a DDP run other than rank 0 (training/distributed.py).
    is_main = True
    # compiler.scope=layers: how many layers were compiled on their own.
    regions: int | None = None
    captured = None
    captured_metrics = None
    variants: list[Variant]
    # How many epochs one call of `epochs_from` trains as one unit (compiler.capture_epochs
    # of a whole-epoch run), and the device's own best-validation bookkeeping as the host
    # last read it (None: kept by the host alone, from the epochs' records).
    group_epochs = 1
    device_best: dict | None = None
    # Dynamo's recompile limit the run needs at least: shapes bounded by a ladder of static
    # buckets (graph batches, dynamic=False); None: dynamo's own.
    recompile_bound: int | None = None

    def epoch(self, epoch: int) -> dict:
        """One epoch's record."""
        raise NotImplementedError

    def epochs_from(self, first: int) -> list[dict]:
        """The records of the epochs from `first` that train as one unit: one epoch, unless
        the trainer groups them."""
        return [self.epoch(first)]

    def agree(self, value: int) -> int:
        """The largest `value` any process of the run holds: a decision to stop (a signal)
        taken by all of them at the same epoch. One process: `value`."""
        return value

    def parameters_finite(self) -> bool:
        """Whether every parameter of every variant is finite: one fused norm per variant
        and one read, so it is checked at the end of a run, not inside timed epochs."""
        for v in self.variants:
            params = [p.detach() for p in v.model.parameters()]
            if params and not torch.stack(torch._foreach_norm(params)).isfinite().all():
                return False
        return True


class Trainer(TrainerBase):
    """Builds everything a run trains from its config, then runs one epoch at a time."""

    def __init__(self, cfg: DictConfig, task: Task, device: torch.device) -> None:
        self.cfg, self.task, self.device = cfg, task, device
        self.seed = cfg.train.seed  # read every epoch of a pair: a config lookup costs µs
        self.precision = cfg.train.get("precision", "fp32")
        edge_index, edge_weight = models.graph_inputs(cfg.model, task.edge_index,
                                                      task.num_nodes)
        # The batches of neighbour sampling are built from the COO edges; the full graph
        # is converted to the configured layout once, outside any timed step.
        self.coo = edge_index, edge_weight
        layout = cfg.get("graph", {}).get("layout", "coo")
        aggr = models.csr_aggregation(cfg.model)
        (self.edge_index, self.edge_weight), convert_s = timed(
            lambda: layouts.convert(layout, edge_index, edge_weight, task.num_nodes, aggr),
            device)
        self.graph = {"layout": layout, "convert_s": convert_s}
        model = models.build_model(cfg.model, task.num_features, task.num_classes).to(device)
        self.foreign = isinstance(model, models.Foreign)  # a model of the user's own (or PyG's)
        if self.foreign:  # its contract, checked before anything trains
            model.probe(task.x, *self.coo, task.num_classes, cfg.model._target_)
        self.trained = self.wrap(model)  # what is called (and compiled) to train
        captured = bool(cfg.get("capture")) and not cfg.compile  # the eager step as one graph
        whole_step = (cfg.compile and cfg.compiler.scope in ("step", "epoch")) or captured
        self.whole_epoch = cfg.compile and cfg.compiler.scope == "epoch"
        if self.whole_epoch:
            self.group_epochs = cfg.compiler.get("capture_epochs", 1)
        self.requested_cuda_graphs = (
            compilation.requested_cuda_graphs(cfg.compiler, device, cfg.train.batching)
            if cfg.compile else "whole step" if captured else "none")
        optimizer = make_optimizer(model.parameters(), cfg.train,
                                   capturable=whole_step and device.type == "cuda")
        # The paired twin starts from the same weights and trains eagerly beside the compiled
        # (or captured) model, epochs interleaved, so both see the same machine state.
        paired = cfg.train.paired and (cfg.compile or captured)
        twin = copy.deepcopy(model) if paired else None
        forward = self._compiled(model) if cfg.compile else self.trained
        self.captured: compilation.CapturedStep | None = None
        step = None
        if whole_step:
            step = (self._captured_eager_step(model, optimizer) if captured
                    else self._whole_step(model, optimizer))
        main = Variant(forward_in(self.precision, device, forward), model, optimizer, step)
        self.variants = [main]
        if twin is not None:
            self.variants.append(Variant(forward_in(self.precision, device, twin), twin,
                                         make_optimizer(twin.parameters(), cfg.train),
                                         twin=True))
        # scope=epoch (_set_up_epoch_metrics): the eval forward with the epoch's metrics,
        # compiled; on CUDA captured too, with where the step leaves its loss and the
        # host buffer the metrics are copied to.
        self.metrics_step: Callable[[], Tensor] | None = None
        self.captured_metrics: compilation.CapturedStep | None = None
        self._last_loss: Tensor | None = None
        self._host: Tensor | None = None
        self._sizes: list[int] = []
        if self.whole_epoch:
            self._set_up_epoch_metrics(model)
        self.timers = {v.prefix: EpochTimer(device) for v in self.variants}
        self.batching = {"mode": "full"}
        self._epoch_of = self._full_batch_epoch
        # train.batching=neighbor (_set_up_neighbor_batches): the graph as CSR for sampling,
        # the batches, their padding buckets, and whether the next batch is prefetched.
        self.csr: sampler.CSRGraph | None = None
        self.batches: sampler.NeighborSampler | sampler.PygNeighborBatches | None = None
        self.buckets: buckets.Buckets | None = None
        self.prefetch = False
        self.prefetch_priority = 0  # the sampling thread's CUDA stream (-1: high)
        if cfg.train.batching == "neighbor":
            self._set_up_neighbor_batches()

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """The module training calls: the model itself (DDP wraps it)."""
        return model

    def _compiled(self, model: torch.nn.Module) -> Callable[..., Tensor]:
        """torch.compile of what trains; for a foreign model, of the user's module itself,
        as its author would compile it, so dynamo's reports name the user's code."""
        if self.cfg.compiler.get("scope") == "layers":  # each convolution on its own
            self.regions = compilation.compile_layers(model, self.cfg.compiler)
            return self.trained
        if self.cfg.compiler.get("scope") == "nested":  # one graph, layers as regions
            compiled, self.regions = compilation.compile_nested(self.trained, self.cfg.compiler)
            return compiled
        if self.foreign and self.trained is model:
            return model.with_compiled(compilation.compile_model(model.model, self.cfg.compiler))
        return compilation.compile_model(self.trained, self.cfg.compiler)

    def _whole_step(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> Callable:
        """scope=step: forward+loss and Adam compiled; on CUDA with a full batch under a
        CUDA-graph mode, the whole step captured as one graph."""
        full = self.cfg.train.batching == "full"
        loss_fn, optimizer_step = compilation.compile_step_parts(
            functools.partial(steps.loss_of if full else steps.batch_loss_of, model),
            optimizer, self.cfg.compiler)
        loss_fn = forward_in(self.precision, self.device, loss_fn)
        step = functools.partial(steps.whole_step, loss_fn, optimizer_step, model, optimizer)
        if not full:
            return step
        step = self._with_full_batch(step)
        # Epochs in groups: the group is captured as a whole (_set_up_epoch_metrics).
        if self.requested_cuda_graphs in ("whole step", "whole epoch") and \
                self.group_epochs == 1:
            self.captured = step = compilation.CapturedStep(step)
        return step

    def _set_up_epoch_metrics(self, model: torch.nn.Module) -> None:
        """scope=epoch: the eval forward and the epoch's metrics as one compiled function, on
        CUDA captured as a second graph (it reads the step's loss where the captured step
        leaves it), copied to the host in one transfer per epoch."""
        task, cfg = self.task, self.cfg
        metrics = forward_in(self.precision, self.device, compilation.compile_function(
            functools.partial(steps.epoch_metrics, model, model, task, self.edge_index,
                              self.edge_weight), cfg.compiler))
        self.metrics_step = lambda: metrics(self._last_loss)
        self._sizes = [idx.numel() for idx in task.splits.values()]
        pinned = self.device.type == "cuda"
        if self.group_epochs > 1:
            self._set_up_group(self.variants[0].step, metrics, pinned)
            return
        if self.requested_cuda_graphs == "whole epoch":
            self.captured_metrics = compilation.CapturedStep(self.metrics_step)
            self.metrics_step = self.captured_metrics
        self._host = torch.empty(4, pin_memory=pinned)

    def _set_up_group(self, step: Callable[[], Tensor], metrics: Callable[[Tensor], Tensor],
                      pinned: bool) -> None:
        """compiler.capture_epochs=K: K epochs (step, eval, metrics, best-validation
        bookkeeping) as one unit, on CUDA captured as one graph after as many uncaptured
        groups as make the three warm-up steps a single step's capture has."""
        splits = list(self.task.splits)
        self.group = epoch_groups.EpochGroup(
            step, metrics, self.group_epochs, 1 + splits.index("val"),
            1 + splits.index("test"), 1 + len(splits), self.device)
        self._unit: Callable[[], Tensor] = self.group
        if self.requested_cuda_graphs == "whole epoch":
            warmup = math.ceil(3 / self.group_epochs)
            self.captured = self.captured_metrics = compilation.CapturedStep(self.group, warmup)
            self._unit = self.captured
        self._host = torch.empty(self.group.packed.numel(), dtype=torch.float64,
                                 pin_memory=pinned)

    def _captured_eager_step(self, model: torch.nn.Module,
                             optimizer: torch.optim.Optimizer) -> Callable:
        """capture=true without compile: the eager step (PyTorch's own kernels, Adam with its
        state on the device) replayed as one CUDA graph, so launch savings can be told apart
        from Inductor's kernel fusion."""
        compilation.allocate_grads(optimizer)
        loss_fn = forward_in(self.precision, self.device,
                             functools.partial(steps.loss_of, model))
        step = self._with_full_batch(functools.partial(steps.whole_step, loss_fn,
                                                       optimizer.step, model, optimizer))
        self.captured = compilation.CapturedStep(step)
        return self.captured

    def _with_full_batch(self, step: Callable) -> Callable:
        task = self.task
        return functools.partial(step, task.x, self.edge_index, self.edge_weight,
                                 task.splits.train, task.y)

    def epoch(self, epoch: int) -> dict:
        """One epoch of every variant, who goes first alternating; the epoch's record."""
        if len(self.variants) == 1:
            return {"epoch": epoch, **self._epoch_of(self.variants[0])}
        record: dict = {"epoch": epoch}
        order = self.variants if epoch % 2 == 0 else self.variants[::-1]
        for variant in order:  # the same dropout stream for both models of a pair
            torch.manual_seed(self.seed * 100_003 + epoch)
            record.update(self._epoch_of(variant))
        return record

    def epochs_from(self, first: int) -> list[dict]:
        if self.group_epochs == 1:
            return [self.epoch(first)]
        return self._grouped_epochs(first)

    def _grouped_epochs(self, first: int) -> list[dict]:
        """One group of epochs: one launch (the captured group), one copy of every epoch's
        figures and the best so far to the host, one synchronisation. The group is timed
        as a whole, so each epoch's `train_s` is its share: train, eval and metrics
        together (inside one graph they cannot be timed apart), with no `eval_s`."""
        timer, k = self.timers[""], self.group_epochs
        packed = timer.measure("train_s", self._unit)
        self._host.copy_(packed, non_blocking=True)
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
        share = timer.read()["train_s"] / k
        rows, self.device_best = epoch_groups.unpack(self._host.tolist(), first, k,
                                                     list(self.task.splits), self._sizes)
        return [{**row, "train_s": share, "timed_epochs": k} for row in rows]

    def _full_batch_epoch(self, v: Variant) -> dict:
        if self.metrics_step is not None and not v.twin:
            return self._whole_epoch(v)
        timer, task = self.timers[v.prefix], self.task

        def train() -> Tensor:
            if v.step is not None:
                return v.step()
            return steps.train_step(v.forward, v.model, v.optimizer, task, self.edge_index,
                                    self.edge_weight)

        loss = timer.measure("train_s", train)
        pred = timer.measure("eval_s", lambda: steps.predict(v.forward, v.model, task,
                                                             self.edge_index, self.edge_weight))
        # The reads a user's loop makes anyway come first; the timer's read then finds its
        # events complete and costs no extra wait.
        acc, loss_value = steps.split_accuracy(pred, task), loss.item()
        seconds = timer.read()
        return epoch_row(loss_value, seconds, acc, v.prefix)

    def _whole_epoch(self, v: Variant) -> dict:
        """Two launches (the step, the eval with its metrics), one copy of four numbers to the
        host and one synchronisation: what an epoch costs when nothing else is in the way."""
        timer = self.timers[v.prefix]
        self._last_loss = timer.measure("train_s", v.step)
        metrics = timer.measure("eval_s", self.metrics_step)
        self._host.copy_(metrics, non_blocking=True)
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
        seconds = timer.read()
        loss, *correct = self._host.tolist()
        acc = dict(zip(self.task.splits, (c / n for c, n in zip(correct, self._sizes,
                                                                 strict=True)), strict=True))
        return epoch_row(loss, seconds, acc)

    def train_seeds(self) -> tuple[Tensor, int]:
        """The training nodes this process samples batches of, and the seed of its sampler."""
        return self.task.splits.train, self.cfg.train.seed

    def _set_up_neighbor_batches(self) -> None:
        train, task = self.cfg.train, self.task
        kind = train.sampler if train.sampler != "auto" else (
            "pyg" if sampler.pyg_available() else "gnnbench")
        edge_index = self.coo[0]
        self.csr = sampler.CSRGraph.from_edge_index(edge_index, task.num_nodes)
        seeds, seed = self.train_seeds()
        if kind == "pyg":
            self.batches = sampler.PygNeighborBatches(
                edge_index, task.num_nodes, seeds, train.fanouts, train.batch_size, seed)
        else:
            self.batches = sampler.NeighborSampler(
                self.csr, seeds, train.fanouts, train.batch_size, shuffle=True, seed=seed)
        self.batching = {"mode": "neighbor", "sampler": kind, "fanouts": list(train.fanouts),
                         "batch_size": train.batch_size, "batches_per_epoch": len(self.batches)}
        if self.foreign:  # no layers to apply one at a time: the model on sampled subgraphs
            self.batching["inference"] = "sampled subgraphs"
        # Padding to a few bucket shapes lets a compiled step (and its CUDA graphs) see few
        # shapes; prefetching samples and gathers the next batch while this one trains.
        self.buckets = (buckets.Buckets.for_sampler(self.batches)
                        if train.get("pad_batches") else None)
        self.prefetch = bool(train.get("prefetch"))
        self.prefetch_priority = -1 if train.get("prefetch_stream") == "high" else 0
        self.batching.update(padded=self.buckets is not None, prefetch=self.prefetch)
        self._epoch_of = self._neighbor_epoch

    def padding(self) -> dict | None:
        """Padding waste over the run (None without padding)."""
        return self.buckets.waste.summary() if self.buckets is not None else None

    def _gather(self, batch: sampler.Batch) -> tuple:
        batch = batch.to(self.device)
        weight = self.coo[1][batch.e_id] if self.coo[1] is not None else None
        inputs = (self.task.x[batch.n_id], batch.edge_index, weight,
                  self.task.y[batch.n_id[: batch.batch_size]])
        return tuple(self.buckets.pad(*inputs)) if self.buckets is not None else inputs

    def train_batch(self, v: Variant, inputs: tuple) -> Tensor:
        """One batch's step of `v` on its gathered inputs (_gather): what each batch of an
        epoch runs, and what benchmarks/profile_step replays, so both time the same code."""
        if v.step is not None:
            return v.step(*inputs)
        return steps.train_batch_step(v.forward, v.model, v.optimizer, *inputs)

    def _neighbor_epoch(self, v: Variant) -> dict:
        """Each batch's sampling, gathering onto the device and compute are timed apart;
        inference is layer-wise over all nodes (by the main process only)."""
        timer, task = self.timers[v.prefix], self.task
        total, count = torch.zeros((), device=self.device), 0
        step = functools.partial(self.train_batch, v)

        if self.prefetch:  # sampling and gathering overlap the step: only waiting is timed
            it = iter(prefetch.Prefetcher(self.batches, self.device, prepare=self._gather,
                                          priority=self.prefetch_priority))
            while (inputs := timer.measure("sample_s", lambda: next(it, None))) is not None:
                loss = timer.measure("compute_s", lambda x=inputs: step(x))
                total, count = total + loss, count + 1
        else:
            it = iter(self.batches)
            while (batch := timer.measure("sample_s", lambda: next(it, None))) is not None:
                inputs = timer.measure("transfer_s", lambda b=batch: self._gather(b))
                loss = timer.measure("compute_s", lambda x=inputs: step(x))
                total, count = total + loss, count + 1

        def predict() -> Tensor:
            with autocast(self.precision, self.device):
                if self.foreign:
                    return steps.sampled_predict(v.model, task.x, self.csr, self.coo[1],
                                                 self.cfg.train.fanouts,
                                                 self.cfg.train.eval_chunk, self.cfg.train.seed)
                return steps.layerwise_predict(v.model, task.x, self.csr, self.coo[1],
                                               self.cfg.train.eval_chunk)

        pred = timer.measure("eval_s", predict) if self.is_main else None
        seconds = timer.read()
        acc = steps.split_accuracy(pred, task) if pred is not None else {}
        # With prefetching the gather happens while waiting for the batch: no transfer stage.
        stages = {k: seconds.get(k, 0.0) for k in ("sample_s", "transfer_s", "compute_s")}
        return {"loss": (total / max(count, 1)).item(), "train_s": sum(stages.values()),
                "eval_s": seconds.get("eval_s"), **stages, "batches": count,
                "train_acc": acc.get("train"), "val_acc": acc.get("val"),
                "test_acc": acc.get("test")}
