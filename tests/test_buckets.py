"""Padding a sampled batch to a bucket shape must not change what training computes: the same
loss and gradients as the unpadded batch, with few distinct shapes and the waste known."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf
from test_sampler import pick_seeds, power_law_graph
from test_sampler_marks import SyncOps

from gnnbench import models
from gnnbench.training import steps
from gnnbench.training.buckets import IGNORE_LABEL, Buckets, fanout_bound
from gnnbench.training.sampler import CSRGraph, NeighborSampler

N, FEATURES, CLASSES = 2000, 12, 5
MODELS = {
    "gcn": {"_target_": "gnnbench.models.gcn.GCN", "normalize": "precompute"},
    "sage": {"_target_": "gnnbench.models.sage.SAGE", "aggr": "mean"},
}


@pytest.fixture(scope="module")
def task():
    torch.manual_seed(0)
    edge_index = power_law_graph(N, 16000, seed=4)
    x = torch.randn(N, FEATURES, dtype=torch.float64)
    y = torch.randint(CLASSES, (N,))
    return edge_index, x, y


def build(name: str, edge_index: torch.Tensor):
    cfg = OmegaConf.create({"name": name, "num_layers": 3, "hidden": 16, "dropout": 0.0,
                            "input_dropout": 0.0, "batch_norm": False, **MODELS[name]})
    graph_edges, weight = models.graph_inputs(cfg, edge_index, N)
    torch.manual_seed(1)
    model = models.build_model(cfg, FEATURES, CLASSES).double()
    return model, graph_edges, weight


def loss_and_grads(model, x, edge_index, weight, y):
    model.zero_grad(set_to_none=True)
    loss = steps.batch_loss_of(model, x, edge_index, weight, y)
    loss.backward()
    return loss.detach(), {k: p.grad.clone() for k, p in model.named_parameters()}


@pytest.mark.parametrize("name", ["gcn", "sage"])
def test_padded_batches_give_the_unpadded_loss_and_gradients(task, name):
    edge_index, x, y = task
    model, graph_edges, weight = build(name, edge_index)
    assert (weight is not None) == (name == "gcn")  # GCN: per-edge weights, SAGE: mean
    sampler = NeighborSampler(CSRGraph.from_edge_index(graph_edges, N), pick_seeds(N, 150),
                              [6, 4, 3], batch_size=64, shuffle=True, seed=0)
    buckets = Buckets.for_sampler(sampler, probes=3)
    batches = list(sampler)
    assert batches[-1].batch_size < 64  # the short last batch pads its labels too
    for batch in batches:
        w = weight[batch.e_id] if weight is not None else None
        inputs = (x[batch.n_id], batch.edge_index, w, y[batch.n_id[:batch.batch_size]])
        padded = buckets.pad(*inputs)
        assert padded.x.size(0) > batch.n_id.numel()  # at least the padding node
        assert padded.y.numel() == 64
        loss, grads = loss_and_grads(model, *inputs)
        padded_loss, padded_grads = loss_and_grads(model, *padded)
        torch.testing.assert_close(padded_loss, loss, rtol=1e-12, atol=1e-12)
        for key, grad in grads.items():
            torch.testing.assert_close(padded_grads[key], grad, rtol=1e-12, atol=1e-12)


def test_padding_edges_reach_no_real_node(task):
    """Padding edges end in the last padding node, so no real node gains an in-edge (its
    in-degree, a mean's divisor, is unchanged); they start at real nodes, in turn, never at
    the padding node itself (a sum would feed it its own rows at every layer)."""
    edge_index, x, y = task
    sampler = NeighborSampler(CSRGraph.from_edge_index(edge_index, N), pick_seeds(N, 64),
                              [5, 5], batch_size=64)
    batch = next(iter(sampler))
    n = batch.n_id.numel()
    buckets = Buckets([(n + 10, batch.edge_index.size(1) + 50)], seeds=64)
    with SyncOps() as ops:  # sizes come from shapes: padding reads nothing back
        padded = buckets.pad(x[batch.n_id], batch.edge_index, torch.ones(batch.e_id.numel()),
                             y[batch.n_id[:64]])
    assert ops.seen == []
    extra = padded.edge_index[:, batch.edge_index.size(1):]
    assert extra.size(1) == 50 and bool((extra[1] == n + 9).all())
    assert extra[0].tolist() == [i % n for i in range(50)]
    assert torch.equal(torch.bincount(padded.edge_index[1], minlength=n + 10)[:n],
                       torch.bincount(batch.edge_index[1], minlength=n))
    assert padded.edge_weight[-50:].abs().sum() == 0 and padded.x[n:].abs().sum() == 0
    assert padded.y.tolist() == y[batch.n_id[:64]].tolist()  # a full batch: nothing to ignore


def test_an_epoch_shows_at_most_one_shape_per_rung_and_reports_its_waste():
    n = 20000
    graph = CSRGraph.from_edge_index(power_law_graph(n, 200000, seed=5), n)
    sampler = NeighborSampler(graph, pick_seeds(n, 3000), [10, 5, 3], batch_size=128,
                              shuffle=True, seed=0)
    buckets = Buckets.for_sampler(sampler, probes=6, ratio=1.15)
    x, y = torch.zeros(n, 1), torch.zeros(n, dtype=torch.long)
    sizes = set()
    for _ in range(2):
        for batch in sampler:
            sizes.add((batch.n_id.numel(), batch.edge_index.size(1)))
            buckets.pad(x[batch.n_id], batch.edge_index, None, y[batch.n_id[:batch.batch_size]])
    waste = buckets.waste.summary()
    assert waste["batches"] == 2 * len(sampler) == 48
    assert len(sizes) > 40  # unpadded, nearly every batch is a shape of its own
    assert waste["distinct_shapes"] <= len(buckets.shapes) <= 6
    assert waste["distinct_shapes"] == len(buckets.waste.shapes)
    # Rungs 15 % apart: full batches pad by under a rung (+ alignment); the short last one
    # of each epoch pads up to the smallest rung.
    assert 1.0 < waste["node_ratio"] < 1.3 and 1.0 < waste["edge_ratio"] < 1.3


def test_the_top_rung_takes_any_batch_the_fanouts_allow():
    n = 500
    graph = CSRGraph.from_edge_index(power_law_graph(n, 4000, seed=6), n)
    sampler = NeighborSampler(graph, torch.arange(n), [-1, -1], batch_size=100, seed=0)
    assert fanout_bound(sampler) == (n, 4000)  # capped by the graph itself
    buckets = Buckets.from_sizes([(150, 200)] * 3, seeds=100, bound=fanout_bound(sampler))
    assert buckets.shapes[-1] == (n + 1, 4000)
    for batch in sampler:  # take-all batches, far above the probes
        n_nodes, n_edges = batch.n_id.numel(), batch.edge_index.size(1)
        nodes, edges = buckets.shape_for(n_nodes, n_edges)
        assert nodes > n_nodes and edges >= n_edges


def test_bad_ladders_and_batches_are_refused():
    with pytest.raises(ValueError, match="more than 64 nodes"):
        Buckets([(64, 100)], seeds=64)
    with pytest.raises(ValueError, match="together"):
        Buckets([(100, 500), (200, 400)], seeds=10)
    with pytest.raises(ValueError, match="ratio"):
        Buckets.from_sizes([(10, 10)], seeds=1, bound=(100, 100), ratio=1.0)
    buckets = Buckets([(100, 500)], seeds=10)
    with pytest.raises(ValueError, match="exceeds"):
        buckets.shape_for(100, 10)
    with pytest.raises(ValueError, match="labels"):
        buckets.pad(torch.zeros(5, 1), torch.zeros(2, 0, dtype=torch.long), None,
                    torch.zeros(11, dtype=torch.long))
    assert IGNORE_LABEL == torch.nn.CrossEntropyLoss().ignore_index
