"""Graph classification in mini-batches of whole graphs (PyG's DataLoader): the case
`compiler.dynamic=True` exists for, since every batch has its own node and edge count.

How batches meet the (compiled) model is `train.shape_policy`:
- `exact`: each batch as it comes. Without dynamic shapes every new shape recompiles, until
  dynamo's recompile limit (with fullgraph=True a `compile_error` whose record says the limit
  was hit); under reduce-overhead each new shape is a new CUDA-graph recording.
- `mark_dynamic`: the node and edge dimensions of every batch are marked dynamic
  (`torch._dynamo.mark_dynamic`), so the first compile is already shape-generic.
- `buckets`: each batch is padded up to the smallest rung of a short ladder of (nodes,
  edges) shapes (training/buckets.py's ladder, built from the training split's own batch
  sizes), and to `batch_size + 1` graphs: padding nodes form one padding graph, whose label
  the loss ignores, padding edges run from real nodes into one of them (weight 0;
  buckets.padding_edges says why not self-loops). Real graphs' pooled
  embeddings and the loss are exactly those of the unpadded batch; batch norm would see the
  padding rows, so buckets need a model without it (config/validate.py).

The training split is shuffled by a generator seeded with `train.seed`; evaluation batches
(validation and test, in order) are collated, moved and padded once, before training.
`train.prefetch=true` collates the training batches in DataLoader worker processes (kept
for the run; no pin-memory thread, whose unpickling competed with the step for the GIL)
while the step trains: PyG's collation of a batch of small
graphs costs about as much host time as a compiled step, so without it an epoch is bound
by the loader whatever the model does. The order of batches is the sampler's, drawn in
this process: the same batches, prefetched or not. Signals are the main process's: a
worker ignores Ctrl-C and SIGTERM sent to the whole process group (a terminal's Ctrl-C,
`timeout`, SLURM), which would otherwise kill it and make the DataLoader raise inside
whatever the main process was doing while it saved the interrupted run."""

from __future__ import annotations

import os
import signal
from typing import NamedTuple

import torch
import torch.nn.functional as F
from omegaconf import DictConfig
from torch import Tensor
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from gnnbench import models
from gnnbench.data import GraphTask
from gnnbench.measure.timer import EpochTimer
from gnnbench.training import compilation
from gnnbench.training.buckets import IGNORE_LABEL, Buckets, padding_edges
from gnnbench.training.epochs import TrainerBase, Variant, batches_row, train_batches
from gnnbench.training.optim import make_optimizer
from gnnbench.training.precision import forward_in
from gnnbench.training.shapes import ShapeLog

EVAL_SPLITS = ("val", "test")


def ladder(sizes: list[int], edges: list[int], batch_size: int, seed: int,
           probe_epochs: int = 4) -> Buckets:
    """Bucket shapes around the batches this split makes: `probe_epochs` shuffles (with a
    seed of their own: the training order is untouched) give every batch's (nodes, edges),
    read from the graphs' sizes without collating; the top rung holds the `batch_size`
    largest graphs together, so any batch fits."""
    g = torch.Generator().manual_seed(seed)
    n, e = torch.tensor(sizes), torch.tensor(edges)
    probes = []
    for _ in range(probe_epochs):
        for chunk in torch.randperm(len(sizes), generator=g).split(batch_size):
            probes.append((int(n[chunk].sum()), int(e[chunk].sum())))
    bound = (int(n.topk(min(batch_size, len(sizes))).values.sum()),
             int(e.topk(min(batch_size, len(edges))).values.sum()))
    return Buckets.from_sizes(probes, seeds=0, bound=bound, align=16)


def loader_workers() -> int:
    """Collating processes for a prefetching loader: up to 4, leaving a core to the process
    that launches the steps (one on a 2-core machine)."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


def _leave_signals_to_the_run(_: int) -> None:
    """In a loader worker: the run's process handles Ctrl-C and SIGTERM (its loop saves the
    record) and ends the workers; a worker outlives neither (it watches its parent)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


class Inputs(NamedTuple):
    """A batch as the model and the loss take it, with its unpadded size."""

    x: Tensor
    edge_index: Tensor
    edge_weight: Tensor | None
    batch: Tensor  # each node's graph
    num_graphs: int  # the pooling's output rows (padded: batch_size + 1)
    y: Tensor
    real: tuple[int, int]  # (nodes, edges) before padding
    real_graphs: int  # the batch's graphs before the padding graph

    def model_inputs(self) -> tuple:
        return self.x, self.edge_index, self.edge_weight, self.batch, self.num_graphs


