"""Hydra callbacks of the command line: an output folder that cannot be written is one
clear line before anything runs, not a traceback from inside Hydra."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


def check_writable(folder: Path, key: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".gnnbench-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        print(f"gnnbench: error: cannot write to the output folder {folder} "
              f"({exc.strerror or exc}); choose a writable one with {key}=DIR",
              file=sys.stderr, flush=True)
        sys.exit(1)


class OutputFolderCheck(Callback):
    def on_run_start(self, config: DictConfig, **kwargs: object) -> None:
        check_writable(Path(config.hydra.run.dir), "hydra.run.dir")

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        check_writable(Path(config.hydra.sweep.dir), "hydra.sweep.dir")
