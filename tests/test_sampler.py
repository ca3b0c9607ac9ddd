"""The torch-only neighbour sampler must hand models what NeighborLoader would: real edges,
fan-outs honoured without replacement, seeds first, and the exact k-hop computation graph
when the fan-outs cover every neighbour."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from torch_geometric.utils import k_hop_subgraph

from gnnbench.training.sampler import (
    Batch,
    CSRGraph,
    NeighborSampler,
    pyg_available,
    sample_neighbors,
)

DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)]


def power_law_graph(num_nodes: int, num_edges: int, seed: int = 0, device: str = "cpu"):
    """Heavy-tailed in- and out-degrees, with the self-loops, multi-edges and isolated
    nodes a real graph has, so both the take-all and the Floyd paths run."""
    g = torch.Generator().manual_seed(seed)
    weight = (1.0 - torch.rand(num_nodes, generator=g)).pow(-1.0 / 1.2)
    src = torch.multinomial(weight, num_edges, replacement=True, generator=g)
    dst = torch.multinomial(weight, num_edges, replacement=True, generator=g)
    return torch.stack([src, dst]).to(device)


def in_degree(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    return torch.bincount(edge_index[1], minlength=num_nodes)


def pick_seeds(num_nodes: int, count: int, seed: int = 1, device: str = "cpu") -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(num_nodes, generator=g)[:count].to(device)


def hop_ranges(batch: Batch) -> list[tuple[int, int]]:
    """[start, end) of the local ids first reached at each hop (hop 0 = seeds)."""
    ends = torch.tensor(batch.num_sampled_nodes).cumsum(0).tolist()
    return list(zip([0, *ends[:-1]], ends, strict=True))


def reference_full_expansion(edge_index: torch.Tensor, seeds: list[int], hops: int):
    """NeighborLoader's recipe in plain Python, taking every neighbour in edge order."""
    incoming: dict[int, list[tuple[int, int]]] = {}
    for e, (s, t) in enumerate(edge_index.t().tolist()):
        incoming.setdefault(t, []).append((s, e))
    n_id, local, frontier, edges = list(seeds), {v: i for i, v in enumerate(seeds)}, seeds, []
    for _ in range(hops):
        new = []
        for t in frontier:
            for s, e in incoming.get(t, []):
                if s not in local:
                    local[s] = len(n_id)
                    n_id.append(s)
                    new.append(s)
                edges.append((local[s], local[t], e))
        frontier = new
    return n_id, edges


@pytest.fixture(scope="module")
def graph_data():
    n = 1500
    edge_index = power_law_graph(n, 12000)
    return edge_index, n


@pytest.mark.parametrize("device", DEVICES)
def test_csr_holds_each_nodes_incoming_edges_in_edge_order(device):
    edge_index = power_law_graph(300, 2000, device=device)
    graph = CSRGraph.from_edge_index(edge_index, 300)
    assert graph.rowptr.tolist() == [0, *in_degree(edge_index, 300).cumsum(0).tolist()]
    assert torch.equal(edge_index[0, graph.perm], graph.col)
    dst = edge_index[1, graph.perm]
    assert bool((dst[1:] >= dst[:-1]).all())
    same_dst = dst[1:] == dst[:-1]
    assert bool((graph.perm[1:][same_dst] > graph.perm[:-1][same_dst]).all())


@pytest.mark.parametrize("device", DEVICES)
def test_sampled_edges_are_real_and_e_id_points_at_them(graph_data, device):
    edge_index, n = graph_data
    edge_index = edge_index.to(device)
    graph = CSRGraph.from_edge_index(edge_index, n)
    gen = torch.Generator(device=device).manual_seed(0)
    batch = sample_neighbors(graph, pick_seeds(n, 64, device=device), [10, 5, 3], gen)
    assert batch.edge_index.numel() > 0
    assert torch.equal(batch.n_id[batch.edge_index], edge_index[:, batch.e_id])
    assert batch.e_id.unique().numel() == batch.e_id.numel()  # no edge sampled twice


@pytest.mark.parametrize("device", DEVICES)
def test_each_node_gets_min_degree_fanout_edges_at_its_hop(graph_data, device):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index.to(device), n)
    deg = in_degree(edge_index, n)
    fanouts = [7, 4, 2]
    gen = torch.Generator(device=device).manual_seed(3)
    batch = sample_neighbors(graph, pick_seeds(n, 100, device=device), fanouts, gen).to("cpu")
    edge_start = 0
    for hop, ((lo, hi), k) in enumerate(zip(hop_ranges(batch), fanouts, strict=False)):
        num = batch.num_sampled_edges[hop]
        targets = batch.edge_index[1, edge_start:edge_start + num]
        edge_start += num
        assert bool(((targets >= lo) & (targets < hi)).all())  # only that hop's nodes expand
        got = torch.bincount(targets - lo, minlength=hi - lo)
        assert torch.equal(got, deg[batch.n_id[lo:hi]].clamp(max=k))
    assert edge_start == batch.edge_index.size(1) == batch.e_id.numel()


