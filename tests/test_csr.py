"""The CSR aggregation op must compute what PyG's scatter aggregation computes, with the same
gradients, and stay inside a torch.compile(fullgraph=True, dynamic=True) graph."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from test_sampler import power_law_graph
from test_sampler_marks import SyncOps
from torch_geometric.nn import GCNConv, SAGEConv

from gnnbench.measure.dynamo import DynamoRecorder
from gnnbench.models import csr
from gnnbench.models.csr import CSRAdjacency, spmm
from gnnbench.models.gcn import GCN

N = 60


@pytest.fixture(scope="module")
def graph():
    """Multi-edges, self-loops and nodes without in-edges, all of which a real graph has."""
    edge_index = power_law_graph(N, 400, seed=2)
    edge_index = edge_index[:, edge_index[1] >= 2]  # nodes 0 and 1 receive nothing
    assert (edge_index[0] == edge_index[1]).any()
    assert torch.unique(edge_index, dim=1).size(1) < edge_index.size(1)
    return edge_index


def dense(edge_index: torch.Tensor, weight: torch.Tensor, rows: int = N) -> torch.Tensor:
    a = torch.zeros(rows, N, dtype=weight.dtype)
    return a.index_put_((edge_index[1], edge_index[0]), weight, accumulate=True)


def test_forward_is_the_dense_product_source_to_target(graph):
    weight = torch.rand(graph.size(1), dtype=torch.float64)
    x = torch.randn(N, 7, dtype=torch.float64)
    adj = CSRAdjacency.from_edge_index(graph, N, weight)
    torch.testing.assert_close(spmm(adj, x), dense(graph, weight) @ x)
    ones = CSRAdjacency.from_edge_index(graph, N)
    by_count = dense(graph, torch.ones(graph.size(1))) @ x.float()
    torch.testing.assert_close(spmm(ones, x.float()), by_count)


def test_fewer_targets_than_sources(graph):
    """A sampled batch's outer layers only need rows for the nodes they serve."""
    keep = graph[1] < 20
    sub, weight = graph[:, keep], torch.rand(int(keep.sum()), dtype=torch.float64)
    x = torch.randn(N, 3, dtype=torch.float64, requires_grad=True)
    adj = CSRAdjacency.from_edge_index(sub, N, weight, num_targets=20)
    out = spmm(adj, x)
    torch.testing.assert_close(out, dense(sub, weight, rows=20) @ x)
    out.square().sum().backward()
    grad = x.grad.clone()
    x.grad = None
    (dense(sub, weight, rows=20) @ x).square().sum().backward()
    torch.testing.assert_close(grad, x.grad)


def test_gcn_conv_with_precomputed_weights_equals_pyg(graph):
    edge_index, weight = GCN.graph_inputs(GCN.Options(normalize="precompute"), graph, N)
    conv = GCNConv(8, 5, normalize=False)
    x = torch.randn(N, 8, requires_grad=True)
    adj = CSRAdjacency.from_edge_index(edge_index, N, weight)

    def ours():
        return spmm(adj, conv.lin(x)) + conv.bias

    assert_same_output_and_grads(lambda: conv(x, edge_index, weight), ours, [x, *conv.parameters()])


def test_sage_mean_equals_pyg(graph):
    conv = SAGEConv(8, 5, aggr="mean")
    x = torch.randn(N, 8, requires_grad=True)
    adj = CSRAdjacency.from_edge_index(graph, N, aggr="mean")

    def ours():
        return conv.lin_l(spmm(adj, x)) + conv.lin_r(x)

    assert_same_output_and_grads(lambda: conv(x, graph), ours, [x, *conv.parameters()])


def assert_same_output_and_grads(theirs, ours, params) -> None:
    got, grads = [], []
    for fn in (theirs, ours):
        for p in params:
            p.grad = None
        out = fn()
        out.pow(2).sum().backward()
        got.append(out.detach())
        grads.append([p.grad.clone() for p in params])
    torch.testing.assert_close(got[1], got[0], rtol=1e-5, atol=1e-5)
    for a, b in zip(grads[1], grads[0], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_gradcheck_in_features_and_edge_weights(graph):
    small = graph[:, :80]
    adj = CSRAdjacency.from_edge_index(small, N, torch.rand(80, dtype=torch.float64))
    x = torch.randn(N, 3, dtype=torch.float64, requires_grad=True)
    values = adj.values.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda x, v: spmm(replace(adj, values=v), x), (x, values))
    out = spmm(adj, x)  # constant weights: only x gets a gradient
    out.sum().backward()
    assert adj.values.grad is None and x.grad is not None


