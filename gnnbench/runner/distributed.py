"""A DDP run's processes: started by gnnbench on one host (one process per rank and GPU,
through torch.multiprocessing, meeting at a file in the run's folder), or by torchrun or
srun (one process each, meeting at MASTER_ADDR:MASTER_PORT); each trains as one rank
(gnnbench/training/distributed.py), and rank 0's record, with every rank's timings,
becomes the run's `results.json`.

No failure hangs the run: every collective times out (`train.dist_timeout_s`); the process
that started the ranks watches them and, when one dies or fails, stops the others and
records the run as failed, naming that rank and why. Under torchrun, rank 0 writes a
provisional record (`interrupted`, so a resumed sweep runs it again) before training, which
its final record replaces: a run whose rank 0 is killed still leaves one.
"""

from __future__ import annotations

import json
import multiprocessing.connection
import os
import shutil
import signal
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from omegaconf import DictConfig, OmegaConf

from gnnbench.config import require
from gnnbench.measure import dynamo
from gnnbench.measure.environment import environment
from gnnbench.records import store
from gnnbench.records.model import Record, Timing, new_record
from gnnbench.runner import interrupts, loop
from gnnbench.runner.launch import Launched, external, records_run  # noqa: F401 - its API
from gnnbench.training import distributed as ddp

WORK_DIR = ".gnnbench-ddp"  # in the run's folder while its ranks run
GRACE_S = 10.0  # how long ranks get to stop by themselves before they are killed
# What a rank's record brings to the run's record.
RANK_FIELDS = ("status", "reason", "traceback", "env", "dataset", "batching", "epochs",
               "memory", "compile", "cuda_graph_audit", "cuda_graphs", "accuracy",
               "stability", "distributed")


def rank_devices(cfg: DictConfig, devices: list[torch.device] | None,
                 outside: Launched | None) -> list[torch.device]:
    """The device of each rank (started by torchrun/srun: this rank's only), checked."""
    world = cfg.train.world_size
    if outside is not None:
        require(outside.world_size == world,
                f"train.world_size={world} but {outside.launcher} started "
                f"{outside.world_size} processes; pass train.world_size="
                f"{outside.world_size}")
    if devices and devices[0].type == "cpu":  # a CPU slot leased for the whole run
        return [devices[0]] * (1 if outside else world)
    if devices:
        require(len(devices) == (1 if outside else world),
                f"{len(devices)} device(s) leased for train.world_size={world}")
        return list(devices)
    from gnnbench.config import resolve_device

    device = resolve_device(cfg.train.device)
    if device.type != "cuda":
        return [device] * (1 if outside else world)
    count = torch.cuda.device_count()
    if outside is not None:  # one GPU per local rank; a task bound to its GPU sees one
        local = 0 if count == 1 else outside.local_rank
        require(local < count, f"rank {outside.rank} is local rank "
                f"{outside.local_rank} but its host shows {count} CUDA device(s)")
        return [torch.device("cuda", local)]
    require(world <= count, f"train.world_size={world} but this host has {count} CUDA "
                            f"device(s): {', '.join(f'cuda:{i}' for i in range(count))}")
    require(world == 1 or ":" not in str(cfg.train.device),
            f"train.device={cfg.train.device!r} names one GPU for train.world_size={world}; "
            "use train.device=cuda (choose the GPUs with CUDA_VISIBLE_DEVICES)")
    first = device.index if world == 1 else 0
    return [torch.device("cuda", first + i) for i in range(world)]


def train_rank(cfg: DictConfig, rank: int, device: torch.device, init_method: str,
               name: str) -> Record:
    """Train as rank `rank`; never raises for a failed run: the rank's record says how it
    ended (rank 0's also holds the run's epochs, with every rank's timings). The process
    group is left as it is after a failure: tearing down one that lost a rank can hang."""
    world = cfg.train.world_size
    record = new_record(cfg, name)
    record.env = environment(device)
    try:
        ddp.init(cfg, device, rank, world, init_method)
        with dynamo.DynamoRecorder() if cfg.compile else nullcontext() as recorder:
            loop.train_epochs(cfg, device, record, recorder)
        own = {"rank": rank, "pid": os.getpid(), "status": record.status,
               "memory": record.memory.model_dump(),
               **{k: record.env.get(k) for k in ("host", "device", "device_index",
                                                 "device_uuid", "cuda_visible_devices")}}
        record.distributed = {"world_size": world, "backend": ddp.backend(cfg, device),
                              "timeout_s": cfg.train.dist_timeout_s, "ranks": ddp.gather(own)}
        dist.destroy_process_group()
    except (interrupts.Interrupted, KeyboardInterrupt) as exc:
        loop.record_stopped_at_once(record, exc, cfg.train.epochs)
    except Exception as exc:
        loop.record_failure(record, exc)
        # A rank that only saw another one fail: the run's record names the other.
        record.collective = ddp.peer_failure(exc)
    return record