@pytest.mark.parametrize("device", DEVICES)
def test_seeds_come_first_and_nodes_appear_once(graph_data, device):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index.to(device), n)
    seeds = pick_seeds(n, 50, device=device)
    batch = sample_neighbors(graph, seeds, [10, 10], torch.Generator(device=device).manual_seed(0))
    assert batch.batch_size == 50 == batch.num_sampled_nodes[0]
    assert torch.equal(batch.n_id[:50], seeds)
    assert batch.n_id.unique().numel() == batch.n_id.numel() == sum(batch.num_sampled_nodes)
    assert batch.n_id.device == batch.edge_index.device == batch.e_id.device == seeds.device


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_full_fanout_gives_the_k_hop_neighbourhood(graph_data, hops):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index, n)
    seeds = pick_seeds(n, 20)
    max_deg = int(in_degree(edge_index, n).max())
    batch = sample_neighbors(graph, seeds, [max_deg] * hops)

    subset, *_ = k_hop_subgraph(seeds, hops, edge_index, num_nodes=n, flow="source_to_target")
    assert torch.equal(batch.n_id.sort().values, subset)
    # k_hop_subgraph's edges are all edges inside the subset; hop-wise sampling only
    # yields those into nodes within hops - 1, i.e. the ones a hops-layer GNN reads.
    inner = seeds if hops == 1 else k_hop_subgraph(seeds, hops - 1, edge_index, num_nodes=n,
                                                   flow="source_to_target")[0]
    expected = torch.isin(edge_index[1], inner).nonzero().view(-1)
    assert torch.equal(batch.e_id.sort().values, expected)


def test_full_fanout_matches_neighbor_loaders_order(graph_data):
    edge_index, n = graph_data
    seeds = pick_seeds(n, 30)
    n_id, edges = reference_full_expansion(edge_index, seeds.tolist(), 3)
    batch = sample_neighbors(CSRGraph.from_edge_index(edge_index, n), seeds, [-1, -1, -1])
    assert batch.n_id.tolist() == n_id
    got = torch.cat([batch.edge_index, batch.e_id.unsqueeze(0)]).t().tolist()
    assert [tuple(e) for e in got] == edges


def test_fanout_minus_one_means_every_neighbour(graph_data):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index, n)
    seeds = pick_seeds(n, 40)
    max_deg = int(in_degree(edge_index, n).max())
    everything = sample_neighbors(graph, seeds, [-1, -1])
    capped = sample_neighbors(graph, seeds, [max_deg, max_deg])
    assert torch.equal(everything.n_id, capped.n_id)
    assert torch.equal(everything.edge_index, capped.edge_index)
    assert torch.equal(everything.e_id, capped.e_id)
    mixed = sample_neighbors(graph, seeds, [-1, 2], torch.Generator().manual_seed(0))
    assert mixed.num_sampled_edges[0] == int(in_degree(edge_index, n)[seeds].sum())


@pytest.mark.parametrize("device", DEVICES)
def test_seeded_sampling_is_reproducible(device):
    n = 400
    edge_index = torch.randint(n, (2, 60 * n))  # in-degree ~60, far above the fan-outs
    graph = CSRGraph.from_edge_index(edge_index.to(device), n)
    seeds = pick_seeds(n, 16, device=device)

    def draw(seed: int) -> Batch:
        gen = torch.Generator(device=device).manual_seed(seed)
        return sample_neighbors(graph, seeds, [5, 3], gen)

    a, b, c = draw(7), draw(7), draw(8)
    assert torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
    assert torch.equal(a.e_id, b.e_id) and a.num_sampled_nodes == b.num_sampled_nodes
    assert not torch.equal(a.e_id, c.e_id)


def test_sampling_without_replacement_is_uniform():
    """Every 3-subset of a node's 8 neighbours is equally likely (Floyd's guarantee)."""
    targets, deg, k = 11200, 8, 3
    src = torch.arange(deg).repeat(targets)
    dst = torch.arange(deg, deg + targets).repeat_interleave(deg)
    graph = CSRGraph.from_edge_index(torch.stack([src, dst]), deg + targets)
    seeds = torch.arange(deg, deg + targets)
    batch = sample_neighbors(graph, seeds, [k], torch.Generator().manual_seed(0))
    picked = batch.n_id[batch.edge_index[0]].view(targets, k).sort(1).values
    assert bool((picked[:, 1:] > picked[:, :-1]).all())  # no neighbour twice
    counts = Counter(map(tuple, picked.tolist()))
    cells = math.comb(deg, k)
    assert len(counts) == cells
    expected = targets / cells
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < cells + 6 * math.sqrt(2 * cells)  # 55 dof: mean 55, sd 10.5


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shuffle", [False, True])
def test_neighbor_sampler_covers_every_seed_once_per_epoch(graph_data, device, shuffle):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index.to(device), n)
    seeds = pick_seeds(n, 230, device=device)
    loader = NeighborSampler(graph, seeds, [5, 5], batch_size=64, shuffle=shuffle, seed=0)
    assert len(loader) == 4
    epochs = []
    for _ in range(2):
        batches = list(loader)
        assert len(batches) == len(loader)
        assert [b.batch_size for b in batches] == [64, 64, 64, 38]
        order = torch.cat([b.n_id[:b.batch_size] for b in batches])
        assert torch.equal(order.sort().values, seeds.sort().values)
        epochs.append(order)
    if shuffle:
        assert not torch.equal(epochs[0], epochs[1])  # a fresh order each epoch
    else:
        assert torch.equal(epochs[0], seeds) and torch.equal(epochs[1], seeds)


