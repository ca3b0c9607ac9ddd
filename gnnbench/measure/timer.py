"""Device-synchronised timers. A GPU region is timed only between two synchronisations (or
by CUDA events read after one): otherwise we would time the launch, not the work."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T")


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], T], device: torch.device) -> tuple[T, float]:
    """Run `fn` between two device synchronisations; return its result and seconds."""
    synchronize(device)
    start = time.perf_counter()
    result = fn()
    synchronize(device)
    return result, time.perf_counter() - start


class EpochTimer:
    """Times the regions of one epoch. On CUDA with events around each region and one
    synchronisation when read: a synchronisation between regions would idle the GPU while
    the next region is launched, a cost the user's own loop does not pay. On CPU, wall time.
    Regions with the same name add up (the batches of an epoch). One timer serves every
    epoch of a run: `read()` starts the next epoch, and its events are reused, so timing
    costs two event records per region and no event creation."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        # Events are recorded on this stream, looked up once: `Event.record()` without a
        # stream looks it up on every call, which on an H200 host is 8 µs a record against
        # 3 µs (a small graph's step is host-bound, so this is time the user would see).
        self.stream = torch.cuda.current_stream(device) if self.cuda else None
        self.seconds: dict[str, float] = {}
        self.events: list[tuple[str, torch.cuda.Event, torch.cuda.Event]] = []
        self._pool: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []

    def measure(self, name: str, fn: Callable[[], T]) -> T:
        if self.cuda:
            self.seconds.setdefault(name, 0.0)
            if len(self._pool) == len(self.events):
                self._pool.append((torch.cuda.Event(enable_timing=True),
                                   torch.cuda.Event(enable_timing=True)))
            start, end = self._pool[len(self.events)]
            start.record(self.stream)
            result = fn()
            end.record(self.stream)
            self.events.append((name, start, end))
            return result
        started = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - started
        self.seconds[name] = self.seconds.get(name, 0.0) + elapsed
        return result

    def read(self) -> dict[str, float]:
        """Seconds per region since the last read; waits for the last region to end."""
        if self.events:
            self.events[-1][2].synchronize()
            for name, start, end in self.events:
                self.seconds[name] += start.elapsed_time(end) / 1e3
            self.events.clear()
        seconds, self.seconds = self.seconds, {}
        return seconds
