"""Node classification on a heterogeneous graph, full batch or in neighbour batches of the
target type (`train.batching=neighbor`, training/hetero_sampler.py): the model takes PyG's
`x_dict` and `edge_index_dict` (and, on a batch, the featureless types' global ids for
their embeddings) and returns the target type's logits (models/hetero.py).
Compiled as a model like any other; whether dynamo traces to_hetero's per-type code and
HeteroConv's loop over relations in one graph (fullgraph=True) is the run's outcome, a
graph break or compiler error recorded with its reason.

Lazy layers get their widths from one forward before the optimizer is built (outside any
timed region); the loss and accuracies index the target's nodes with index tensors.

Neighbour batches train on sampled subgraphs, each of its own shape (every node and edge
type's count), logged like graph batches' (`shapes`). Evaluation stays one full-graph
forward, as in full-batch mode: exact accuracies with no sampling in them, and no layer-wise
inference to write per type (the graphs this suite runs fit a full forward in memory)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from omegaconf import DictConfig
from torch import Tensor

from gnnbench import models
from gnnbench.data import HeteroTask
from gnnbench.measure.timer import EpochTimer
from gnnbench.training import compilation
from gnnbench.training.epochs import TrainerBase, Variant, batches_row, epoch_row, train_batches
from gnnbench.training.hetero_sampler import HeteroBatch, HeteroNeighborSampler, typed_csr
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
            cfg.compiler, device, cfg.train.batching) if cfg.compile else "none")
        self.timers = {"": EpochTimer(device)}
        self.shapes = ShapeLog("exact")
        self.num_nodes = sum(int(data[t].num_nodes) for t in data.node_types)
        self.num_edges = sum(e.size(1) for e in self.edge_index_dict.values())
        self.graph = {"layout": "coo", "convert_s": 0.0, "node_types": list(data.node_types),
                      "edge_types": ["__".join(t) for t in data.edge_types]}
        self.batching = {"mode": "full", "hetero": True}
        self.batches: HeteroNeighborSampler | None = None
        self.featureless = [t for t in data.node_types if t not in self.x_dict]
        if cfg.train.batching == "neighbor":
            self._set_up_neighbor_batches()

    def _set_up_neighbor_batches(self) -> None:
        """gnnbench's typed sampler (PyG's needs pyg-lib: refused by the runner's checks),
        over the training papers, shuffled by train.seed."""
        train, data = self.cfg.train, self.task.data
        graphs = typed_csr(self.edge_index_dict,
                           {t: int(data[t].num_nodes) for t in data.node_types})
        self.batches = HeteroNeighborSampler(
            graphs, list(data.node_types), self.task.target, self.task.splits.train,
            list(train.fanouts), int(train.batch_size), shuffle=True, seed=int(train.seed))
        self.batching = {"mode": "neighbor", "hetero": True, "sampler": "gnnbench",
                         "fanouts": list(train.fanouts), "batch_size": int(train.batch_size),
                         "batches_per_epoch": len(self.batches), "inference": "full graph",
                         "padded": False, "prefetch": False}

    def _call(self, v: Variant) -> Tensor:
        self.shapes.add((self.num_nodes, self.num_edges), grad=torch.is_grad_enabled())
        return v.forward(self.x_dict, self.edge_index_dict)

    @torch.no_grad()
    def _predict(self, v: Variant) -> Tensor:
        """Every target node's class from one full-graph forward (both modes' evaluation)."""
        v.model.eval()
        return self._call(v).argmax(dim=-1)

    def _gather(self, batch: HeteroBatch) -> tuple[dict, dict, dict, Tensor, HeteroBatch]:
        """A batch's model inputs on the device: features of the types that have them, the
        featureless types' global ids (their embedding rows), the seeds' labels."""
        batch = batch.to(self.device)
        x = {t: x.index_select(0, batch.n_id[t]) for t, x in self.x_dict.items()}
        n_id = {t: batch.n_id[t] for t in self.featureless}
        y = self.task.y.index_select(0, batch.n_id[self.task.target][: batch.batch_size])
        return x, batch.edge_index, n_id, y, batch

    def epoch(self, epoch: int) -> dict:
        if self.batches is not None:
            return self._neighbor_epoch(epoch)
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

        loss = timer.measure("train_s", step)
        pred = timer.measure("eval_s", lambda: self._predict(v))
        acc = {name: task.accuracy(pred[idx], task.y[idx]) for name, idx in task.splits.items()}
        seconds = timer.read()
        return {"epoch": epoch, **epoch_row(loss.item(), seconds, acc)}

    def _neighbor_epoch(self, epoch: int) -> dict:
        """Each batch's sampling, gathering and compute timed apart (as the homogeneous
        neighbour epoch); the seeds are the first batch_size target rows of the output."""
        v, task = self.variants[0], self.task
        timer = self.timers[v.prefix]
        def step(inputs: tuple) -> Tensor:
            x, edge_index, n_id, y, batch = inputs
            v.model.train()
            v.optimizer.zero_grad(set_to_none=True)
            self.shapes.add(batch.shape(), grad=True)
            out = v.forward(x, edge_index, n_id)
            loss = F.cross_entropy(out[: batch.batch_size], y)
            loss.backward()
            v.optimizer.step()
            return loss.detach()

        total, count = train_batches(timer, self.batches, self._gather, step, self.device)
        pred = timer.measure("eval_s", lambda: self._predict(v))
        acc = {name: task.accuracy(pred[idx], task.y[idx]) for name, idx in task.splits.items()}
        return {**batches_row(epoch, total, count, timer.read()),
                **{f"{k}_acc": acc[k] for k in ("train", "val", "test")},
                "distinct_shapes": len(self.shapes.shapes)}

    def padding(self) -> dict | None:
        return None

    def shape_summary(self) -> dict:
        return {**self.shapes.summary(), "buckets": None}