def test_neighbor_sampler_replays_for_a_seed(graph_data):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index, n)
    seeds = pick_seeds(n, 200)

    def run(seed: int) -> list[torch.Tensor]:
        loader = NeighborSampler(graph, seeds, [4, 4], batch_size=50, shuffle=True, seed=seed)
        return [b.e_id for _ in range(2) for b in loader]

    first, again, other = run(5), run(5), run(6)
    assert all(torch.equal(x, y) for x, y in zip(first, again, strict=True))
    assert not all(torch.equal(x, y) for x, y in zip(first, other, strict=True))


def test_sage_model_on_a_batch_matches_the_full_graph(graph_data):
    from torch_geometric.nn import SAGEConv

    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index, n)
    torch.manual_seed(0)
    x = torch.randn(n, 16, dtype=torch.float64)

    class Sage(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.conv2 = SAGEConv(16, 32), SAGEConv(32, 5)

        def forward(self, x, edge_index):
            return self.conv2(self.conv1(x, edge_index).relu(), edge_index)

    model = Sage().double().eval()
    seeds = pick_seeds(n, 64)
    sampled = sample_neighbors(graph, seeds, [10, 5], torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model(x[sampled.n_id], sampled.edge_index)[:sampled.batch_size]
        assert out.shape == (64, 5)
        full = model(x, edge_index)[seeds]
        batch = sample_neighbors(graph, seeds, [-1, -1])
        mini = model(x[batch.n_id], batch.edge_index)[:batch.batch_size]
    torch.testing.assert_close(mini, full, rtol=1e-10, atol=1e-10)
    assert not torch.allclose(out, full)  # the sampled batch really is a sample


def test_dead_ends_zero_fanout_and_no_hops_give_empty_edge_sets():
    # 0 <- 1 <- 2, and node 3 has no incoming edges at all
    graph = CSRGraph.from_edge_index(torch.tensor([[1, 2], [0, 1]]), 4)
    chain = sample_neighbors(graph, torch.tensor([0]), [5, 5, 5, 5])
    assert chain.n_id.tolist() == [0, 1, 2] and chain.num_sampled_edges == [1, 1, 0, 0]
    assert chain.num_sampled_nodes == [1, 1, 1, 0, 0]
    for fanouts in ([], [0, 0], [3]):
        batch = sample_neighbors(graph, torch.tensor([3]), fanouts)
        assert batch.n_id.tolist() == [3]
        assert batch.edge_index.shape == (2, 0) and batch.e_id.numel() == 0
        assert batch.edge_index.dtype == torch.long


def test_neighbor_sampler_takes_a_split_mask(graph_data):
    edge_index, n = graph_data
    mask = torch.zeros(n, dtype=torch.bool)
    mask[pick_seeds(n, 70)] = True
    loader = NeighborSampler(CSRGraph.from_edge_index(edge_index, n), mask, [2], batch_size=32)
    order = torch.cat([b.n_id[:b.batch_size] for b in loader])
    assert len(loader) == 3 and torch.equal(order, mask.nonzero().view(-1))


def test_batch_and_graph_move_between_devices(graph_data):
    edge_index, n = graph_data
    graph = CSRGraph.from_edge_index(edge_index, n).to("cpu")
    batch = sample_neighbors(graph, pick_seeds(n, 8), [3]).to("cpu")
    assert graph.device.type == batch.n_id.device.type == "cpu"
    assert batch.num_sampled_nodes[0] == batch.batch_size == 8


@pytest.mark.filterwarnings("ignore:Using 'NeighborSampler' without a 'pyg-lib'")
def test_pyg_available_says_whether_neighbor_loader_can_sample(graph_data):
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader

    edge_index, n = graph_data
    seeds = pick_seeds(n, 25)
    loader = NeighborLoader(Data(edge_index=edge_index, num_nodes=n), num_neighbors=[-1, -1],
                            input_nodes=seeds, batch_size=25)
    if not pyg_available():
        with pytest.raises(ImportError):
            next(iter(loader))
        return
    theirs = next(iter(loader))
    ours = sample_neighbors(CSRGraph.from_edge_index(edge_index, n), seeds, [-1, -1])
    assert torch.equal(theirs.n_id[:25], seeds)
    assert set(theirs.n_id.tolist()) == set(ours.n_id.tolist())
    their_edges = set(map(tuple, theirs.n_id[theirs.edge_index].t().tolist()))
    assert their_edges == set(map(tuple, ours.n_id[ours.edge_index].t().tolist()))
