"""Test-only: the command line in real subprocesses, as an operator runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def clean_env(cwd: Path, **extra: str) -> dict:
    """No inherited mirror, no W&B credentials; W&B's own files under `cwd`; and no pytest
    variables (PyG, for one, prints differently when it sees them): as a user's shell."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WANDB_", "GNNBENCH_", "PYTEST_"))}
    home = str(cwd / "wandb-home")
    env.update(WANDB_DIR=home, WANDB_CONFIG_DIR=home, WANDB_CACHE_DIR=home,
               WANDB_DATA_DIR=home, NETRC=str(cwd / "no-netrc"), PYTHONUNBUFFERED="1")
    if "GNNBENCH_LEASE_DIR" in os.environ:  # this test worker's own leases (conftest)
        env["GNNBENCH_LEASE_DIR"] = os.environ["GNNBENCH_LEASE_DIR"]
    env.update(extra)
    return env


def start(args: list[str], cwd: Path, env: dict | None = None,
          module: str = "gnnbench", **popen: object) -> subprocess.Popen:
    """`env`: variables on top of the clean environment; `module`: what `python -m` runs
    (torch.distributed.run, for torchrun)."""
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd,
                            env=clean_env(cwd, **(env or {})), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def run(args: list[str], cwd: Path, timeout: int = 600, env: dict | None = None,
        module: str = "gnnbench") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd,
                          env=clean_env(cwd, **(env or {})), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def wait_for_line(stream, text: str) -> list[str]:
    """Read `stream` until a line containing `text`; returns the lines read."""
    lines = []
    for line in stream:
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"the process ended without printing {text!r}:\n{''.join(lines)}")


def run_without_override(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """The command line as root without the capabilities that let root ignore file
    permissions (a read-only folder is then read-only, as for any user); skips the test
    where they cannot be dropped: run as root, such a test would prove nothing."""
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv(1) to drop root's file-permission override")
    proc = subprocess.run(
        ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner",
         sys.executable, "-m", "gnnbench", *args],
        cwd=cwd, env=clean_env(cwd), capture_output=True, text=True, timeout=300)
    if proc.stderr.startswith("setpriv:"):
        pytest.skip(f"cannot drop capabilities here: {proc.stderr.strip()}")
    return proc
