"""Every file gnnbench writes appears whole or not at all, with the user's permissions.

One helper for all of them (records, reports, plots, dataset caches, lease marks): a unique
temporary name in the target's folder, then a rename. A reader never sees half a file,
concurrent writers never share a temporary name, and a failed write (a full disk, a kill)
leaves the previous file, or none, and no temporary file. `mkstemp` creates files 0600; the
file is given the mode a plain `open` would (0666 less the umask), so a colleague's report
over a shared sweep can read the records."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

# Less free space than this after a failed write: the disk was full, whatever the writer said.
FULL_BELOW = 1 << 20


def user_mode(path: str | Path) -> None:
    """The mode a plain `open` would have given `path`: 0666 less the umask."""
    os.chmod(path, 0o666 & ~_umask())


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def atomic_write(path: Path, content: str | bytes | Callable[[str], None]) -> Path:
    """Write `content` to `path` atomically: text, bytes, or a function that writes the file
    whose name it is given (torch.save, savefig, copyfile). Errors are the OSError that
    caused them, after the temporary file is gone."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if callable(content):
            os.close(fd)
            try:
                content(tmp)
            except OSError:
                raise
            except Exception as exc:  # torch.save says "enforce fail at inline_container"
                if shutil.disk_usage(path.parent).free >= FULL_BELOW:
                    raise
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from exc
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(content.encode() if isinstance(content, str) else content)
        user_mode(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def find_named(folders: Iterable[Path], names: Iterable[str]) -> dict[str, list[Path]]:
    """Every file under `folders` whose name is one of `names`, by name, in one walk of each
    folder (a report over thousands of job folders walked them once per name with rglob).
    Symlinked folders are not followed, as `Path.rglob` does not follow them."""
    wanted = set(names)
    found: dict[str, list[Path]] = {name: [] for name in wanted}
    for folder in folders:
        for root, _, filenames in os.walk(folder):
            for name in wanted.intersection(filenames):
                found[name].append(Path(root, name))
    return found
