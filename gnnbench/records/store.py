"""Records on disk: one `results.json` per run folder, written atomically, found by walking
folders, and searched by setting identity (how a compiled run finds its eager reference,
and how a sweep knows an eager job would repeat one, without any process memory)."""

from __future__ import annotations

import gc
import json
import math
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from gnnbench.config import files
from gnnbench.records import identity
from gnnbench.records.model import (
    CommandRecord,
    Record,
    RecordProblem,
    finished_problem,
    parse_text,
)

RESULTS_FILE = "results.json"
CLAIMS_DIR = ".gnnbench-claims"


class WriteError(OSError):
    """A record could not be written (a full disk, an unwritable folder): the message names
    the file and the cause in one line."""


def is_final(record: Record) -> bool:
    """Whether re-running the job would only repeat this outcome: ok, skipped, and failures
    that the setting itself causes. Interrupted runs, out-of-memory (another process may have
    held the memory), unexpected errors (they carry a traceback) and bad input (fixed
    since, maybe; said again at once if not) are run again."""
    if record.status in ("ok", "skipped", "graph_break", "compile_error", "diverged"):
        return True
    return record.status == "error" and record.traceback is None and not record.input_error


def _finite(value: object) -> object:
    """JSON has no NaN or Infinity: write them as null rather than as invalid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def write(record: Record | CommandRecord, out_dir: Path, name: str = RESULTS_FILE) -> Path:
    """Atomic write: a reader never sees half a file, even if the run is killed. The
    temporary file has a unique name, so concurrent writers never share it, and it never
    outlives a failed write (a full disk leaves the previous record, or none). `name`: a
    file other than the run's record (a DDP rank's, for the process that started it).
    What is written is validated as it is read (pydantic's ValidationError: a bug in
    gnnbench, raised here rather than met by every later reader)."""
    path = out_dir / name
    plain = _finite(record.dump())
    again = type(record).model_validate(json.loads(json.dumps(plain, allow_nan=False)))
    if name == RESULTS_FILE and isinstance(again, Record) and finished_problem(again):
        raise ValueError(f"not a finished run's record: {finished_problem(again)}")
    text = json.dumps(plain, indent=2, allow_nan=False) + "\n"
    try:
        files.atomic_write(path, text)
    except OSError as exc:
        error = WriteError(f"cannot write {path} ({exc.strerror or exc})")
        error.errno = exc.errno
        raise error from exc
    return path


def beside(folder: Path, why: str) -> Path:
    """Where a record goes when `folder` already holds one that must not be overwritten (a
    mistyped command aimed at a finished run): a new folder next to it."""
    import os
    import time

    path = folder / RESULTS_FILE
    if not path.exists():
        return folder
    try:  # the same kind of record (a resumed sweep's job with the same bad value): replaced
        if json.loads(path.read_text()).get("input_error") is True:
            return folder
    except (OSError, ValueError, AttributeError):
        pass  # unreadable or odd: kept, as any record
    return folder.parent / f"{folder.name}_{why}_{time.strftime('%Y-%m-%d_%H-%M-%S')}_{os.getpid()}"


class InvalidRecord(ValueError):
    """A record no reader can use: unreadable, not JSON, or not of a record's shape
    (records.model). `path` and `problem` make the one-line warning of whoever skips it."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = path, problem


def _text(path: Path) -> str:
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise InvalidRecord(path, "not UTF-8 text") from None
    except OSError as exc:
        raise InvalidRecord(path, f"cannot be read: {exc.strerror or exc}") from None
    if not text.strip():
        raise InvalidRecord(path, "an empty file")
    return text


def read(path: Path) -> Record:
    """One record, as today's schema reads it; `path` and `folder` say where it came from.
    Raises InvalidRecord for a file that no reader could use, checked here so that no
    reader meets one."""
    path = Path(path)
    path = path / RESULTS_FILE if path.is_dir() else path
    try:
        record = parse_text(_text(path))
    except RecordProblem as exc:
        raise InvalidRecord(path, str(exc)) from None
    record.path, record.folder = str(path), str(path.parent)
    return record


