"""Layer-wise neighbour sampling in plain torch, so mini-batch runs need no compiled extras.

PyG's NeighborLoader samples through pyg-lib or torch-sparse, and neither ships pip wheels
for every torch build, platform and CUDA version this suite runs on. This module follows
the same recipe and produces the same batch layout (seeds first, local `edge_index` from
sampled neighbour to the node it was sampled for, `e_id` into the full graph) with
device-agnostic tensor ops only, so a graph that lives on the GPU is sampled there.

On a GPU the sampler is bound by kernel launches and by its reads of device values (each
one stalls the launching thread until the GPU has caught up), not by arithmetic. So sizes
come from the fan-outs wherever they can (k padded slots per node, real ones masked), and a
hop reads one pair of counts, new nodes and edges, in one go (dedup.NodeMarks); the
counts then size the next hop exactly.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from gnnbench.training.dedup import NodeMarks, compact, extend_sorted


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

    @functools.cached_property
    def max_degree(self) -> int:
        """Read once per graph: a fan-out at least this large takes every neighbour."""
        return int((self.rowptr[1:] - self.rowptr[:-1]).max()) if self.num_nodes else 0

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
    costs the same as one of k + 1: drawing random keys for every incident edge would not.
    All k draws are made at once; only the collision check runs step by step."""
    j = n.unsqueeze(1) - k + torch.arange(k, device=n.device)  # step s draws from [0, j_s]
    u = torch.rand(j.shape, generator=generator, device=n.device, dtype=torch.float64)
    picks = torch.minimum((u * (j + 1)).long(), j)
    for step in range(1, k):  # a draw already taken is replaced by j_s, never taken before
        taken = (picks[:, :step] == picks[:, step:step + 1]).any(1)
        column = picks[:, step]
        torch.where(taken, j[:, step], column, out=column)
    return picks


def sample_slots(start: Tensor, deg: Tensor, k: int, generator: torch.Generator | None
                  ) -> tuple[Tensor, Tensor, Tensor | None, int | None]:
    """CSR positions of the edges sampled for each frontier node, which node each is for, and
    which slots are real. With k > 0 every node owns k slots, the first min(deg, k) real: the
    sizes follow from the fan-out, so no count is read back to the host. With k < 0 (take
    all) the edge total is read once (returned), and every slot is real (mask None)."""
    device = deg.device
    if k < 0:
        (total,) = host_read(deg.sum())  # the one count a take-all hop reads before sampling
        first_slot = torch.cumsum(deg, 0) - deg
        seg = torch.repeat_interleave(torch.arange(deg.numel(), device=device), deg,
                                      output_size=total)
        # (index_select, not [], for 1-D gathers: on CPU several times faster at random
        # positions.)
        pos = (start - first_slot).index_select(0, seg) + torch.arange(total, device=device)
        return pos, seg, None, total
    slot = torch.arange(k, device=device)
    pos = start.unsqueeze(1) + slot  # take-all for nodes of degree <= k
    heavy = deg > k
    # Drawn for every row: finding the heavy rows first would cost a host sync, more than
    # the draws for light rows whose picks are then discarded (n = k + 1 keeps Floyd valid).
    picks = start.unsqueeze(1) + _floyd(torch.where(heavy, deg, k + 1), k, generator)
    valid = slot < deg.unsqueeze(1)
    pos = torch.where(heavy.unsqueeze(1), picks, torch.where(valid, pos, 0))
    seg = torch.arange(deg.numel(), device=device).repeat_interleave(k)
    return pos.view(-1), seg, valid.view(-1), None


def host_read(values: Tensor) -> list[int]:
    """Every device-to-host read of the sampler goes through here (the tests count them)."""
    return values.view(-1).tolist()


def real_rows(valid: Tensor, total: int, *slots: Tensor) -> list[Tensor]:
    """The entries of each of `slots` at the `total` real slots, in order."""
    keep = compact(torch.arange(valid.numel(), device=valid.device), valid,
                   torch.cumsum(valid, 0) - 1, total)
    return [t.index_select(0, keep) for t in slots]


