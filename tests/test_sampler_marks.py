"""The node-sized mark array that replaces torch.unique must change nothing a model sees:
the same batches as the sort-based path and as a fresh sampler, whatever came before, with
the host reads the sampler promises (one per hop) and no hidden ones."""

from __future__ import annotations

import pytest
import torch
from test_sampler import pick_seeds, power_law_graph, reference_full_expansion
from torch.utils._python_dispatch import TorchDispatchMode

from gnnbench.training import sampler
from gnnbench.training.dedup import NOT_REACHED
from gnnbench.training.sampler import CSRGraph, NeighborSampler, NodeMarks, sample_neighbors

DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)]
# aten ops that read a device value back to the host (a stream sync on CUDA)
SYNCING = {"nonzero", "_unique2", "unique_dim", "unique_consecutive", "_local_scalar_dense",
           "masked_select", "item", "bincount"}


def assert_same_batch(a: sampler.Batch, b: sampler.Batch) -> None:
    assert torch.equal(a.n_id, b.n_id)
    assert torch.equal(a.edge_index, b.edge_index)
    assert torch.equal(a.e_id, b.e_id)
    assert a.batch_size == b.batch_size
    assert a.num_sampled_nodes == b.num_sampled_nodes
    assert a.num_sampled_edges == b.num_sampled_edges


@pytest.fixture(scope="module")
def graph_data():
    n = 1500
    return power_law_graph(n, 12000), n


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fanouts", [[10, 5, 3], [-1, 4], [3, -1], [25, 0, 2]])
def test_marks_give_the_batches_torch_unique_gives(graph_data, device, fanouts):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index.to(device), n)
    marks = NodeMarks(n, device)
    for seed in range(4):
        seeds = pick_seeds(n, 16 * (seed + 1), seed=seed, device=device)
        by_sort = sample_neighbors(graph, seeds, fanouts,
                                   torch.Generator(device=device).manual_seed(seed))
        by_marks = sample_neighbors(graph, seeds, fanouts,
                                    torch.Generator(device=device).manual_seed(seed), marks)
        assert_same_batch(by_marks, by_sort)


def test_marks_keep_neighbor_loaders_order(graph_data):
    edge_index, n = graph_data
    seeds = pick_seeds(n, 30)
    n_id, edges = reference_full_expansion(edge_index, seeds.tolist(), 3)
    for fanouts in ([-1, -1, -1], [10_000] * 3):  # take-all, and a fan-out above every degree
        batch = sample_neighbors(CSRGraph.from_edge_index(edge_index, n), seeds, fanouts,
                                 marks=NodeMarks(n, "cpu"))
        assert batch.n_id.tolist() == n_id
        got = torch.cat([batch.edge_index, batch.e_id.unsqueeze(0)]).t().tolist()
        assert [tuple(e) for e in got] == edges


@pytest.mark.parametrize("device", DEVICES)
def test_a_reused_mark_array_gives_what_a_fresh_one_gives(graph_data, device):
    """Batch after batch over one NodeMarks, each equal to the same draw over a brand-new one,
    and the array clean in between: nothing leaks from one batch into the next."""
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index.to(device), n)
    seeds = pick_seeds(n, 300, device=device)
    reused, gen_reused = NodeMarks(n, device), torch.Generator(device=device).manual_seed(3)
    gen_fresh = torch.Generator(device=device).manual_seed(3)
    for _ in range(2):
        for chunk in seeds.split(64):
            got = sample_neighbors(graph, chunk, [6, 4, 2], gen_reused, reused)
            assert bool((reused.ids == NOT_REACHED).all())
            expected = sample_neighbors(graph, chunk, [6, 4, 2], gen_fresh, NodeMarks(n, device))
            assert_same_batch(got, expected)


@pytest.mark.parametrize("device", DEVICES)
def test_neighbor_sampler_dedup_choices_replay_the_same_epochs(graph_data, device):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index.to(device), n)
    seeds = pick_seeds(n, 230, device=device)
    by_marks = NeighborSampler(graph, seeds, [5, 5], 64, shuffle=True, seed=1)
    by_sort = NeighborSampler(graph, seeds, [5, 5], 64, shuffle=True, seed=1, dedup="unique")
    assert by_marks.marks is not None and by_sort.marks is None
    for _ in range(2):
        for a, b in zip(by_marks, by_sort, strict=True):
            assert_same_batch(a, b)
    with pytest.raises(ValueError, match="dedup"):
        NeighborSampler(graph, seeds, [5], 64, dedup="hash")


def test_a_sampling_that_fails_half_way_leaves_no_trace(graph_data, monkeypatch):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index, n)
    marks = NodeMarks(n, "cpu")
    seeds = pick_seeds(n, 40)
    reads = 0
    real_host = sampler.host_read

    def fail_on_second_read(values):
        nonlocal reads
        reads += 1
        if reads == 2:
            raise RuntimeError("device lost")
        return real_host(values)

    monkeypatch.setattr(sampler, "host_read", fail_on_second_read)
    with pytest.raises(RuntimeError, match="device lost"):
        sample_neighbors(graph, seeds, [4, 4], torch.Generator().manual_seed(0), marks)
    monkeypatch.setattr(sampler, "host_read", real_host)
    assert not bool((marks.ids == NOT_REACHED).all())  # half-written, as it died
    after = sample_neighbors(graph, seeds, [4, 4], torch.Generator().manual_seed(0), marks)
    expected = sample_neighbors(graph, seeds, [4, 4], torch.Generator().manual_seed(0))
    assert_same_batch(after, expected)
    assert bool((marks.ids == NOT_REACHED).all())


def test_one_mark_array_serves_one_sampling_at_a_time():
    marks = NodeMarks(10, "cpu")
    with marks.claim(), pytest.raises(RuntimeError, match="in use"), marks.claim():
        pass
    with marks.claim():  # released again, error or not
        pass


class SyncOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ in SYNCING:
            self.seen.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def test_marks_read_one_pair_of_counts_per_hop_and_nothing_else(graph_data, monkeypatch):
    """On CUDA each read stalls the launching thread until the GPU catches up: a hop with a
    positive fan-out reads once (new nodes and edges together), a take-all hop twice (its
    edge total first), and no op reads behind the sampler's back. (The graph's maximum
    degree is read once per graph, on first use.)"""
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index, n)
    assert graph.max_degree == int(torch.bincount(edge_index[1]).max())
    reads: list[int] = []
    real_host = sampler.host_read
    monkeypatch.setattr(sampler, "host_read", lambda t: reads.append(t.numel()) or real_host(t))
    for fanouts, expected in (([15, 10, 5], [2, 2, 2]), ([-1, 3], [1, 1, 2])):
        reads.clear()
        with SyncOps() as ops:
            sample_neighbors(graph, pick_seeds(n, 64), fanouts, torch.Generator().manual_seed(0),
                             NodeMarks(n, "cpu"))
        assert ops.seen == []
        assert reads == expected
