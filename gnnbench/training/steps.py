"""One training step and one inference pass, full batch. No timing, no logging, no
host synchronisation: the caller decides what to measure and when to read values."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from gnnbench.data import Task
from gnnbench.training.sampler import CSRGraph, NeighborSampler, sample_neighbors


def train_step(forward: Callable[..., Tensor], model: torch.nn.Module,
               optimizer: torch.optim.Optimizer, task: Task,
               edge_index: Tensor, edge_weight: Tensor | None) -> Tensor:
    """`forward` is the model itself or its compiled wrapper; the loss uses index tensors."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    out = forward(task.x, edge_index, edge_weight)
    train_idx = task.splits.train
    loss = F.cross_entropy(out[train_idx], task.y[train_idx])
    loss.backward()
    optimizer.step()
    return loss.detach()


def loss_of(model: torch.nn.Module, x: Tensor, edge_index: Tensor,
            edge_weight: Tensor | None, index: Tensor, y: Tensor) -> Tensor:
    """Forward and loss as one function, so `compiler.scope=step` can compile both."""
    return F.cross_entropy(model(x, edge_index, edge_weight)[index], y[index])


def batch_loss_of(model: torch.nn.Module, x: Tensor, edge_index: Tensor,
                  edge_weight: Tensor | None, y: Tensor) -> Tensor:
    """The mini-batch twin of `loss_of`: the seeds are the first len(y) nodes."""
    return F.cross_entropy(model(x, edge_index, edge_weight)[: y.numel()], y)


def whole_step(loss_fn: Callable[..., Tensor], optimizer_step: Callable[[], None],
               model: torch.nn.Module, optimizer: torch.optim.Optimizer,
               *inputs: Tensor | None) -> Tensor:
    """The step of `compiler.scope=step`, free of host syncs so that it can be captured as
    one CUDA graph. Gradients are zeroed in place, not set to None, so their addresses stay
    fixed across steps."""
    model.train()
    optimizer.zero_grad(set_to_none=False)
    loss = loss_fn(*inputs)
    loss.backward()
    optimizer_step()
    return loss.detach()


@torch.no_grad()
def predict(forward: Callable[..., Tensor], model: torch.nn.Module, task: Task,
            edge_index: Tensor, edge_weight: Tensor | None) -> Tensor:
    model.eval()
    return forward(task.x, edge_index, edge_weight).argmax(dim=-1)


def train_batch_step(forward: Callable[..., Tensor], model: torch.nn.Module,
                     optimizer: torch.optim.Optimizer, x: Tensor, edge_index: Tensor,
                     edge_weight: Tensor | None, y: Tensor) -> Tensor:
    """One mini-batch: the seeds are the first len(y) nodes of the sampled subgraph."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    out = forward(x, edge_index, edge_weight)[: y.numel()]
    loss = F.cross_entropy(out, y)
    loss.backward()
    optimizer.step()
    return loss.detach()


@torch.no_grad()
def layerwise_predict(model: torch.nn.Module, x: Tensor, graph: CSRGraph,
                      edge_weight: Tensor | None, chunk_size: int) -> Tensor:
    """Inference one layer at a time over all nodes, in chunks with their full one-hop
    neighbourhoods: memory grows with a chunk's edges, never with a k-hop explosion."""
    model.eval()
    h = x
    for i in range(len(model.convs)):
        parts = []
        for nodes in torch.arange(graph.num_nodes, device=x.device).split(chunk_size):
            hop = sample_neighbors(graph, nodes, [-1])
            weight = edge_weight[hop.e_id] if edge_weight is not None else None
            parts.append(model.layer(i, h[hop.n_id], hop.edge_index, weight)[: nodes.numel()])
        h = torch.cat(parts)
    return h.argmax(dim=-1)


@torch.no_grad()
def sampled_predict(model: torch.nn.Module, x: Tensor, graph: CSRGraph,
                    edge_weight: Tensor | None, fanouts: list[int], chunk_size: int,
                    seed: int) -> Tensor:
    """Inference for a model without gnnbench's layers (no layer-wise pass): the model on
    a sampled subgraph around each chunk of nodes, with the training fan-outs and a fixed
    seed, so every epoch evaluates on the same subgraphs."""
    model.eval()
    nodes = torch.arange(graph.num_nodes, device=x.device)
    batches = NeighborSampler(graph, nodes, fanouts, chunk_size, seed=seed)
    parts = []
    for batch in batches:
        weight = edge_weight[batch.e_id] if edge_weight is not None else None
        out = model(x[batch.n_id], batch.edge_index, weight)[: batch.batch_size]
        parts.append(out.argmax(dim=-1))
    return torch.cat(parts)


def epoch_metrics(forward: Callable[..., Tensor], model: torch.nn.Module, task: Task,
                  edge_index: Tensor, edge_weight: Tensor | None, loss: Tensor) -> Tensor:
    """The eval forward and every number an epoch reports, on the device, as one tensor:
    [loss, correct in train, in val, in test]. No host sync, so it can be compiled and
    captured with the step; one copy to the host then replaces four `.item()` reads."""
    model.eval()
    with torch.no_grad():
        pred = forward(task.x, edge_index, edge_weight).argmax(dim=-1)
        correct = [(pred[idx] == task.y[idx]).sum() for idx in task.splits.values()]
        return torch.stack([loss.detach().float().reshape(()), *[c.float() for c in correct]])


def split_accuracy(pred: Tensor, task: Task) -> dict[str, float]:
    return {name: task.accuracy(pred[idx], task.y[idx]) for name, idx in task.splits.items()}
