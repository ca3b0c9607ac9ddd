"""Sampling the next mini-batch while the current one trains.

The own sampler reads a few counts back from the device per batch, and each read stalls
the thread that launches kernels until the GPU has caught up. Run in the same thread as
the training step, those stalls and the sampler's launches add to every step. Here a
background thread samples (and, given `prepare`, gathers) up to `depth` batches ahead on a
side CUDA stream of its own; the consumer's stream waits on an event recorded after each
batch, so it never reads a batch that is still being written, and the batch's memory is
marked as used by the consumer's stream, so the caching allocator does not hand it back
to the side stream while the step may still read it.

Items come out in the order the wrapped iterable yields them, so a seeded sampler gives
the same batches, in the same order, prefetched or not. On CPU the default is to sample
in the caller's thread (nothing to overlap with on a couple of cores); `background=True`
forces the thread there too.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from typing import Any, Generic, TypeVar

import torch

T = TypeVar("T")

_END = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def tensors_of(item: Any) -> Iterator[torch.Tensor]:
    """Every tensor inside a batch: a tensor, a dataclass (sampler.Batch, PaddedBatch) or a
    tuple, list or dict of those."""
    if isinstance(item, torch.Tensor):
        yield item
    elif dataclasses.is_dataclass(item) and not isinstance(item, type):
        for field in dataclasses.fields(item):
            yield from tensors_of(getattr(item, field.name))
    elif isinstance(item, (tuple, list)):
        for part in item:
            yield from tensors_of(part)
    elif isinstance(item, dict):
        for part in item.values():
            yield from tensors_of(part)


class Prefetcher(Generic[T]):
    """Iterates `batches` (anything re-iterable, e.g. a NeighborSampler) `depth` items ahead,
    each passed through `prepare` in the producer (e.g. the gather of its features)."""

    def __init__(self, batches: Iterable[Any], device: torch.device | str, depth: int = 1,
                 prepare: Callable[[Any], T] | None = None,
                 background: bool | None = None, priority: int = 0) -> None:
        if depth < 1:
            raise ValueError(f"depth must be at least 1, got {depth}")
        self.batches = batches
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:  # the thread's own
            self.device = torch.device("cuda", torch.cuda.current_device())  # could differ
        self.depth = depth
        # The side stream's CUDA priority (lower is higher, 0 the default): the sampler's
        # kernels are small and each of its reads waits for them, so at high priority they
        # need not queue behind the step's.
        self.priority = priority
        self.prepare = prepare
        self.background = self.device.type == "cuda" if background is None else background

    def __len__(self) -> int:
        return len(self.batches)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[T]:
        if not self.background:
            for item in self.batches:
                yield self.prepare(item) if self.prepare else item
            return
        yield from self._ahead()

    def _ahead(self) -> Iterator[T]:
        cuda = self.device.type == "cuda"
        consumer = torch.cuda.current_stream(self.device) if cuda else None
        side = torch.cuda.Stream(self.device, priority=self.priority) if cuda else None
        if cuda:  # whatever the consumer queued before (the graph, the seeds) comes first
            side.wait_stream(consumer)
        ready: queue.Queue = queue.Queue(maxsize=self.depth)
        stop = threading.Event()

        def put(entry: object) -> bool:
            while not stop.is_set():
                try:
                    ready.put(entry, timeout=0.05)
                    return True
                except queue.Full:
                    continue
            return False

        def produce() -> None:
            try:
                with (torch.cuda.device(self.device) if cuda else nullcontext()), \
                        (torch.cuda.stream(side) if cuda else nullcontext()):
                    for item in self.batches:
                        item = self.prepare(item) if self.prepare else item
                        event = torch.cuda.Event() if cuda else None
                        if event is not None:
                            event.record(side)
                        if not put((item, event)):
                            return
            except BaseException as error:  # noqa: BLE001 - handed to the consumer
                put(_Failure(error))
            put(_END)

        thread = threading.Thread(target=produce, name="gnnbench-prefetch", daemon=True)
        thread.start()
        try:
            while (entry := ready.get()) is not _END:
                if isinstance(entry, _Failure):
                    raise entry.error
                item, event = entry
                if event is not None:
                    consumer.wait_event(event)
                    for tensor in tensors_of(item):
                        if tensor.is_cuda:
                            tensor.record_stream(consumer)
                yield item
        finally:  # also when the consumer stops early: no thread left sampling
            stop.set()
            thread.join()
            if cuda:
                consumer.wait_stream(side)
