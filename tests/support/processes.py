"""Test-only: the command line in real subprocesses, as an operator runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def clean_env(cwd: Path, **extra: str) -> dict:
    """No inherited mirror, no W&B credentials; W&B's own files under `cwd`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WANDB_", "GNNBENCH_"))}
    home = str(cwd / "wandb-home")
    env.update(WANDB_DIR=home, WANDB_CONFIG_DIR=home, WANDB_CACHE_DIR=home,
               WANDB_DATA_DIR=home, NETRC=str(cwd / "no-netrc"), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def start(args: list[str], cwd: Path, **popen: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gnnbench", *args], cwd=cwd,
                            env=clean_env(cwd), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gnnbench", *args], cwd=cwd,
                          env=clean_env(cwd), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)


def wait_for_line(stream, text: str) -> list[str]:
    """Read `stream` until a line containing `text`; returns the lines read."""
    lines = []
    for line in stream:
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"the process ended without printing {text!r}:\n{''.join(lines)}")
