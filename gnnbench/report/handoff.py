"""How a sweep's outcome reaches the command line that launched it. Hydra instantiates the
sweep callbacks itself, from config, so nothing but a setting can be handed to them: the
command line owns a hand-off file and passes its path as `hydra.callbacks.report.handoff`.
The report callback writes there the sweep's folder when the sweep starts (a launcher that
fails, or a second Ctrl-C, still gets a report and the resume hint) and, when it ends, which
jobs failed or left no record, from the records on disk (a launcher may have run the jobs
in other processes). The command line reads it to choose its exit status."""

from __future__ import annotations

import json
import os
import secrets
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gnnbench.config import files

SETTING = "hydra.callbacks.report.handoff"


@dataclass
class SweepOutcome:
    dir: str
    running: bool = True
    failed: list[str] = field(default_factory=list)   # jobs whose records are not ok
    missing: list[str] = field(default_factory=list)  # planned jobs that left no record


def new_path() -> Path:
    """A name of this process's own in the temporary folder; created by the first write."""
    return Path(tempfile.gettempdir()) / f"gnnbench-sweep-{os.getpid()}-{secrets.token_hex(4)}.json"


def write(path: str | None, outcome: SweepOutcome) -> None:
    """Atomically; a hand-off that cannot be written is one warning (the sweep goes on)."""
    if not path:
        return
    try:
        files.atomic_write(Path(path), json.dumps(asdict(outcome)))
    except OSError as exc:
        print(f"gnnbench: warning: cannot write {path} ({exc.strerror or exc}): the command "
              "line will not know how the sweep ended", file=sys.stderr, flush=True)


def read(path: Path) -> SweepOutcome | None:
    """None when no sweep ran (or its hand-off could not be written)."""
    try:
        return SweepOutcome(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
