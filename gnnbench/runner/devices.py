"""Exclusive, host-wide leases on the devices a job times on, so that no two timed jobs ever
share a GPU: jobs run by a launcher in other processes (the GPU pool, submitit) each take a
lease before they touch CUDA and keep it until they end; a job that finds every GPU taken
waits for one to free.

A lease is a `filelock` lock (the package gnnbench locks every shared file with) on a file
named after the GPU's UUID in a folder shared by every process of the host
(`$GNNBENCH_LEASE_DIR`, else `<tmp>/gnnbench-leases`): the same GPU has the same name whatever
CUDA_VISIBLE_DEVICES a process got. The lock is the kernel's (flock), never filelock's soft
fallback (a file that a killed process would leave behind): the kernel drops it when its
process ends, however it ends, so a killed job never leaves a GPU locked. A
host without CUDA has CPU slots instead (how many: `gpus`, else one): one timed CPU job at a
time unless the user says otherwise.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from filelock import FileLock, Timeout

from gnnbench.config import files
from gnnbench.measure.environment import gpu_uuid

LEASE_DIR_ENV = "GNNBENCH_LEASE_DIR"
# The slots this process held last: a worker that runs job after job keeps its GPU (one CUDA
# context per worker) whenever that GPU is free.
_last: list[str] = []


def lease_dir() -> Path:
    folder = Path(os.environ.get(LEASE_DIR_ENV) or Path(tempfile.gettempdir()) /
                  "gnnbench-leases")
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        try:  # shared by every user of the host, like /tmp itself
            folder.chmod(0o1777)
        except OSError:
            pass
    return folder


@dataclass
class Lease:
    """The devices a job may use, held until `release()` (or the process's end)."""

    devices: list[torch.device]
    slots: list[str]
    _locks: list[FileLock] = field(default_factory=list, repr=False)

    def release(self) -> None:
        for lock in self._locks:
            lock.release()
        self._locks.clear()

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _try_lock(folder: Path, slot: str) -> FileLock | None:
    """The slot's lock if it is free now. Not thread-local (a job's lease is released by
    whichever thread ends it); a filesystem without flock is an error, not a soft lock."""
    lock = FileLock(folder / f"{slot}.lock", timeout=0, thread_local=False,
                    fallback_to_soft=False)
    try:
        lock.acquire()
    except Timeout:
        return None
    return lock


def _holder(folder: Path, slot: str) -> str:
    try:
        return (folder / f"{slot}.holder").read_text().strip()
    except OSError:
        return "unknown"


def _mark(folder: Path, slot: str, holder: str) -> None:
    """Who holds the slot, for the message of a job that waits for it."""
    files.atomic_write(folder / f"{slot}.holder",
                       f"{holder} (pid {os.getpid()} on {platform.node()}, since "
                       f"{time.strftime('%H:%M:%S')})\n")


def candidates(device: torch.device, cpu_slots: int) -> dict[str, torch.device]:
    """Slot name -> device, in the order they are tried: `cuda` (or `auto` on a CUDA host)
    any visible GPU, `cuda:N` only that one, `cpu` one of `cpu_slots` CPU slots."""
    if device.type != "cuda":
        return {f"cpu-{k}": torch.device("cpu") for k in range(cpu_slots)}
    indices = [device.index] if device.index is not None else range(torch.cuda.device_count())
    found = {}
    for index in indices:
        gpu = torch.device("cuda", index)
        found[gpu_uuid(gpu) or f"gpu-{platform.node()}-{index}"] = gpu
    return found


def lease(device: torch.device, count: int, holder: str, *, cpu_slots: int = 1,
          should_stop: Callable[[], bool] = lambda: False,
          say: Callable[[str], None] = print, poll_s: float = 0.5) -> Lease | None:
    """Lease `count` GPUs (for a CPU run, one CPU slot) of `device`'s kind, all or none,
    waiting until they are free. None if `should_stop()` turns true while waiting (the sweep
    is being stopped)."""
    folder = lease_dir()
    options = candidates(device, cpu_slots)
    wanted = count if device.type == "cuda" else 1
    if len(options) < wanted:
        raise RuntimeError(f"{holder} needs {wanted} GPU(s) but this process sees "
                           f"{len(options)}")
    order = sorted(options, key=lambda slot: slot not in _last)  # stable: visible order
    waited = False
    while True:
        taken: list[tuple[str, FileLock]] = []
        for slot in order:
            lock = _try_lock(folder, slot)
            if lock is not None:
                taken.append((slot, lock))
                if len(taken) == wanted:
                    break
        if len(taken) == wanted:
            slots = [slot for slot, _ in taken]
            for slot in slots:
                _mark(folder, slot, holder)
            _last[:] = slots
            if waited:
                say(f"gnnbench: {holder}: got {', '.join(map(str, (options[s] for s in slots)))}")
            return Lease([options[s] for s in slots], slots, [lock for _, lock in taken])
        for _, lock in taken:  # all or none: never sit on some GPUs waiting for more
            lock.release()
        if not waited:
            busy = "; ".join(f"{options[s]}: {_holder(folder, s)}" for s in order)
            say(f"gnnbench: {holder} waits for {wanted} free "
                f"{'GPU' if device.type == 'cuda' else 'CPU slot'}(s) ({busy})")
            waited = True
        if should_stop():
            return None
        time.sleep(poll_s)
