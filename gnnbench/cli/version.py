"""`gnnbench --version`: the versions a bug report or a comparison of two hosts needs, not
Hydra's (which `--version` would print otherwise)."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path


def gnnbench_version() -> str:
    """The installed distribution's version; from a checkout that is not installed (run with
    PYTHONPATH), the version its pyproject.toml declares."""
    try:
        return metadata.version("gnnbench")
    except metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
    except OSError:
        found = None
    return f"{found.group(1)} (not installed)" if found else "unknown (not installed)"


def _version_of(module: str) -> str:
    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> str:
    """One line each: gnnbench, torch, torch_geometric, and the CUDA torch was built with
    ("none" for a CPU build)."""
    import torch

    return (f"gnnbench {gnnbench_version()}\n"
            f"torch {torch.__version__}\n"
            f"torch_geometric {_version_of('torch_geometric')}\n"
            f"CUDA {torch.version.cuda or 'none'}\n")