def sample_neighbors(graph: CSRGraph, seeds: Tensor, fanouts: Sequence[int],
                     generator: torch.Generator | None = None,
                     marks: NodeMarks | None = None) -> Batch:
    """Uniform sampling without replacement, hop by hop, as NeighborLoader does it: each
    hop expands only the nodes first reached at the previous one, up to fanouts[hop]
    incoming edges each (-1: all). `seeds` must be distinct and on the graph's device;
    `generator`, if given, must live there too. With `marks` (reused across batches) a hop
    with a positive fan-out reads one pair of counts back from the device; without, each
    hop de-duplicates with torch.unique and needs no node-sized buffer."""
    n_id = seeds.to(device=graph.device, dtype=torch.long)
    if marks is None:
        return _sample(graph, n_id, fanouts, generator, None)
    with marks.claim() as ids:
        ids.index_copy_(0, n_id, torch.arange(n_id.numel(), device=n_id.device))
        batch = _sample(graph, n_id, fanouts, generator, marks)
        marks.reset(batch.n_id)
    return batch


def _sample(graph: CSRGraph, n_id: Tensor, fanouts: Sequence[int],
            generator: torch.Generator | None, marks: NodeMarks | None) -> Batch:
    lo = 0  # the frontier, nodes to expand, is n_id[lo:]: those first reached last hop
    device = graph.device
    rows, cols, e_ids = [], [], []
    num_nodes, num_edges = [n_id.numel()], []
    for k in fanouts:
        n_old = n_id.numel()
        if k == 0 or n_old == lo or graph.col.numel() == 0:  # nothing to expand: no reads
            num_nodes.append(0)
            num_edges.append(0)
            lo = n_old
            continue
        if k >= graph.max_degree:  # the same edges, without k padding slots per node
            k = -1
        nodes = n_id[lo:]
        start = graph.rowptr.index_select(0, nodes)
        deg = graph.rowptr.index_select(0, nodes + 1) - start
        pos, seg, valid, total = sample_slots(start, deg, k, generator)
        if valid is not None and marks is None:  # torch.unique takes the real entries only
            (total,) = host_read(valid.sum())
            pos, seg = real_rows(valid, total, pos, seg)
            valid = None
        found = graph.col.index_select(0, pos)
        if marks is None:
            n_id, local = extend_sorted(n_id, found)
        else:
            local, is_first, rank = marks.number(found, valid, n_old)
            if valid is None:
                (added,) = host_read(is_first.sum())
            else:  # one read for both counts
                added, total = host_read(torch.stack([is_first.sum(), valid.sum()]))
                local, pos, seg = real_rows(valid, total, local, pos, seg)
            n_id = torch.cat([n_id, compact(found, is_first, rank, added)])
        rows.append(local)
        cols.append(seg + lo)
        e_ids.append(graph.perm.index_select(0, pos))
        num_nodes.append(n_id.numel() - n_old)
        num_edges.append(total)
        lo = n_old
    empty = [torch.empty(0, dtype=torch.long, device=device)]
    edge_index = torch.stack([torch.cat(rows or empty), torch.cat(cols or empty)])
    return Batch(n_id, edge_index, torch.cat(e_ids or empty), num_nodes[0], num_nodes,
                 num_edges)


DEDUP = ("mark", "unique")


class NeighborSampler:
    """Mini-batches of seeds, each expanded by sample_neighbors. One generator on the graph's
    device drives both the shuffle and the sampling, so a given `seed` replays the same
    sequence of batches, epoch after epoch. `dedup="mark"` keeps one node-sized NodeMarks
    for all its batches (8 bytes a node); "unique" sorts instead and gives the same batches."""

    def __init__(self, graph: CSRGraph, seeds: Tensor, fanouts: Sequence[int], batch_size: int,
                 shuffle: bool = False, seed: int = 0, dedup: str = "mark") -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if dedup not in DEDUP:
            raise ValueError(f"dedup must be one of {DEDUP}, got {dedup!r}")
        self.graph = graph
        if seeds.dtype == torch.bool:  # a split mask, as NeighborLoader's input_nodes takes
            seeds = seeds.nonzero().view(-1)
        self.seeds = seeds.to(device=graph.device, dtype=torch.long)
        self.fanouts = list(fanouts)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.generator = torch.Generator(device=graph.device).manual_seed(seed)
        self.marks = NodeMarks(graph.num_nodes, graph.device) if dedup == "mark" else None

    def __len__(self) -> int:
        return math.ceil(self.seeds.numel() / self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        seeds = self.seeds
        if self.shuffle:
            order = torch.randperm(seeds.numel(), generator=self.generator, device=seeds.device)
            seeds = seeds[order]
        for chunk in seeds.split(self.batch_size):
            yield sample_neighbors(self.graph, chunk, self.fanouts, self.generator, self.marks)


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
            yield Batch(b.n_id, b.edge_index, b.edge_ids, int(b.batch_size),
                        list(b.num_sampled_nodes), list(b.num_sampled_edges))
