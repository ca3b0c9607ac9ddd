"""Sampling ahead must be invisible to training: the same batches, in the same order, for the
same seed, prefetched or not; a failure in the producer reaches the loop; a loop that stops
early leaves no thread behind."""

from __future__ import annotations

import threading

import pytest
import torch
from test_sampler import pick_seeds, power_law_graph
from test_sampler_marks import assert_same_batch

from gnnbench.training.prefetch import Prefetcher, tensors_of
from gnnbench.training.sampler import Batch, CSRGraph, NeighborSampler


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gnnbench-prefetch"]


def make_sampler(device: str = "cpu", seed: int = 7) -> NeighborSampler:
    n = 1200
    graph = CSRGraph.from_edge_index(power_law_graph(n, 9000).to(device), n)
    return NeighborSampler(graph, pick_seeds(n, 333, device=device), [6, 3], batch_size=50,
                           shuffle=True, seed=seed)


@pytest.mark.parametrize("device, background", [
    ("cpu", False), ("cpu", True),
    pytest.param("cuda", None, marks=pytest.mark.gpu),  # side stream + thread, the default
])
def test_prefetched_batches_are_the_samplers_own_in_order(device, background):
    direct, ahead = make_sampler(device), make_sampler(device)
    loader = Prefetcher(ahead, device, depth=2, background=background)
    assert len(loader) == len(direct) == 7
    for _ in range(2):  # the shuffle of the second epoch too
        got = list(loader)
        assert len(got) == 7
        for a, b in zip(got, direct, strict=True):
            assert a.n_id.device.type == device
            assert_same_batch(a, b)
    assert prefetch_threads() == []


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_prepare_runs_ahead_in_the_producer(device):
    """`prepare` (the gather of a batch's features, say) runs in the producing thread, and
    what it returns is what the loop gets, still in order."""
    sampler = make_sampler(device)
    x = torch.arange(sampler.graph.num_nodes, device=device).float().unsqueeze(1)
    threads = set()

    def gather(batch: Batch) -> tuple[Batch, torch.Tensor]:
        threads.add(threading.current_thread().name)
        return batch, x[batch.n_id]

    for batch, xb in Prefetcher(sampler, device, prepare=gather, background=True):
        assert torch.equal(xb.squeeze(1).long(), batch.n_id)
    assert threads == {"gnnbench-prefetch"}


def test_a_failure_while_sampling_reaches_the_training_loop():
    def batches():
        yield torch.zeros(3)
        raise ValueError("bad seeds")

    loader = Prefetcher(ListLike(batches), "cpu", background=True)
    seen = []
    with pytest.raises(ValueError, match="bad seeds"):
        for item in loader:
            seen.append(item)
    assert len(seen) == 1 and prefetch_threads() == []


def test_stopping_early_stops_the_producer():
    sampler = make_sampler()
    loader = Prefetcher(sampler, "cpu", depth=1, background=True)
    first = next(iter(loader))  # the generator is dropped at once: its cleanup joins
    assert first.batch_size == 50
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert prefetch_threads() == []


def test_depth_must_be_positive():
    with pytest.raises(ValueError, match="depth"):
        Prefetcher([], "cpu", depth=0)


def test_every_tensor_of_a_batch_is_found():
    batch = make_sampler().__iter__().__next__()
    found = list(tensors_of((batch, {"x": torch.ones(2)}, [torch.zeros(1)], 3)))
    assert len(found) == 5  # n_id, edge_index, e_id, x, and the list's one
    assert found[0] is batch.n_id


class ListLike:
    """A re-iterable over a generator function, as a sampler is."""

    def __init__(self, make) -> None:
        self.make = make

    def __iter__(self):
        return self.make()


@pytest.mark.gpu
def test_a_high_priority_side_stream_gives_the_same_batches():
    """train.prefetch_stream=high: the producer samples on a stream of higher priority than
    the default one, and the batches are still the sampler's own, in order."""
    direct, ahead = make_sampler("cuda"), make_sampler("cuda")
    priorities = set()

    def note(batch: Batch) -> Batch:
        priorities.add(torch.cuda.current_stream().priority)
        return batch

    got = list(Prefetcher(ahead, "cuda", prepare=note, priority=-1))
    for a, b in zip(got, direct, strict=True):
        assert_same_batch(a, b)
    assert len(priorities) == 1 and priorities.pop() < torch.cuda.current_stream().priority


def test_a_stream_priority_without_prefetching_is_refused():
    """A priority for a stream that no thread samples on would change nothing: refused."""
    from gnnbench import config

    for extra in (["train.batching=neighbor", "train.fanouts=[5,5]"], []):
        cfg = config.compose_config(["train.prefetch_stream=high", "train.device=cpu", *extra])
        with pytest.raises(config.ConfigError, match="prefetch_stream=high needs "
                                                     "train.prefetch=true"):
            config.validate(cfg)
    cfg = config.compose_config(["train.prefetch_stream=high", "train.prefetch=true",
                                 "train.batching=neighbor", "train.fanouts=[5,5]",
                                 "train.device=cpu"])
    assert config.validate(cfg).train.prefetch_stream == "high"
