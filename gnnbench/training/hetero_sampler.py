"""Neighbour sampling over node and edge types, in plain torch (training/sampler.py's recipe
per relation), because PyG's heterogeneous NeighborLoader needs pyg-lib or torch-sparse
and neither installs everywhere this suite runs.

It follows PyG's heterogeneous NeighborLoader (disjoint=False): the seeds are nodes of the
target type; at hop h every edge type (src, rel, dst) is sampled with fan-out fanouts[h]
from the dst nodes first reached at hop h - 1 (the seeds at hop 1), up to that many
incoming edges each, uniformly without replacement; the sources found are de-duplicated per
node type across all the relations of the hop and appended to that type's nodes in order of
first appearance. A batch holds each type's global node ids (`n_id`, the target's seeds
first, in the order given), and each edge type's `edge_index` in local ids: row into the
source type's `n_id`, column into the destination type's. Every node type and edge type is
in every batch, possibly empty, so the model always sees the same dict keys.

One generator drives the shuffle and every draw, and relations are visited in the graph's
own order, so a seed replays the same batches."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from gnnbench.training.dedup import extend_sorted
from gnnbench.training.sampler import CSRGraph, host_read, real_rows, sample_slots

EdgeType = tuple[str, str, str]


@dataclass
class HeteroBatch:
    """One sampled subgraph of a heterogeneous graph (see the module's docstring)."""

    n_id: dict[str, Tensor]  # per node type: global ids, hop by hop (the seeds first)
    edge_index: dict[EdgeType, Tensor]  # per edge type: [2, e] local (src row, dst column)
    e_id: dict[EdgeType, Tensor]  # per edge type: columns of that type's full edge_index
    batch_size: int  # the first batch_size target nodes are the seeds
    num_sampled_nodes: dict[str, list[int]]  # per type: [at hop 0 (seeds), new at hop 1, ...]
    num_sampled_edges: dict[EdgeType, list[int]]  # per edge type: [hop 1, hop 2, ...]

    def to(self, device: torch.device | str, non_blocking: bool = False) -> HeteroBatch:
        def move(d: dict) -> dict:
            return {k: t.to(device, non_blocking=non_blocking) for k, t in d.items()}

        return HeteroBatch(move(self.n_id), move(self.edge_index), move(self.e_id),
                           self.batch_size, dict(self.num_sampled_nodes),
                           dict(self.num_sampled_edges))

    def shape(self) -> tuple[int, ...]:
        """(all nodes, all edges, nodes per type..., edges per relation...): every size the
        model's inputs have, read from host-side counts (no sync)."""
        nodes = [sum(c) for c in self.num_sampled_nodes.values()]
        edges = [sum(c) for c in self.num_sampled_edges.values()]
        return (sum(nodes), sum(edges), *nodes, *edges)


def typed_csr(edge_index_dict: Mapping[EdgeType, Tensor],
              num_nodes: Mapping[str, int]) -> dict[EdgeType, CSRGraph]:
    """Per edge type, its edges grouped by destination: each hop is then a gather."""
    return {et: CSRGraph.from_edge_index(ei, int(num_nodes[et[2]]))
            for et, ei in edge_index_dict.items()}


def _relation_slots(graph: CSRGraph, nodes: Tensor, k: int,
                    generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """CSR positions of the edges sampled for `nodes` (real ones only) and which of `nodes`
    each serves: sampler.py's slots, compacted here since de-duplication sorts anyway."""
    if k >= graph.max_degree:  # the same edges, without k padding slots per node
        k = -1
    start = graph.rowptr.index_select(0, nodes)
    deg = graph.rowptr.index_select(0, nodes + 1) - start
    pos, seg, valid, _ = sample_slots(start, deg, k, generator)
    if valid is not None:
        (total,) = host_read(valid.sum())
        pos, seg = real_rows(valid, total, pos, seg)
    return pos, seg


def sample_hetero(graphs: Mapping[EdgeType, CSRGraph], node_types: Sequence[str],
                  target: str, seeds: Tensor, fanouts: Sequence[int],
                  generator: torch.Generator | None = None) -> HeteroBatch:
    """The typed neighbourhood of `seeds` (distinct nodes of `target`, on the graphs'
    device), hop by hop as PyG's heterogeneous NeighborLoader samples it."""
    seeds = seeds.to(dtype=torch.long)
    empty = seeds.new_empty(0)
    n_id = {t: seeds if t == target else empty for t in node_types}
    lo = dict.fromkeys(node_types, 0)  # type t's frontier: n_id[t][lo[t]:]
    counts = {t: [n_id[t].numel()] for t in node_types}
    rows: dict[EdgeType, list[Tensor]] = {et: [] for et in graphs}
    cols: dict[EdgeType, list[Tensor]] = {et: [] for et in graphs}
    e_ids: dict[EdgeType, list[Tensor]] = {et: [] for et in graphs}
    edge_counts: dict[EdgeType, list[int]] = {et: [] for et in graphs}
    for k in fanouts:
        found: dict[str, list[tuple[EdgeType, Tensor]]] = {t: [] for t in node_types}
        for et, graph in graphs.items():
            src, _, dst = et
            nodes = n_id[dst][lo[dst]:]
            if k == 0 or nodes.numel() == 0 or graph.col.numel() == 0:
                edge_counts[et].append(0)
                continue
            pos, seg = _relation_slots(graph, nodes, k, generator)
            found[src].append((et, graph.col.index_select(0, pos)))
            cols[et].append(seg + lo[dst])
            e_ids[et].append(graph.perm.index_select(0, pos))
            edge_counts[et].append(pos.numel())
        lo = {t: n_id[t].numel() for t in node_types}
        for t in node_types:  # de-duplicated per type, across the hop's relations
            if not found[t]:
                counts[t].append(0)
                continue
            n_id[t], local = extend_sorted(n_id[t], torch.cat([f for _, f in found[t]]))
            for (et, _), part in zip(found[t], local.split([f.numel() for _, f in found[t]]),
                                     strict=True):
                rows[et].append(part)
            counts[t].append(n_id[t].numel() - lo[t])

    def stacked(et: EdgeType) -> Tensor:
        if not rows[et]:
            return empty.new_empty(2, 0)
        return torch.stack([torch.cat(rows[et]), torch.cat(cols[et])])

    return HeteroBatch(n_id, {et: stacked(et) for et in graphs},
                       {et: torch.cat(e_ids[et]) if e_ids[et] else empty for et in graphs},
                       seeds.numel(), counts, edge_counts)


class HeteroNeighborSampler:
    """Mini-batches of target seeds, each expanded by sample_hetero; `seed` fixes the
    shuffle and the draws, epoch after epoch (as sampler.NeighborSampler)."""

    def __init__(self, graphs: Mapping[EdgeType, CSRGraph], node_types: Sequence[str],
                 target: str, seeds: Tensor, fanouts: Sequence[int], batch_size: int,
                 shuffle: bool = False, seed: int = 0) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if target not in node_types:
            raise ValueError(f"target {target!r} is not a node type: {list(node_types)}")
        device = next(iter(graphs.values())).device if graphs else seeds.device
        if seeds.dtype == torch.bool:
            seeds = seeds.nonzero().view(-1)
        self.graphs, self.node_types, self.target = dict(graphs), list(node_types), target
        self.seeds = seeds.to(device=device, dtype=torch.long)
        self.fanouts, self.batch_size, self.shuffle = list(fanouts), batch_size, shuffle
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def __len__(self) -> int:
        return math.ceil(self.seeds.numel() / self.batch_size)

    def __iter__(self) -> Iterator[HeteroBatch]:
        seeds = self.seeds
        if self.shuffle:
            order = torch.randperm(seeds.numel(), generator=self.generator, device=seeds.device)
            seeds = seeds[order]
        for chunk in seeds.split(self.batch_size):
            yield sample_hetero(self.graphs, self.node_types, self.target, chunk, self.fanouts,
                                self.generator)