class GraphBatchTrainer(TrainerBase):
    """The Trainer of a graph-level dataset: the same interface as training/epochs.Trainer
    (what the runner's epoch loop reads), with batches of whole graphs."""

    def __init__(self, cfg: DictConfig, task: GraphTask, device: torch.device) -> None:
        self.cfg, self.task, self.device = cfg, task, device
        train = cfg.train
        self.precision = train.get("precision", "fp32")
        self.batch_size = int(train.batch_size)
        self.policy = train.get("shape_policy", "exact")
        graphs = [self._prepared(g) for g in task.graphs]
        model = models.build_graph_classifier(cfg.model, task.num_features,
                                              task.num_classes).to(device)
        forward = compilation.compile_model(model, cfg.compiler) if cfg.compile else model
        self.variants = [Variant(forward_in(self.precision, device, forward), model,
                                 make_optimizer(model.parameters(), train))]
        self.requested_cuda_graphs = (compilation.requested_cuda_graphs(
            cfg.compiler, device, "graphs") if cfg.compile else "none")
        self.timers = {"": EpochTimer(device)}
        self.shapes = ShapeLog(self.policy)
        train_graphs = [graphs[i] for i in task.splits.train.tolist()]
        self.buckets = (ladder([g.num_nodes for g in train_graphs],
                               [g.edge_index.size(1) for g in train_graphs],
                               self.batch_size, seed=2**31 - 1)
                        if self.policy == "buckets" else None)
        if self.buckets is not None and cfg.compile and cfg.compiler.dynamic is False:
            # Each rung, and the last, smaller batch of a split, in training and in
            # evaluation (another grad mode: other guards).
            self.recompile_bound = 2 * (len(self.buckets.shapes) + 1)
        generator = torch.Generator().manual_seed(int(train.seed))
        workers = loader_workers() if train.get("prefetch") else 0
        if workers:  # a batch's dozen tensors through shared-memory files, not a socket
            # handshake for each tensor's file descriptor (torch's default)
            torch.multiprocessing.set_sharing_strategy("file_system")
        self.loader = DataLoader(train_graphs, batch_size=self.batch_size, shuffle=True,
                                 generator=generator, num_workers=workers,
                                 persistent_workers=workers > 0,
                                 worker_init_fn=_leave_signals_to_the_run if workers else None)
        self.loader_epochs = 0
        self.labels = {split: torch.cat([graphs[i].y for i in task.splits[split].tolist()])
                       for split in EVAL_SPLITS}
        self.eval_batches = {split: [self._inputs(b) for b in DataLoader(
            [graphs[i] for i in task.splits[split].tolist()], batch_size=self.batch_size)]
            for split in EVAL_SPLITS}
        self.graph = {"layout": "coo", "convert_s": 0.0}
        self.batching = {"mode": "graphs", "sampler": "pyg DataLoader",
                         "batch_size": self.batch_size, "batches_per_epoch": len(self.loader),
                         "shape_policy": self.policy, "prefetch": workers > 0,
                         "loader_workers": workers,
                         "buckets": [list(s) for s in self.buckets.shapes]
                         if self.buckets is not None else None}

    def _epoch_batches(self) -> DataLoader:
        """The loader, for one epoch's iteration. A DataLoader draws its workers' base seed
        from the shuffling generator each time a fresh iterator starts: every epoch without
        workers, only the first with persistent ones. That draw is made here for their later
        epochs, so the generator yields the same permutations, prefetched or not."""
        if self.loader_epochs and self.loader.persistent_workers:
            torch.empty((), dtype=torch.int64).random_(generator=self.loader.generator)
        self.loader_epochs += 1
        return self.loader

    def _prepared(self, graph: Data) -> Data:
        """The edges (and weights) the model consumes, computed once per graph before
        training (GCN's normalisation: PyG's advice for torch.compile)."""
        edge_index, edge_weight = models.graph_inputs(self.cfg.model, graph.edge_index,
                                                      graph.num_nodes)
        out = Data(x=graph.x, edge_index=edge_index, y=graph.y.reshape(-1),
                   num_nodes=graph.num_nodes)
        if edge_weight is not None:
            out.edge_weight = edge_weight
        return out

    def _inputs(self, batch: Batch) -> Inputs:
        """A collated batch on the device, shaped by the policy. Sizes come from shapes
        already on the host: no sync."""
        batch = batch.to(self.device, non_blocking=True)
        x, edge_index, y = batch.x, batch.edge_index, batch.y
        weight = batch.get("edge_weight")
        index, graphs = batch.batch, int(batch.num_graphs)
        if self.buckets is not None:
            return self._padded(x, edge_index, weight, index, y)
        if self.policy == "mark_dynamic":
            compilation.mark_dynamic((x, 0), (edge_index, 1), (weight, 0), (index, 0), (y, 0))
        return Inputs(x, edge_index, weight, index, graphs, y, (x.size(0), edge_index.size(1)),
                      graphs)

    def _padded(self, x: Tensor, edge_index: Tensor, weight: Tensor | None, index: Tensor,
                y: Tensor) -> Inputs:
        n, e = x.size(0), edge_index.size(1)
        nodes, edges = self.buckets.shape_for(n, e)
        self.buckets.waste.add((n, e), (nodes, edges))
        slots = self.batch_size + 1  # the real graphs, then the padding graph
        pad_edges = padding_edges(edge_index, n, nodes, edges - e)
        return Inputs(torch.cat([x, x.new_zeros(nodes - n, *x.shape[1:])]),
                      torch.cat([edge_index, pad_edges], 1),
                      None if weight is None else torch.cat([weight,
                                                             weight.new_zeros(edges - e)]),
                      torch.cat([index, index.new_full((nodes - n,), self.batch_size)]),
                      slots,
                      torch.cat([y, y.new_full((slots - y.numel(),), IGNORE_LABEL)]),
                      (n, e), y.numel())

    def _call(self, v: Variant, inputs: Inputs) -> Tensor:
        """The model on one batch; its shape as the model sees it is logged."""
        self.shapes.add((inputs.x.size(0), inputs.edge_index.size(1), inputs.num_graphs),
                        inputs.real, torch.is_grad_enabled())
        return v.forward(*inputs.model_inputs())

    def epoch(self, epoch: int) -> dict:
        v = self.variants[0]
        timer = self.timers[v.prefix]
        def step(inputs: Inputs) -> Tensor:
            v.model.train()
            v.optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(self._call(v, inputs), inputs.y)
            loss.backward()
            v.optimizer.step()
            return loss.detach()

        total, count = train_batches(timer, self._epoch_batches(), self._inputs, step,
                                     self.device)
        scores = timer.measure("eval_s", lambda: self._evaluate(v))
        acc = self._scores(scores)
        return {**batches_row(epoch, total, count, timer.read()), "train_acc": None,
                **{f"{split}_acc": acc[split] for split in EVAL_SPLITS},
                "distinct_shapes": len(self.shapes.shapes)}

    @torch.no_grad()
    def _evaluate(self, v: Variant) -> list[Tensor]:
        """Per evaluated split, on the device: the correct predictions (one count), or, for
        a ROC-AUC task, every graph's score of class 1 (read once, after timing)."""
        v.model.eval()
        out = []
        for split in EVAL_SPLITS:
            found = []
            for inputs in self.eval_batches[split]:
                logits = self._call(v, inputs)
                if self.task.metric == "rocauc":
                    found.append(logits[: inputs.real_graphs].softmax(dim=-1)[:, 1])
                else:  # padding labels (-100) never match
                    found.append((logits.argmax(dim=-1) == inputs.y).sum())
            out.append(torch.cat(found) if self.task.metric == "rocauc"
                       else torch.stack(found).sum())
        return out

    def _scores(self, found: list[Tensor]) -> dict[str, float]:
        if self.task.metric == "rocauc":
            return {split: self.task.accuracy(scores.cpu(), self.labels[split])
                    for split, scores in zip(EVAL_SPLITS, found, strict=True)}
        counts = torch.stack(found).tolist()
        return {split: c / max(self.task.splits[split].numel(), 1)
                for split, c in zip(EVAL_SPLITS, counts, strict=True)}

    def padding(self) -> dict | None:
        return self.buckets.waste.summary() if self.buckets is not None else None

    def shape_summary(self) -> dict:
        return {**self.shapes.summary(), "buckets": len(self.buckets.shapes)
                if self.buckets is not None else None}
