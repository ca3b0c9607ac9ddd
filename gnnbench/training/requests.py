"""Inference requests for a serving benchmark: each asks for the predictions of a batch of
seed nodes, drawn at random, and carries its own k-hop neighbourhood sampled with
gnnbench's sampler, so every request has its own shape (nodes, edges), as in a service.
A padded stream pads each request to the smallest of a few bucket shapes (buckets.py), so
a compiled model (and its CUDA graphs) meets few shapes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from gnnbench.training import buckets
from gnnbench.training.sampler import CSRGraph, NeighborSampler, sample_neighbors


@dataclass
class Request:
    x: Tensor  # the neighbourhood's features (the seeds' rows first)
    edge_index: Tensor
    edge_weight: Tensor | None
    seeds: int
    shape: tuple[int, int]  # (nodes, edges) as the model sees them (padded where padded)


class Requests:
    """A seeded stream of requests of `batch_size` seeds (at most the graph's nodes)."""

    def __init__(self, graph: CSRGraph, x: Tensor, edge_weight: Tensor | None,
                 fanouts: list[int], batch_size: int, seed: int, padded: bool = False) -> None:
        self.graph, self.x, self.edge_weight, self.fanouts = graph, x, edge_weight, fanouts
        self.seeds = min(batch_size, graph.num_nodes)
        self.generator = torch.Generator(device=graph.device).manual_seed(seed)
        self.buckets = None
        if padded:  # a ladder learned from probe requests of a stream of its own
            probe = NeighborSampler(graph, torch.arange(graph.num_nodes, device=graph.device),
                                    fanouts, self.seeds, shuffle=True, seed=seed + 1)
            self.buckets = buckets.Buckets.for_sampler(probe)

    def next(self) -> Request:
        """Sample the next request (its seeds, its neighbourhood, its features)."""
        seeds = torch.randperm(self.graph.num_nodes, generator=self.generator,
                               device=self.graph.device)[: self.seeds]
        batch = sample_neighbors(self.graph, seeds, self.fanouts, self.generator)
        weight = self.edge_weight[batch.e_id] if self.edge_weight is not None else None
        x, edge_index = self.x[batch.n_id], batch.edge_index
        if self.buckets is not None:
            labels = torch.zeros(self.seeds, dtype=torch.long, device=x.device)
            x, edge_index, weight, _ = self.buckets.pad(x, edge_index, weight, labels)
        return Request(x, edge_index, weight, self.seeds, (x.size(0), edge_index.size(1)))

    def rung_requests(self) -> list[Request]:
        """One request of each bucket shape (none unpadded), as padding makes them: zero
        features, edges from the last node to itself. A server runs each shape before it
        takes requests, so that no request meets a shape for the first time (under CUDA
        graphs: an unrecorded graph, run once to warm up, recorded when it comes again)."""
        if self.buckets is None:
            return []
        out = []
        for nodes, edges in self.buckets.shapes:
            x = self.x.new_zeros(nodes, *self.x.shape[1:])
            edge_index = torch.full((2, edges), nodes - 1, dtype=torch.long,
                                    device=self.x.device)
            weight = None if self.edge_weight is None else self.edge_weight.new_zeros(edges)
            out.append(Request(x, edge_index, weight, self.seeds, (nodes, edges)))
        return out

    def padding(self) -> dict | None:
        return self.buckets.waste.summary() if self.buckets is not None else None


@torch.inference_mode()
def answer(forward: Callable[..., Tensor], request: Request) -> Tensor:
    """The seeds' predicted classes, on the host (the read is the request's end)."""
    out = forward(request.x, request.edge_index, request.edge_weight)
    return out[: request.seeds].argmax(dim=-1).cpu()