def test_mean_aggregation_of_a_node_without_neighbours_is_zero():
    edge_index = torch.tensor([[1, 2], [0, 0]])
    adj = CSRAdjacency.from_edge_index(edge_index, 3, aggr="mean")
    out = spmm(adj, torch.tensor([[0.0], [2.0], [4.0]]))
    assert out.view(-1).tolist() == [3.0, 0.0, 0.0]
    empty = CSRAdjacency.from_edge_index(torch.empty(2, 0, dtype=torch.long), 3)
    assert spmm(empty, torch.ones(3, 2)).abs().sum() == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_on_cpu_is_computed_in_float32(graph, dtype):
    """MKL has no half kernels; the result still comes back in the input's dtype."""
    adj = CSRAdjacency.from_edge_index(graph, N, aggr="mean")
    x = torch.randn(N, 4)
    out = spmm(adj, x.to(dtype))
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), spmm(adj, x.to(dtype).float()), rtol=1e-2, atol=1e-2)


def test_building_an_adjacency_reads_nothing_back(graph):
    """Built once per sampled batch, possibly in the prefetch thread: no host sync."""
    inner = graph[:, graph[1] < 40]
    with SyncOps() as ops:
        CSRAdjacency.from_edge_index(graph, N, aggr="mean")
        CSRAdjacency.from_edge_index(inner, N, torch.rand(inner.size(1)), num_targets=40)
    assert ops.seen == []


def test_argument_checks(graph):
    with pytest.raises(ValueError, match="aggr"):
        CSRAdjacency.from_edge_index(graph, N, aggr="max")
    with pytest.raises(ValueError, match="edge_weight"):
        CSRAdjacency.from_edge_index(graph, N, torch.ones(graph.size(1)), aggr="mean")


class TwoLayers(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin1, self.lin2 = torch.nn.Linear(6, 16), torch.nn.Linear(16, 3)

    def forward(self, x, adj: CSRAdjacency):
        return self.lin2(spmm(adj, self.lin1(x).relu()))


def loss_and_grads(model, x, adj):
    model.zero_grad(set_to_none=True)
    loss = model(x, adj).logsumexp(-1).sum()
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def assert_same_step(model: torch.nn.Module, compiled, x: torch.Tensor, adj) -> None:
    """One step of `compiled` gives `model`'s eager loss and gradients."""
    loss, grads = loss_and_grads(compiled, x, adj)
    eager_loss, eager_grads = loss_and_grads(model, x, adj)
    torch.testing.assert_close(loss, eager_loss)
    for a, b in zip(grads, eager_grads, strict=True):
        torch.testing.assert_close(a, b)


def compiled_matches_eager_on_three_sizes(model: torch.nn.Module, adjacency) -> dict:
    """`model` compiled (fullgraph, dynamic) against itself eager on three graphs of other
    sizes (`adjacency(edge_index, n, e)` builds each), two steps each: the same loss and
    gradients. Returns dynamo's snapshot of the compiled calls."""
    compiled = torch.compile(model, fullgraph=True, dynamic=True)
    with DynamoRecorder() as recorder:
        for n, e in ((50, 300), (80, 500), (120, 700)):  # three graphs, three sizes
            adj = adjacency(power_law_graph(n, e, seed=n), n, e)
            x = torch.randn(n, 6)
            for _ in range(2):  # the adjacency's transpose serves every step
                assert_same_step(model, compiled, x, adj)
        return recorder.snapshot()


@pytest.mark.slow
def test_compiles_in_one_graph_with_dynamic_shapes_and_matches_eager(monkeypatch):
    builds = []
    real_transpose = csr._transpose
    monkeypatch.setattr(csr, "_transpose", lambda *a: builds.append(1) or real_transpose(*a))
    torch.manual_seed(0)
    seen = compiled_matches_eager_on_three_sizes(
        TwoLayers(), lambda edges, n, e: CSRAdjacency.from_edge_index(edges, n, torch.rand(e)))
    assert seen["graph_breaks"] == 0
    assert seen["graphs"] == 1 and seen["recompiles"] == 0  # one graph serves every size
    assert len(builds) == 3  # once per graph, never per step or in the backward


@pytest.mark.gpu
def test_cusparse_sums_multi_edges_and_compiles():
    edge_index = power_law_graph(N, 400, seed=2)
    weight = torch.rand(edge_index.size(1), dtype=torch.float64)
    x = torch.randn(N, 7, dtype=torch.float64)
    adj = CSRAdjacency.from_edge_index(edge_index, N, weight).to("cuda")
    expected = dense(edge_index, weight) @ x
    torch.testing.assert_close(spmm(adj, x.cuda()).cpu(), expected)
    model = TwoLayers().cuda()
    compiled = torch.compile(model, fullgraph=True, dynamic=True)
    adj32 = replace(adj, values=adj.values.float())
    assert_same_step(model, compiled, torch.randn(N, 6, device="cuda"), adj32)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_on_cuda(dtype):
    """cuSPARSE's own half kernels, if this torch build has them; if not, this fails with
    torch's 'not implemented for' error, and csr_mm should upcast on CUDA as on CPU."""
    edge_index = power_law_graph(N, 400, seed=2)
    adj = CSRAdjacency.from_edge_index(edge_index, N, aggr="mean").to("cuda")
    x = torch.randn(N, 8, device="cuda")
    out = spmm(adj, x.to(dtype))
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), spmm(adj, x.to(dtype).float()), rtol=2e-2,
                               atol=2e-2)
