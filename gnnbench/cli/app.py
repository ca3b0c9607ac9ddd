"""The Hydra entry point: one job of a run or a sweep. Everything a job needs from other jobs
(its eager reference, whether it repeats an eager job, whether it already ran) comes from
records on disk, so any Hydra launcher can run the jobs, in any order, in any process or on
any host, and a sweep re-run into its folder resumes."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from gnnbench import config
from gnnbench.records import identity, store
from gnnbench.records.model import Record
from gnnbench.runner import interrupts, refusal

BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"

config.register_resolvers()


def _skip_if_repeat(cfg: DictConfig, out_dir: Path, sweep_dir: Path) -> bool:
    """An eager job whose setting and seed another job of this sweep already measures (a
    sweep crossing compile=false,true with compiler.* repeats its eager jobs) is recorded as
    skipped instead of trained again."""
    from gnnbench.runner import skipped_record

    try:
        device = config.resolve_device(cfg.train.device).type
    except config.ConfigError:
        return False  # the run itself reports the bad device
    key = identity.run_key(OmegaConf.to_container(cfg, resolve=True), device)
    holder = store.claim(sweep_dir, key, out_dir)
    if holder is None:
        return False
    store.write(skipped_record(cfg, holder), out_dir)
    print(f"gnnbench: skipped {out_dir.name}: same eager run as {holder}", flush=True)
    return True


def _valid(cfg: DictConfig) -> bool:
    """False for a value the run would refuse: the run then records and says why."""
    from gnnbench.runner import validate

    try:
        validate(cfg)
    except config.ConfigError:
        return False
    return True


def _same_run(cfg: DictConfig, record: Record) -> bool:
    """Whether `record` is of the run `cfg` asks for (setting, variant, seed, on the same
    device type): another command aimed at the folder is not a resume of it."""
    try:
        device = config.resolve_device(cfg.train.device).type
    except config.ConfigError:
        return False
    plain = OmegaConf.to_container(cfg, resolve=True)
    return (identity.run_key(plain, device) == identity.record_run_key(record)
            and config.variant_label(plain) == identity.record_variant(record))


def _already_final(cfg: DictConfig, out_dir: Path) -> bool:
    """Resuming: a job whose folder holds a final record of the same run is kept, not run
    again (nor logged to W&B again), unless `rerun=true`."""
    path = out_dir / store.RESULTS_FILE
    if cfg.get("rerun") or not path.is_file():
        return False
    try:
        record = store.read(path)
    except store.InvalidRecord as exc:
        store.warn_skipped(exc)
        return False  # run it again, which rewrites it
    if not store.is_final(record) or not _same_run(cfg, record):
        return False
    print(f"gnnbench: kept {out_dir.name}: already {record.status} "
          "(rerun=true runs it again)", flush=True)
    return True


def _in_other_process(hydra_cfg: DictConfig) -> bool:
    """Whether this sweep job runs in a process of its launcher's (the GPU pool's workers,
    submitit's jobs), not in the one the user started (Hydra's basic launcher)."""
    return hydra_cfg.mode == RunMode.MULTIRUN and hydra_cfg.launcher.get("_target_") != \
        BASIC_LAUNCHER


def _lease(cfg: DictConfig, out_dir: Path):
    """The devices of a job that may run beside others on this host: a lease on one GPU (a
    DDP run: one per rank; `train.device=cuda:N`: that GPU), or on a CPU slot (`gpus`, else
    one), waited for until free. None when the run will fail validation anyway (it records
    why), False when the sweep is stopped while waiting."""
    import torch

    from gnnbench.runner import devices

    if os.environ.get("CUDA_VISIBLE_DEVICES") == "" and cfg.train.device == "auto":
        print(f"gnnbench: warning: {out_dir.name} sees no GPU (CUDA_VISIBLE_DEVICES is empty, "
              "as submitit_local sets it without gpus_per_node): it runs on the CPU; "
              "hydra/launcher=slurm-local shows jobs the host's GPUs", file=sys.stderr)
    try:
        device = config.resolve_device(cfg.train.device)
    except config.ConfigError:
        return None
    if device.type == "cuda" and cfg.train.device in ("auto", "cuda"):
        device = torch.device("cuda")  # any GPU of the host, not the current one
    def count(value: object) -> int:  # a bad value is the run's error to record
        return value if isinstance(value, int) and not isinstance(value, bool) \
            and value >= 1 else 1

    ranks = cfg.train.world_size if cfg.train.get("distributed") == "ddp" else 1
    try:
        held = devices.lease(device, count(ranks), out_dir.name,
                             cpu_slots=count(cfg.get("gpus")),
                             should_stop=lambda: interrupts.requested() is not None)
    except RuntimeError:  # more GPUs than the host has: the run says so
        return None
    return held if held is not None else False


def resume_command(sweep_dir: Path) -> str:
    from gnnbench.report.handoff import SETTING

    args = [a for a in sys.argv[1:] if not a.startswith(("hydra.sweep.dir=", f"{SETTING}="))]
    return shlex.join(["python", "-m", "gnnbench", *args, f"hydra.sweep.dir={sweep_dir}"])


class SweepStopped(SystemExit):
    """A sweep ended early with its report and resume hint already given: said once."""


def stop_sweep(sweep_dir: Path, why: str, code: int, report: bool = True) -> NoReturn:
    """End a sweep early and cleanly: a report of what finished (`report=False`: already
    written), and how to resume; raises SweepStopped(code)."""
    from gnnbench.report.cli import write_report

    print(f"gnnbench: sweep stopped: {why}; the jobs with records:", file=sys.stderr)
    for record in store.find([sweep_dir], warn=False):
        print(f"  {record.status:12s} {record.folder}", file=sys.stderr)
    if report:
        try:
            write_report([sweep_dir], log_to_wandb=False)
        except OSError as exc:  # the disk that stopped the sweep, most often: not a new error
            print(f"gnnbench: the report could not be written either "
                  f"({exc.strerror or exc})", file=sys.stderr)
    print(f"gnnbench: to resume, run: {resume_command(sweep_dir)}", file=sys.stderr, flush=True)
    raise SweepStopped(code)


def _cannot_record(exc: store.WriteError, out_dir: Path, sweep_dir: Path | None,
                   elsewhere: bool) -> None:
    """A job that cannot write its files (a full disk): one line; a sweep run here stops
    with its report and how to resume; a single run exits 1. In a launcher's process the
    job just ends: the sweep's end lists it as having no record, and exits 1."""
    print(f"gnnbench: error: {exc}", file=sys.stderr, flush=True)
    if elsewhere:
        return
    if sweep_dir is not None:
        stop_sweep(sweep_dir, f"{out_dir.name} could not record its result", 1)
    sys.exit(1)


