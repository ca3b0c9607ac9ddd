"""Node classification on a heterogeneous graph, full batch: the model takes PyG's
`x_dict` and `edge_index_dict` and returns the target type's logits (models/hetero.py).
Compiled as a model like any other; whether dynamo traces to_hetero's per-type code and
HeteroConv's loop over relations in one graph (fullgraph=True) is the run's outcome, a
graph break or compiler error recorded with its reason.

Lazy layers get their widths from one forward before the optimizer is built (outside any
timed region); the loss and accuracies index the target's nodes with index tensors."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from omegaconf import DictConfig
from torch import Tensor

from gnnbench import models
from gnnbench.data import HeteroTask
from gnnbench.measure.timer import EpochTimer
from gnnbench.training import compilation
from gnnbench.training.epochs import TrainerBase, Variant, epoch_row
from gnnbench.training.optim import make_optimizer
from gnnbench.training.precision import forward_in
from gnnbench.training.shapes import ShapeLog


class HeteroTrainer(TrainerBase):
    """The Trainer of a heterogeneous dataset: the interface of training/epochs.Trainer
    that the runner's epoch loop reads."""

    def __init__(self, cfg: DictConfig, task: HeteroTask, device: torch.device) -> None:
        self.cfg, self.task, self.device = cfg, task, device
        data = task.data
        self.x_dict = {t: data[t].x for t in data.node_types if "x" in data[t]}
        self.edge_index_dict = {t: data[t].edge_index for t in data.edge_types}
        model = models.build_hetero_classifier(
            cfg.model, data.metadata(), {t: int(data[t].num_nodes) for t in data.node_types},
            {t: int(x.size(1)) for t, x in self.x_dict.items()}, task.target,
            task.num_classes).to(device)
        with torch.no_grad():  # lazy layers find their widths
            model(self.x_dict, self.edge_index_dict)
        forward = compilation.compile_model(model, cfg.compiler) if cfg.compile else model
        precision = cfg.train.get("precision", "fp32")
        self.variants = [Variant(forward_in(precision, device, forward), model,
                                 make_optimizer(model.parameters(), cfg.train))]
        self.requested_cuda_graphs = (compilation.requested_cuda_graphs(
            cfg.compiler, device, "full") if cfg.compile else "none")
        self.timers = {"": EpochTimer(device)}
        self.shapes = ShapeLog("exact")
        self.num_nodes = sum(int(data[t].num_nodes) for t in data.node_types)
        self.num_edges = sum(e.size(1) for e in self.edge_index_dict.values())
        self.graph = {"layout": "coo", "convert_s": 0.0, "node_types": list(data.node_types),
                      "edge_types": ["__".join(t) for t in data.edge_types]}
        self.batching = {"mode": "full", "hetero": True}

    def _call(self, v: Variant) -> Tensor:
        self.shapes.add((self.num_nodes, self.num_edges), grad=torch.is_grad_enabled())
        return v.forward(self.x_dict, self.edge_index_dict)

    def epoch(self, epoch: int) -> dict:
        v, task = self.variants[0], self.task
        timer = self.timers[v.prefix]
        train = task.splits.train

        def step() -> Tensor:
            v.model.train()
            v.optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(self._call(v)[train], task.y[train])
            loss.backward()
            v.optimizer.step()
            return loss.detach()

        @torch.no_grad()
        def predict() -> Tensor:
            v.model.eval()
            return self._call(v).argmax(dim=-1)

        loss = timer.measure("train_s", step)
        pred = timer.measure("eval_s", predict)
        acc = {name: task.accuracy(pred[idx], task.y[idx]) for name, idx in task.splits.items()}
        seconds = timer.read()
        return {"epoch": epoch, **epoch_row(loss.item(), seconds, acc)}

    def padding(self) -> dict | None:
        return None

    def shape_summary(self) -> dict:
        return {**self.shapes.summary(), "buckets": None}
