"""Hydra callbacks of the command line: an output folder that cannot be written is one
clear line before anything runs, not a traceback from inside Hydra; and a sweep whose jobs
run in other processes hears of a signal the launching process receives."""

from __future__ import annotations

import errno
import os
import shutil
import sys
import tempfile
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from gnnbench.runner import interrupts

# Hydra's own files of a run (`.hydra/*.yaml`) or of a sweep (`multirun.yaml`) take a few KiB;
# less free space than this and Hydra would leave them empty: the disk is full.
START_NEEDS = 32 << 10  # a run's three .hydra files: 12-20 KiB in tmpfs pages


def check_writable(folder: Path, key: str) -> None:
    """Before Hydra writes anything there (`.hydra/*.yaml`, `multirun.yaml`): a folder that
    cannot be written, or whose disk is full, is one line and exit 1, and no empty files or
    folders of this run are left in it (Hydra would leave 0-byte YAML files and a traceback)."""
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(folder).free
        if free < START_NEEDS:
            raise OSError(errno.ENOSPC, f"no space left on device: {free // 1024} KiB free")
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".gnnbench-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        for made in created:  # innermost first; only the ones still empty
            try:
                made.rmdir()
            except OSError:
                break
        full = exc.errno == errno.ENOSPC
        cause = exc.strerror or str(exc)
        if full and "free" not in cause:
            cause = "no space left on device"
        print(f"gnnbench: error: cannot write to the output folder {folder} ({cause}); "
              f"{'free some space or ' if full else ''}choose a writable one with {key}=DIR",
              file=sys.stderr, flush=True)
        sys.exit(1)


def save_hydra_file(cfg: object, filename: str, output_dir: Path) -> None:
    """Hydra's `_save_config` (a job's `.hydra/*.yaml`), written whole or not at all: a disk
    that fills in the middle of a sweep is one line and exit 1 (the sweep then stops with
    its report and how to resume), not a traceback and an empty config.yaml."""
    from omegaconf import OmegaConf

    from gnnbench.config import files

    path = Path(output_dir) / filename
    try:
        files.atomic_write(path, OmegaConf.to_yaml(cfg))
    except OSError as exc:
        cause = "no space left on device" if exc.errno == errno.ENOSPC else \
            (exc.strerror or str(exc))
        print(f"gnnbench: error: cannot write {path} ({cause})", file=sys.stderr, flush=True)
        raise CannotWrite(f"{path.parent.parent.name} could not write {path.name} ({cause})") \
            from None


class CannotWrite(SystemExit):
    """Exit 1: a file of a job could not be written (said already, in one line); `why`,
    for the sweep's stop line."""

    def __init__(self, why: str) -> None:
        super().__init__(1)
        self.why = why


def install_hydra_file_writer() -> None:
    """Hydra's job runner looks `_save_config` up in its module at each job."""
    import hydra.core.utils

    hydra.core.utils._save_config = save_hydra_file


SWEEP_LOCK = ".sweep.lock"


class OutputFolderCheck(Callback):
    """Also holds the sweep folder's lock while the sweep runs: a second sweep started into
    the same folder would train every job again, at the same time, last writer winning."""

    def __init__(self) -> None:
        self.lock = None

    def __getstate__(self) -> dict:
        """Launchers that pickle Hydra's context for their workers (submitit) carry the
        callbacks along: the lock stays with the process that holds it."""
        return {"lock": None}

    def on_run_start(self, config: DictConfig, **kwargs: object) -> None:
        check_writable(Path(config.hydra.run.dir), "hydra.run.dir")

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        from filelock import FileLock, Timeout

        root = Path(config.hydra.sweep.dir)
        check_writable(root, "hydra.sweep.dir")
        self.lock = FileLock(str(root / SWEEP_LOCK), timeout=0)
        try:
            self.lock.acquire()
        except Timeout:
            print(f"gnnbench: error: another sweep is running in {root} (it holds "
                  f"{root / SWEEP_LOCK}); wait for it to end, or choose another folder with "
                  "hydra.sweep.dir=DIR", file=sys.stderr, flush=True)
            sys.exit(1)

    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        if self.lock is not None:
            self.lock.release()
            # No empty file left behind by a sweep that ended (a killed one leaves it, free).
            Path(self.lock.lock_file).unlink(missing_ok=True)


class SweepSignals(Callback):
    """The first SIGINT/SIGTERM of the launching process is written to the sweep's stop file,
    which every job reads between epochs (wherever it runs); a resumed sweep starts without
    the stop file of the run it resumes."""

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        root = Path(config.hydra.sweep.dir)
        interrupts.broadcast_to(root / interrupts.STOP_FILE)
        gpus = config.get("gpus")
        if isinstance(gpus, int) and gpus > 1 and "n_jobs" in config.hydra.launcher:
            from gnnbench.config.compose import gpu_count

            if gpu_count() == 0:
                print(f"gnnbench: warning: gpus={gpus} on a host without CUDA runs {gpus} "
                      "CPU jobs at once: their timings share the CPU cores",
                      file=sys.stderr, flush=True)