def _say_input_error(reason: str, out_dir: Path, sweeping: bool) -> None:
    """Bad input, like a command that cannot be composed: one line; a single run exits 1, a
    sweep goes on (its exit status comes from its records)."""
    where = f"{out_dir.name}: " if sweeping else ""
    print(f"gnnbench: error: {where}{reason}", file=sys.stderr, flush=True)
    if not sweeping:
        sys.exit(1)


@hydra.main(config_path=str(config.CONF_DIR), config_name="config", version_base=None)
def job(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    out_dir = Path(hydra_cfg.runtime.output_dir)
    sweeping = hydra_cfg.mode == RunMode.MULTIRUN
    sweep_dir = Path(hydra_cfg.sweep.dir).resolve() if sweeping else None
    # A job in a launcher's process ends by returning, whatever happens: the process that
    # launched the sweep reports it, tells how to resume and chooses the exit status.
    elsewhere = _in_other_process(hydra_cfg)
    if elsewhere:
        interrupts.install()  # this process's own Ctrl-C/SIGTERM: finish the epoch, record
        interrupts.follow(sweep_dir / interrupts.STOP_FILE)
    signum = interrupts.requested()
    if signum is not None:  # a signal arrived between jobs: start no more
        if elsewhere:
            print(f"gnnbench: not started {out_dir.name}: the sweep was stopped by "
                  f"{interrupts.name(signum)}", file=sys.stderr, flush=True)
            return
        stop_sweep(sweep_dir, f"{interrupts.name(signum)} before {out_dir.name}",
                   interrupts.exit_code(signum))
    refused = refusal.refuse(cfg, out_dir)  # most bad values: said before torch is imported
    if refused is not None:
        _say_input_error(refused.reason, out_dir, sweeping)
        return
    from gnnbench.report.summary import format_summary
    from gnnbench.runner import run_experiment  # torch, PyG and the models: seconds
    from gnnbench.runner.notes import notes_to_log

    if _valid(cfg) and _already_final(cfg, out_dir):  # a bad value is said, never "kept"
        return
    try:
        if sweeping and cfg.compile is False and _skip_if_repeat(cfg, out_dir, sweep_dir):
            return
    except store.WriteError as exc:  # its claim to the eager run could not be written
        _cannot_record(exc, out_dir, sweep_dir, elsewhere)
        return
    lease = _lease(cfg, out_dir) if elsewhere else None
    if lease is False:
        print(f"gnnbench: not started {out_dir.name}: the sweep was stopped while it waited "
              "for a device", file=sys.stderr, flush=True)
        return
    # Where eager references are looked for: this sweep (a single run: the folder of its
    # run folders), and any folders the user names.
    search = [sweep_dir or out_dir.parent, *map(Path, cfg.get("reference_dirs") or [])]
    group = cfg.wandb.group or (sweep_dir.name if sweeping else None)
    try:
        with notes_to_log():
            result = run_experiment(cfg, out_dir, reference_dirs=search, wandb_group=group,
                                    log_dir=sweep_dir, devices=lease.devices if lease else None,
                                    # jobs side by side: plain progress lines, no live bars
                                    live_progress=not elsewhere)
    except store.WriteError as exc:
        _cannot_record(exc, out_dir, sweep_dir, elsewhere)
        return
    finally:
        if lease:
            lease.release()
    if result is None:  # a DDP rank other than 0 under torchrun: rank 0 records the run
        from gnnbench.runner import distributed

        distributed.exit_rank(0)
    # A single run that did not end ok exits 1 here; a sweep's exit status comes from its
    # records (report/handoff.py), wherever its jobs ran.
    if result.input_error:
        _say_input_error(result.reason, out_dir, sweeping)
        return
    print(format_summary(result, str(out_dir / "results.json")), flush=True)
    if result.status == "interrupted":
        signum = interrupts.requested() or 2
        if elsewhere:
            print(f"gnnbench: {result.reason}; results: {out_dir / 'results.json'}",
                  file=sys.stderr, flush=True)
            return
        if sweeping:
            stop_sweep(sweep_dir, f"{interrupts.name(signum)} during {out_dir.name}",
                       interrupts.exit_code(signum))
        print(f"gnnbench: {result.reason}; results: {out_dir / 'results.json'}",
              file=sys.stderr)
        sys.exit(interrupts.exit_code(signum))
    if result.status != "ok" and not sweeping:
        print(f"gnnbench: error: {result.reason}", file=sys.stderr)
        sys.exit(1)
