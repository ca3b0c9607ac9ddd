"""One run's training, epoch by epoch: the model (compiled or not, with an eager twin when
paired), its optimizer and step, and how an epoch of full-batch or neighbour-sampled
training is timed region by region. The runner decides how many epochs and what to keep."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from omegaconf import DictConfig
from torch import Tensor

from gnnbench import models
from gnnbench.data import Task
from gnnbench.measure.timer import EpochTimer
from gnnbench.training import compilation, sampler, steps
from gnnbench.training.optim import make_optimizer


@dataclass
class Variant:
    """A model as one epoch trains it. `prefix` keys its figures in an epoch's record: "" for
    the measured model, "eager_" for a paired run's eager twin."""

    prefix: str
    forward: Callable[..., Tensor]  # the model itself or its compiled wrapper
    model: models.GNN
    optimizer: torch.optim.Optimizer
    step: Callable[..., Tensor] | None = None  # scope=step: the compiled whole step


class Trainer:
    """Builds everything a run trains from its config, then runs one epoch at a time."""

    # Whether this process evaluates, reports progress and records the run: every trainer
    # but the ranks of a DDP run other than rank 0 (training/distributed.py).
    is_main = True

    def __init__(self, cfg: DictConfig, task: Task, device: torch.device) -> None:
        self.cfg, self.task, self.device = cfg, task, device
        self.edge_index, self.edge_weight = models.graph_inputs(cfg.model, task.edge_index,
                                                                task.num_nodes)
        model = models.build_model(cfg.model, task.num_features, task.num_classes).to(device)
        self.trained = self.wrap(model)  # what is called (and compiled) to train
        whole_step = cfg.compile and cfg.compiler.scope == "step"
        self.requested_cuda_graphs = (
            compilation.requested_cuda_graphs(cfg.compiler, device, cfg.train.batching)
            if cfg.compile else "none")
        optimizer = make_optimizer(model.parameters(), cfg.train,
                                   capturable=whole_step and device.type == "cuda")
        # The paired twin starts from the same weights and trains eagerly beside the compiled
        # model, epochs interleaved, so both see the same machine state.
        twin = copy.deepcopy(model) if cfg.train.paired and cfg.compile else None
        forward = (compilation.compile_model(self.trained, cfg.compiler) if cfg.compile
                   else self.trained)
        self.captured: compilation.CapturedStep | None = None
        main = Variant("", forward, model, optimizer,
                       self._whole_step(model, optimizer) if whole_step else None)
        self.variants = [main]
        if twin is not None:
            self.variants.append(Variant("eager_", twin, twin,
                                         make_optimizer(twin.parameters(), cfg.train)))
        self.timers = {v.prefix: EpochTimer(device) for v in self.variants}
        self.batching = {"mode": "full"}
        self._epoch_of = self._full_batch_epoch
        if cfg.train.batching == "neighbor":
            self._set_up_neighbor_batches()

    def wrap(self, model: models.GNN) -> torch.nn.Module:
        """The module training calls: the model itself (DDP wraps it)."""
        return model

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

    def _whole_step(self, model: models.GNN, optimizer: torch.optim.Optimizer) -> Callable:
        """scope=step: forward+loss and Adam compiled; on CUDA with a full batch under a
        CUDA-graph mode, the whole step captured as one graph."""
        full = self.cfg.train.batching == "full"
        loss_fn, optimizer_step = compilation.compile_step_parts(
            functools.partial(steps.loss_of if full else steps.batch_loss_of, model),
            optimizer, self.cfg.compiler)
        step = functools.partial(steps.whole_step, loss_fn, optimizer_step, model, optimizer)
        if not full:
            return step
        task = self.task
        step = functools.partial(step, task.x, self.edge_index, self.edge_weight,
                                 task.splits["train"], task.y)
        if self.requested_cuda_graphs == "whole step":
            self.captured = step = compilation.CapturedStep(step)
        return step

    def epoch(self, epoch: int) -> dict:
        """One epoch of every variant, who goes first alternating; the epoch's record."""
        record: dict = {"epoch": epoch}
        order = self.variants if epoch % 2 == 0 else self.variants[::-1]
        for variant in order:
            if len(self.variants) > 1:  # the same dropout stream for both models of a pair
                torch.manual_seed(self.cfg.train.seed * 100_003 + epoch)
            record.update(self._epoch_of(variant))
        return record

    def _full_batch_epoch(self, v: Variant) -> dict:
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
        p = v.prefix
        return {f"{p}loss": loss_value, f"{p}train_s": seconds["train_s"],
                f"{p}eval_s": seconds["eval_s"], f"{p}train_acc": acc["train"],
                f"{p}val_acc": acc["val"], f"{p}test_acc": acc["test"]}

    def train_seeds(self) -> tuple[Tensor, int]:
        """The training nodes this process samples batches of, and the seed of its sampler."""
        return self.task.splits["train"], self.cfg.train.seed

    def _set_up_neighbor_batches(self) -> None:
        train, task = self.cfg.train, self.task
        kind = train.sampler if train.sampler != "auto" else (
            "pyg" if sampler.pyg_available() else "gnnbench")
        self.graph = sampler.CSRGraph.from_edge_index(self.edge_index, task.num_nodes)
        seeds, seed = self.train_seeds()
        if kind == "pyg":
            self.batches = sampler.PygNeighborBatches(
                self.edge_index, task.num_nodes, seeds, train.fanouts, train.batch_size, seed)
        else:
            self.batches = sampler.NeighborSampler(
                self.graph, seeds, train.fanouts, train.batch_size, shuffle=True, seed=seed)
        self.batching = {"mode": "neighbor", "sampler": kind, "fanouts": list(train.fanouts),
                         "batch_size": train.batch_size, "batches_per_epoch": len(self.batches)}
        self._epoch_of = self._neighbor_epoch

    def _gather(self, batch: sampler.Batch) -> tuple:
        batch = batch.to(self.device)
        weight = self.edge_weight[batch.e_id] if self.edge_weight is not None else None
        return (self.task.x[batch.n_id], batch.edge_index, weight,
                self.task.y[batch.n_id[: batch.batch_size]])

    def _neighbor_epoch(self, v: Variant) -> dict:
        """Each batch's sampling, gathering onto the device and compute are timed apart;
        inference is layer-wise over all nodes (by the main process only)."""
        timer, task = self.timers[v.prefix], self.task
        total, count, it = torch.zeros((), device=self.device), 0, iter(self.batches)
        while (batch := timer.measure("sample_s", lambda: next(it, None))) is not None:
            inputs = timer.measure("transfer_s", lambda b=batch: self._gather(b))
            loss = timer.measure("compute_s", lambda x=inputs: (
                v.step(*x) if v.step is not None
                else steps.train_batch_step(v.forward, v.model, v.optimizer, *x)))
            total, count = total + loss, count + 1
        pred = timer.measure("eval_s", lambda: steps.layerwise_predict(
            v.model, task.x, self.graph, self.edge_weight, self.cfg.train.eval_chunk)
        ) if self.is_main else None
        seconds = timer.read()
        acc = steps.split_accuracy(pred, task) if pred is not None else {}
        stages = {k: seconds[k] for k in ("sample_s", "transfer_s", "compute_s")}
        return {"loss": (total / max(count, 1)).item(), "train_s": sum(stages.values()),
                "eval_s": seconds.get("eval_s"), **stages, "batches": count,
                "train_acc": acc.get("train"), "val_acc": acc.get("val"),
                "test_acc": acc.get("test")}
