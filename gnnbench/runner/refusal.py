"""Refusing a value before torch is imported.

Most bad values (`train.lr=abc`, `train.epochs=-1`, a misspelt choice) are caught by the
settings' declaration alone (config/validate.py), which needs no torch. Checking them first
answers a typo in under a second instead of the 4–6 s that importing torch, PyG and every
model takes; the record written is the one `run_experiment` writes for the same value, so
whichever path refuses it, the user and the report see the same thing. What only a model's,
dataset's or compiler's own check can say is still refused by `run_experiment`."""

from __future__ import annotations

import time
from pathlib import Path

from omegaconf import DictConfig
from pydantic import ValidationError

from gnnbench import config
from gnnbench.measure.environment import environment
from gnnbench.records import store
from gnnbench.records.model import CommandRecord, Record, Timing, new_record
from gnnbench.runner import launch


def overrides() -> list[str]:
    """The command line's overrides of this job, as Hydra parsed them."""
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def invalid_command(cfg: DictConfig, problem: str, out_dir: Path) -> CommandRecord:
    """A value of a type no run's record holds (compile=maybe): kept as a command that could
    not run, beside any record already in `out_dir`."""
    invalid = CommandRecord(name=config.run_name(cfg), reason=problem, command=overrides(),
                            env=environment(None))
    store.write(invalid, store.beside(out_dir, "invalid-command"))
    return invalid


def refuse(cfg: DictConfig, out_dir: Path, started: float | None = None) \
        -> Record | CommandRecord | None:
    """The input-error record of a value the declaration refuses, written beside any real
    record in `out_dir`; None when the declaration accepts the config (the run's own checks
    come next). `started`: when the run began (perf_counter), for its wall time."""
    if not launch.records_run():  # a DDP rank but rank 0: the run's own checks, which
        return None  # leave the recording to rank 0
    started = time.perf_counter() if started is None else started
    try:
        config.validate(cfg)
    except config.ConfigError as exc:
        problem = str(exc)
    else:
        return None
    try:
        record = new_record(cfg, config.run_name(cfg))
    except ValidationError:
        return invalid_command(cfg, problem, out_dir)
    record.started_at = time.time()
    record.env = environment(None)
    record.status, record.reason, record.input_error = "error", problem, True
    record.timing = Timing(wall_s=time.perf_counter() - started, compile_overhead_s=None)
    record.ended_at = time.time()
    store.write(record, store.beside(out_dir, "invalid-command"))
    return record
