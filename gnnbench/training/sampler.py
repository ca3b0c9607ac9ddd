"""Layer-wise neighbour sampling in plain torch, so mini-batch runs need no compiled extras.

PyG's NeighborLoader samples through pyg-lib or torch-sparse, and neither ships pip wheels
for every torch build, platform and CUDA version this suite runs on. This module follows
the same recipe and produces the same batch layout (seeds first, local `edge_index` from
sampled neighbour to the node it was sampled for, `e_id` into the full graph) with
device-agnostic tensor ops only, so a graph that lives on the GPU is sampled there.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor


def pyg_available() -> bool:
    """Reads the flags NeighborLoader itself checks before it samples, so an extension that
    is installed but fails to load counts as absent, exactly as PyG treats it."""
    import torch_geometric.typing as pyg_typing

    return bool(pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE)


@dataclass
class CSRGraph:
    """Incoming neighbours per target node, sorted once so that every hop is a gather."""

    rowptr: Tensor  # [N + 1]: node v's sources are col[rowptr[v]:rowptr[v + 1]]
    col: Tensor  # [E] source node ids, grouped by target
    perm: Tensor  # [E] CSR position -> column of the edge_index the graph was built from
    num_nodes: int

    @classmethod
    def from_edge_index(cls, edge_index: Tensor, num_nodes: int) -> CSRGraph:
        src, dst = edge_index[0], edge_index[1]
        perm = torch.argsort(dst, stable=True)  # stable: equal inputs give equal graphs
        deg = torch.bincount(dst, minlength=num_nodes)
        rowptr = torch.cat([deg.new_zeros(1), torch.cumsum(deg, 0)])
        return cls(rowptr, src.index_select(0, perm), perm, num_nodes)

    @property
    def device(self) -> torch.device:
        return self.rowptr.device

    def to(self, device: torch.device | str) -> CSRGraph:
        return CSRGraph(self.rowptr.to(device), self.col.to(device), self.perm.to(device),
                        self.num_nodes)


@dataclass
class Batch:
    """One sampled subgraph, laid out like a NeighborLoader batch (disjoint=False)."""

    n_id: Tensor  # [n] global node ids: the seeds in the order given, then hop by hop
    edge_index: Tensor  # [2, e] local ids into n_id: sampled neighbour -> node it serves
    e_id: Tensor  # [e] columns of the original edge_index, e.g. to look up edge weights
    batch_size: int  # the first batch_size rows of the model's output are the seeds'
    num_sampled_nodes: list[int]  # [seeds, new at hop 1, new at hop 2, ...]
    num_sampled_edges: list[int]  # [edges at hop 1, hop 2, ...]

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        def move(t: Tensor) -> Tensor:
            return t.to(device, non_blocking=non_blocking)

        return Batch(move(self.n_id), move(self.edge_index), move(self.e_id), self.batch_size,
                     list(self.num_sampled_nodes), list(self.num_sampled_edges))


def _floyd(n: Tensor, k: int, generator: torch.Generator | None) -> Tensor:
    """k distinct positions uniformly from range(n[i]) for each row, n[i] > k (Floyd's
    algorithm). Its k steps are vectorised over rows, so a hub of a million neighbours
    costs the same as one of k + 1: drawing random keys for every incident edge would not."""
    picks = n.new_empty(n.numel(), k)
    for step in range(k):
        j = n - k + step
        u = torch.rand(n.numel(), generator=generator, device=n.device, dtype=torch.float64)
        t = torch.minimum((u * (j + 1)).long(), j)  # uniform in [0, j]
        taken = (picks[:, :step] == t.unsqueeze(1)).any(1)
        picks[:, step] = torch.where(taken, j, t)
    return picks


def _sample_slots(start: Tensor, deg: Tensor, k: int,
                  generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """CSR positions of the edges sampled for each frontier node, and which node each is for."""
    count = deg if k < 0 else deg.clamp(max=k)
    total = int(count.sum())
    first_slot = torch.cumsum(count, 0) - count
    seg = torch.repeat_interleave(torch.arange(deg.numel(), device=deg.device), count,
                                  output_size=total)
    # Take-all by default: slot i of node s is CSR position start[s] + i. (index_select,
    # not [], for 1-D gathers: on CPU it is several times faster at random positions.)
    pos = (start - first_slot).index_select(0, seg) + torch.arange(total, device=deg.device)
    if k > 0:
        heavy = (deg > k).nonzero().view(-1)
        if heavy.numel():  # those rows own exactly k slots each: overwrite them with a draw
            slots = first_slot[heavy].unsqueeze(1) + torch.arange(k, device=deg.device)
            picks = start[heavy].unsqueeze(1) + _floyd(deg[heavy], k, generator)
            pos[slots.view(-1)] = picks.view(-1)
    return pos, seg


def _extend(n_id: Tensor, found: Tensor) -> tuple[Tensor, Tensor]:
    """Append the nodes of `found` not yet in `n_id` in order of first appearance; return
    the new n_id and the local id of every entry of `found`. Sort-based, no N-sized buffer."""
    n_old = n_id.numel()
    uniq, inv = torch.unique(torch.cat([n_id, found]), return_inverse=True)
    order = torch.arange(inv.numel(), device=inv.device)
    first = torch.full_like(uniq, inv.numel()).scatter_reduce_(0, inv, order, reduce="amin")
    new = (first >= n_old).nonzero().view(-1)
    new = new[torch.argsort(first[new])]  # torch.unique sorted by id; restore discovery order
    local = first  # a node already in n_id keeps its position there
    local[new] = torch.arange(n_old, n_old + new.numel(), device=inv.device)
    return torch.cat([n_id, uniq[new]]), local.index_select(0, inv[n_old:])


def sample_neighbors(graph: CSRGraph, seeds: Tensor, fanouts: Sequence[int],
                     generator: torch.Generator | None = None) -> Batch:
    """Uniform sampling without replacement, hop by hop, as NeighborLoader does it: each
    hop expands only the nodes first reached at the previous one, up to fanouts[hop]
    incoming edges each (-1: all). `seeds` must be distinct and on the graph's device;
    `generator`, if given, must live there too."""
    n_id = seeds.to(device=graph.device, dtype=torch.long)
    lo = 0  # the frontier, nodes to expand, is n_id[lo:]: those first reached last hop
    rows, cols, e_ids = [], [], []
    num_nodes, num_edges = [n_id.numel()], []
    for k in fanouts:
        nodes = n_id[lo:]
        start = graph.rowptr.index_select(0, nodes)
        deg = graph.rowptr.index_select(0, nodes + 1) - start
        pos, seg = _sample_slots(start, deg, k, generator)
        n_old = n_id.numel()
        n_id, src_local = _extend(n_id, graph.col.index_select(0, pos))
        rows.append(src_local)
        cols.append(seg + lo)
        e_ids.append(graph.perm.index_select(0, pos))
        num_nodes.append(n_id.numel() - n_old)
        num_edges.append(pos.numel())
        lo = n_old
    empty = [torch.empty(0, dtype=torch.long, device=graph.device)]
    edge_index = torch.stack([torch.cat(rows or empty), torch.cat(cols or empty)])
    return Batch(n_id, edge_index, torch.cat(e_ids or empty), int(seeds.numel()), num_nodes,
                 num_edges)


class NeighborSampler:
    """Mini-batches of seeds, each expanded by sample_neighbors. One generator on the graph's
    device drives both the shuffle and the sampling, so a given `seed` replays the same
    sequence of batches, epoch after epoch."""

    def __init__(self, graph: CSRGraph, seeds: Tensor, fanouts: Sequence[int], batch_size: int,
                 shuffle: bool = False, seed: int = 0) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.graph = graph
        if seeds.dtype == torch.bool:  # a split mask, as NeighborLoader's input_nodes takes
            seeds = seeds.nonzero().view(-1)
        self.seeds = seeds.to(device=graph.device, dtype=torch.long)
        self.fanouts = list(fanouts)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.generator = torch.Generator(device=graph.device).manual_seed(seed)

    def __len__(self) -> int:
        return math.ceil(self.seeds.numel() / self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        seeds = self.seeds
        if self.shuffle:
            order = torch.randperm(seeds.numel(), generator=self.generator, device=seeds.device)
            seeds = seeds[order]
        for chunk in seeds.split(self.batch_size):
            yield sample_neighbors(self.graph, chunk, self.fanouts, self.generator)


class PygNeighborBatches:
    """PyG's NeighborLoader (pyg-lib or torch-sparse) behind the same iteration as
    NeighborSampler, yielding our Batch layout, so the training loop cannot tell them apart."""

    def __init__(self, edge_index: Tensor, num_nodes: int, seeds: Tensor,
                 fanouts: Sequence[int], batch_size: int, seed: int = 0) -> None:
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader

        data = Data(edge_index=edge_index.cpu(), num_nodes=num_nodes,
                    edge_ids=torch.arange(edge_index.size(1)))
        torch.manual_seed(seed)
        self.loader = NeighborLoader(data, num_neighbors=list(fanouts), batch_size=batch_size,
                                     input_nodes=seeds.cpu(), shuffle=True)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Batch]:
        for b in self.loader:
            yield Batch(b.n_id, b.edge_index, b.edge_ids, int(b.batch_size))
