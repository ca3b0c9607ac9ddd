"""Padding sampled mini-batches to a few shapes, so a compiled step meets few shapes.

Every neighbour-sampled batch has its own node and edge counts. A compiled step pays for
that: without dynamic shapes one compilation per shape, and with CUDA graphs
(mode="reduce-overhead") one recording per shape, each holding its own memory. Here each
batch is padded up to the smallest rung of a short ladder of (nodes, edges) shapes that
fits it, so an epoch shows at most as many shapes as the ladder has rungs.

The ladder is learned from a few probe batches drawn with a seed of their own (the
training sampler's stream is untouched): rungs grow geometrically by `ratio` in nodes and
edges together, around the median probe, from the smallest probe to one rung above the
largest, plus a last rung at the fan-outs' hard bound so that any batch fits. Nodes and
edges scale together because a batch's edges per node is nearly constant for a given
graph and fan-outs; rungs built from the bounds alone would pad one of them by the ratio
between bound and typical size (2-3x on products).

Padding is exact for the loss and every gradient: padding nodes have zero features,
padding edges run from real nodes, in turn, into the last padding node (weight 0 where
weights exist), so no real node gains an in-edge (a mean aggregation's degree and GCN's
normalisation are unchanged), and the labels of everything past the real seeds are -100,
which F.cross_entropy ignores, so the mean runs over the real seeds only. Sources are real
nodes, not the padding node itself: self-loops would feed it its own sum at every layer,
and under a sum aggregation (GIN) its values would grow by the number of padding edges
per layer, to inf within about 15 layers, and one inf makes every gradient NaN. Two things
do see the padding rows: batch norm (its batch statistics), and dropout (the same seed
draws different masks for a larger tensor).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import Tensor

from gnnbench.training.sampler import NeighborSampler

IGNORE_LABEL = -100  # F.cross_entropy's default ignore_index


class PaddedBatch(NamedTuple):
    """What steps.train_batch_step takes, in its order: unpack it into the step."""

    x: Tensor  # [nodes, features]: the batch's rows, then zeros
    edge_index: Tensor  # [2, edges]: the batch's edges, then (real, pad) padding edges
    edge_weight: Tensor | None  # [edges]: the batch's weights, then zeros
    y: Tensor  # [seeds]: the seeds' labels, then IGNORE_LABEL


@dataclass
class PaddingWaste:
    """Padded against real rows and edges over the batches padded so far."""

    batches: int = 0
    real_nodes: int = 0
    padded_nodes: int = 0
    real_edges: int = 0
    padded_edges: int = 0
    shapes: set[tuple[int, int]] = field(default_factory=set)

    def add(self, real: tuple[int, int], padded: tuple[int, int]) -> None:
        self.batches += 1
        self.real_nodes += real[0]
        self.real_edges += real[1]
        self.padded_nodes += padded[0]
        self.padded_edges += padded[1]
        self.shapes.add(padded)

    def summary(self) -> dict:
        """node_ratio 1.25: a quarter more rows computed than the batches had."""
        return {"batches": self.batches, "distinct_shapes": len(self.shapes),
                "node_ratio": self.padded_nodes / max(self.real_nodes, 1),
                "edge_ratio": self.padded_edges / max(self.real_edges, 1)}


class Buckets:
    """A ladder of (nodes, edges) shapes, ascending in both, and `seeds` labels a batch."""

    def __init__(self, shapes: Iterable[tuple[int, int]], seeds: int) -> None:
        self.shapes = sorted(set(shapes))
        if not self.shapes:
            raise ValueError("a ladder needs at least one shape")
        for (n0, e0), (n1, e1) in zip(self.shapes, self.shapes[1:], strict=False):
            if e1 < e0:
                raise ValueError(f"shapes must grow in nodes and edges together: "
                                 f"{(n0, e0)} then {(n1, e1)}")
        if self.shapes[0][0] <= seeds:
            raise ValueError(f"every shape needs more than {seeds} nodes (the seeds' rows "
                             f"and a padding node); the smallest has {self.shapes[0][0]}")
        self.seeds = seeds
        self.waste = PaddingWaste()

    @classmethod
    def from_sizes(cls, sizes: Iterable[tuple[int, int]], seeds: int,
                   bound: tuple[int, int], ratio: float = 1.15,
                   align: int = 64) -> Buckets:
        """A ladder around probe batches' (nodes, edges), topped by `bound`."""
        if ratio <= 1:
            raise ValueError(f"ratio must exceed 1, got {ratio}")
        sizes = [(n + 1, e) for n, e in sizes]  # + 1: the padding node
        ref_n = statistics.median(n for n, _ in sizes)
        ref_e = max(statistics.median(e for _, e in sizes), 1)

        def rung(scale: float) -> int:  # the rung whose shape fits `scale` x the median
            return math.ceil(math.log(scale) / math.log(ratio) - 1e-9)

        scales = [max(n / ref_n, e / ref_e) for n, e in sizes]
        low, high = rung(min(scales)), rung(max(scales)) + 1
        top_n, top_e = bound[0] + 1, bound[1]
        shapes = {(top_n, top_e)}
        for k in range(low, high + 1):
            n = max(_round_up(ref_n * ratio**k, align), seeds + 1)
            shapes.add((min(n, top_n), min(_round_up(ref_e * ratio**k, align), top_e)))
        return cls(shapes, seeds)

    @classmethod
    def for_sampler(cls, sampler: NeighborSampler, probes: int = 8, ratio: float = 1.15,
                    align: int = 64, seed: int = 2**31 - 1) -> Buckets:
        """Probes `probes` batches from a twin of `sampler` seeded with `seed` (one probe
        iteration reads each batch's size, which costs what sampling costs)."""
        twin = NeighborSampler(sampler.graph, sampler.seeds, sampler.fanouts,
                               sampler.batch_size, shuffle=True, seed=seed,
                               dedup="mark" if sampler.marks is not None else "unique")
        sizes = []
        for batch in twin:
            sizes.append((batch.n_id.numel(), batch.edge_index.size(1)))
            if len(sizes) == probes:
                break
        return cls.from_sizes(sizes, sampler.batch_size, fanout_bound(sampler), ratio, align)

    def shape_for(self, nodes: int, edges: int) -> tuple[int, int]:
        for shape in self.shapes:
            if shape[0] > nodes and shape[1] >= edges:
                return shape
        raise ValueError(f"a batch of {nodes} nodes and {edges} edges exceeds the largest "
                         f"shape {self.shapes[-1]}")

    def pad(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None,
            y: Tensor) -> PaddedBatch:
        """The gathered batch (what the Trainer hands the step) padded to its rung. Sizes
        are read from shapes, never from the device: no host sync."""
        n, e = x.size(0), edge_index.size(1)
        if y.numel() > self.seeds:
            raise ValueError(f"{y.numel()} labels, more than the ladder's {self.seeds} seeds")
        nodes, edges = self.shape_for(n, e)
        self.waste.add((n, e), (nodes, edges))
        pad_edges = padding_edges(edge_index, n, nodes, edges - e)
        return PaddedBatch(
            torch.cat([x, x.new_zeros(nodes - n, *x.shape[1:])]),
            torch.cat([edge_index, pad_edges], 1),
            None if edge_weight is None else torch.cat([edge_weight,
                                                        edge_weight.new_zeros(edges - e)]),
            torch.cat([y, y.new_full((self.seeds - y.numel(),), IGNORE_LABEL)]))


def padding_edges(edge_index: Tensor, real: int, nodes: int, count: int) -> Tensor:
    """`count` edges into the last of `nodes` (a padding node), each from one of the `real`
    nodes in turn (the padding node itself where there is none): no real node gains an
    in-edge, and the padding node's sum stays a sum of real rows, never of its own."""
    target = edge_index.new_full((count,), nodes - 1)
    if real == 0:
        return torch.stack([target, target])
    return torch.stack([torch.arange(count, device=edge_index.device,
                                     dtype=edge_index.dtype) % real, target])


def fanout_bound(sampler: NeighborSampler) -> tuple[int, int]:
    """The most nodes and edges one batch can have: each hop multiplies the frontier by
    its fan-out (a take-all hop by the maximum degree); never more than the graph has
    (each edge is sampled at most once: the hops' frontiers are disjoint)."""
    graph, frontier, nodes, edges = sampler.graph, sampler.batch_size, sampler.batch_size, 0
    for k in sampler.fanouts:
        frontier *= graph.max_degree if k < 0 else min(k, graph.max_degree)
        edges += frontier
        nodes += frontier
    return min(nodes, graph.num_nodes), min(edges, graph.col.numel())


def _round_up(value: float, align: int) -> int:
    return math.ceil(value / align) * align
