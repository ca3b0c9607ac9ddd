"""A command that cannot even be composed (an unknown group option, a misspelt key) still
leaves a record, like every other failed run: where Hydra would have put the run (or the
sweep), a results.json with status `error`, the reason and the command."""

from __future__ import annotations

import os
import time
from pathlib import Path

from gnnbench.measure.environment import environment
from gnnbench.records import store
from gnnbench.records.model import CommandRecord


def folder_for(argv: list[str]) -> Path:
    sweeping = "-m" in argv or "--multirun" in argv
    key = "hydra.sweep.dir=" if sweeping else "hydra.run.dir="
    given = [a.split("=", 1)[1] for a in argv if a.startswith(key)]
    if given:  # a run's record already there stays: this one goes beside it
        return store.beside(Path(given[-1]), "invalid-command")
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    return Path("outputs") / "runs" / f"{stamp}_invalid-command_{os.getpid()}"


def record_invalid_command(argv: list[str], reason: str) -> Path | None:
    """Write the record; None when no folder can be made there (the error line still says
    what is wrong)."""
    record = CommandRecord(name="invalid-command", reason=reason, command=argv,
                           env=environment(None))
    try:
        return store.write(record, folder_for(argv))
    except store.WriteError:
        return None
