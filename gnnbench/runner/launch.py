"""Whether torchrun or srun started this process as one rank of a DDP run: read from the
environment alone, so that the command line can ask before it imports torch (a rank other
than 0 gets no run folder of its own)."""

from __future__ import annotations

import os
from typing import NamedTuple

from gnnbench.config import ConfigError


class Launched(NamedTuple):
    """A rank that torchrun or srun started (not gnnbench)."""

    rank: int
    world_size: int
    local_rank: int
    launcher: str


def external() -> Launched | None:
    """This process's rank when torchrun (RANK, WORLD_SIZE, LOCAL_RANK) or srun (SLURM_PROCID,
    SLURM_NTASKS > 1, with MASTER_ADDR and MASTER_PORT exported) started it as one of the
    ranks; None when gnnbench is to start them."""
    env = os.environ
    if "RANK" in env and "WORLD_SIZE" in env:
        return Launched(int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", 0)),
                        "torchrun")
    if int(env.get("SLURM_NTASKS", "1")) > 1 and "SLURM_PROCID" in env:
        if "MASTER_ADDR" not in env or "MASTER_PORT" not in env:
            raise ConfigError("train.distributed='ddp' in a SLURM step of "
                              f"{env['SLURM_NTASKS']} tasks needs MASTER_ADDR and MASTER_PORT "
                              "exported (README, Scaling out), or one task per run")
        return Launched(int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"]),
                        int(env.get("SLURM_LOCALID", 0)), "srun")
    return None


def records_run() -> bool:
    """Whether this process records the run: all but the ranks other than 0 that torchrun
    or srun started (their figures reach rank 0 through the collectives)."""
    try:
        outside = external()
    except ConfigError:
        return True  # the run records that error
    return outside is None or outside.rank == 0