def warn_skipped(exc: InvalidRecord) -> None:
    """The one line said for every record skipped, wherever records are read."""
    problem = " ".join(exc.problem.split())  # one line, whatever the problem's text holds
    print(f"gnnbench: warning: skipping invalid record {exc.path} ({problem})",
          file=sys.stderr, flush=True)


def find(folders: Iterable[Path], warn: bool = True) -> list[Record]:
    """Every usable record under `folders` (each file once), in path order. A file that
    cannot be used is skipped with a warning naming it: one bad file never hides the rest.
    `warn=False`: a caller that has just warned about these files (the same folders)."""
    # Under a folder's real path every file found is real too (symlinked folders are not
    # walked), bar a record that is itself a link: each file once, however it was reached.
    found = files.find_named([Path(f).resolve() for f in folders if Path(f).is_dir()],
                             [RESULTS_FILE])
    paths = sorted({p.resolve() if p.is_symlink() else p for p in found[RESULTS_FILE]})
    records = []
    # Reading thousands of records makes millions of objects and no reference cycle: the
    # cyclic collector, left on, walked them over and over (more than half the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        for path in paths:
            try:
                records.append(read(path))
            except InvalidRecord as exc:
                if warn:
                    warn_skipped(exc)
    finally:
        if collecting:
            gc.enable()
    return records


def eager_references(folders: Iterable[Path], record: Record) -> list[Record]:
    """Finished eager runs of the same setting and seed as `record`, newest last."""
    key = identity.record_run_key(record)
    found = [r for r in find(folders)
             if r.status == "ok" and r.config.compile is False
             and identity.record_run_key(r) == key]
    return sorted(found, key=lambda r: os.stat(r.path).st_mtime)


def scaling_references(folders: Iterable[Path], record: Record) -> list[Record]:
    """Finished one-GPU runs of the same setting, variant and seed as the DDP `record`, newest
    last: DDP runs of world_size 1 if there are any (the same code on one rank), else plain
    one-process runs."""
    key = identity.record_scaling_key(record)
    seed, variant = record.config.train.seed, identity.record_variant(record)
    found = [r for r in find(folders)
             if r.status == "ok" and identity.record_world_size(r) == 1
             and r.config.train.seed == seed and identity.record_variant(r) == variant
             and identity.record_scaling_key(r) == key]
    found.sort(key=lambda r: (identity.record_distributed(r), os.stat(r.path).st_mtime))
    return found


def claim(sweep_dir: Path, key: str, out_dir: Path) -> str | None:
    """Claim the eager run `key` for `out_dir` within a sweep. Returns None when the claim is
    ours (new, or made by this very folder before: a re-run), else the folder holding it.
    An exclusive create, so two jobs starting at once on any launcher cannot both win."""
    claims = Path(sweep_dir) / CLAIMS_DIR
    path = claims / key
    # Written under a unique name, then linked into place: the link fails if the claim
    # exists, and a reader never sees a claim without its holder.
    # Real paths: a sweep resumed through another path to it (a symlink resolved) is still
    # the same folder, never a holder of its own.
    mine = os.path.realpath(out_dir)
    tmp = None
    try:
        claims.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=claims, prefix=".claim.")
        with os.fdopen(fd, "w") as f:
            f.write(mine)
        files.user_mode(tmp)
        os.link(tmp, path)
        return None
    except FileExistsError:
        holder = path.read_text().strip()
        return None if os.path.realpath(holder) == mine else holder
    except OSError as exc:  # a full disk: the job cannot record anything either
        error = WriteError(f"cannot write {path} ({exc.strerror or exc})")
        error.errno = exc.errno
        raise error from exc
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def claim_holder(folders: Iterable[Path], key: str) -> str | None:
    """The job folder that claimed the eager run `key` in one of `folders` (sweeps), if any:
    under a launcher that runs jobs at once, a compiled job can end before its eager job."""
    for folder in folders:
        path = Path(folder) / CLAIMS_DIR / key
        if path.is_file():
            return path.read_text().strip()
    return None