def exit_rank(code: int) -> NoReturn:
    """End a rank's process once nothing of its run is left to write, without the
    interpreter's teardown: the teardown of a process group that lost a rank can hang, and
    even after `destroy_process_group` gloo's worker threads can abort a finishing
    interpreter (SIGABRT, "terminate called without an active exception": 2 of 5 2-rank
    CPU runs here), which would fail a run whose every epoch was recorded, or make torchrun
    stop rank 0 before it records the run."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _spawned_rank(rank: int, cfg: dict, devices: list[str], init_method: str, work: str,
                  name: str) -> None:
    """A rank that gnnbench started: it obeys the signals of its terminal and the stop file
    of its parent, leaves its record in `work`, and exits 1 if its run failed."""
    interrupts.install()
    interrupts.follow(Path(work) / interrupts.STOP_FILE)
    record = train_rank(OmegaConf.create(cfg), rank, torch.device(devices[rank]),
                        init_method, name)
    store.write(record, Path(work), name=f"rank{rank}.json")
    exit_rank(0 if record.status in ("ok", "interrupted") else 1)


def _stop(processes: list, grace_s: float) -> None:
    """Give the ranks `grace_s` to end by themselves (a gloo rank notices a dead peer at
    once), then kill the rest: one stuck in a collective would not hear a signal."""
    deadline = time.monotonic() + grace_s
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
        process.join()


def _watch(processes: list, work: Path) -> tuple[list[int], BaseException | None]:
    """Wait for the ranks. Returns the ranks found failed first (before any was stopped)
    and, if the user asked to stop at once (a second signal), that request."""
    alive = {p.sentinel: rank for rank, p in enumerate(processes)}
    failed: list[int] = []
    told = False
    try:
        while alive and not failed:
            for sentinel in multiprocessing.connection.wait(list(alive), timeout=1.0):
                rank = alive.pop(sentinel)
                processes[rank].join()
                if processes[rank].exitcode != 0:
                    failed.append(rank)
            signum = interrupts.requested()
            if signum is not None and not told:  # e.g. a SIGTERM that reached only us
                (work / interrupts.STOP_FILE).write_text(interrupts.name(signum) + "\n")
                told = True
    except interrupts.Interrupted as exc:  # the ranks had it from the terminal, or die now
        _stop(processes, GRACE_S)
        return failed, exc
    if failed:
        _stop(processes, GRACE_S)
    return failed, None


def _why(rank: int, world: int, exitcode: int | None, record: Record | None) -> tuple[str, str]:
    if record is not None and record.status != "ok":
        return record.status, f"rank {rank} of {world}: {record.reason}"
    if exitcode is not None and exitcode < 0:
        return "error", (f"rank {rank} of {world} was killed by "
                         f"{signal.Signals(-exitcode).name}; the other ranks were stopped")
    return "error", (f"rank {rank} of {world} exited with code {exitcode} before it could "
                     "record why; the other ranks were stopped")


def _spawn(cfg: DictConfig, devices: list[torch.device], out_dir: Path,
           name: str) -> tuple[Record, BaseException | None]:
    """Start a rank per device, watch them, and return rank 0's record, its status and
    reason naming the rank that failed first if one did, and the user's request to stop at
    once if there was one."""
    world = cfg.train.world_size
    work = out_dir / WORK_DIR
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    context = mp.start_processes(
        _spawned_rank, args=(OmegaConf.to_container(cfg, resolve=True),
                             [str(d) for d in devices], f"file://{work / 'rendezvous'}",
                             str(work), name),
        nprocs=world, join=False, start_method="spawn")
    failed, stop_now = _watch(context.processes, work)
    records = {}
    for rank in range(world):
        path = work / f"rank{rank}.json"
        if path.is_file():
            records[rank] = Record.model_validate(json.loads(path.read_text()))
    shutil.rmtree(work, ignore_errors=True)
    result = records.get(0) or new_record(cfg, name)
    if failed:
        def blame(rank: int) -> tuple:  # killed, then failed by itself, then its victims
            code, own = context.processes[rank].exitcode, records.get(rank)
            return (code is None or code >= 0, own is not None and bool(own.get("collective")),
                    rank)

        culprit = min(failed, key=blame)
        result.status, result.reason = _why(culprit, world, context.processes[culprit].exitcode,
                                            records.get(culprit))
        result.traceback = records[culprit].traceback if culprit in records else None
    if result.distributed is None:
        result.distributed = {
            "world_size": world, "backend": ddp.backend(cfg, devices[0]),
            "timeout_s": cfg.train.dist_timeout_s,
            "ranks": [{"rank": r, "pid": p.pid, "exitcode": p.exitcode,
                       "status": records[r].status if r in records else None}
                      for r, p in enumerate(context.processes)]}
    return result, stop_now


def provisional(record: Record) -> Record:
    """What `results.json` says while the ranks run: if nothing replaces it, the run ended
    without the process that records it (killed, or stopped by torchrun for another rank)."""
    return record.model_copy(update={
        "status": "interrupted", "timing": Timing(wall_s=None, compile_overhead_s=None),
        "reason": "the run ended without recording its outcome: the process recording it "
                  "was killed, or a rank failed and its launcher stopped the others "
                  "(see the launcher's output)"})


def train(cfg: DictConfig, record: Record, devices: list[torch.device] | None,
          out_dir: Path) -> None:
    """Run the DDP training of `record`'s configuration into `record`."""
    outside = external()
    ranks = rank_devices(cfg, devices, outside)
    if records_run():
        store.write(provisional(record), out_dir)
    stop_now = None
    if outside is not None:
        rank = train_rank(cfg, outside.rank, ranks[0], "env://", record.name)
        launcher = outside.launcher
    else:
        rank, stop_now = _spawn(cfg, ranks, out_dir, record.name)
        launcher = "gnnbench"
    for key in RANK_FIELDS:
        if rank.has(key):
            setattr(record, key, getattr(rank, key))
    record.distributed.launcher = launcher
    if stop_now is not None:
        raise stop_now
