"""The dataset cache (`data_dir`) as several processes share it: one process at a time
prepares a dataset (a file lock), every file appears whole or not at all (unique temporary
names, then a rename), and what a later run finds is checked before it is trusted."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from gnnbench.config import ConfigError, files, first_line

LOCK_TIMEOUT_S = 1800.0  # another process generating products-size data takes minutes


@contextlib.contextmanager
def quiet(what: str) -> Iterator[None]:
    """Library chatter ("Processing...", "Done!") goes to the run's log file, not the
    console: Hydra's job logging writes the `gnnbench.data` logger there."""
    import io
    import logging

    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            yield
    finally:
        log = logging.getLogger("gnnbench.data")
        for line in buffer.getvalue().splitlines():
            if line.strip():
                log.info("%s: %s", what, line.strip())


def warn(message: str) -> None:
    print(f"gnnbench: warning: {message}", file=sys.stderr, flush=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_blob_sha1(path: Path) -> str:
    """The id git gives a file's content: how a file is checked when only its repository
    id is published."""
    data = Path(path).read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _safe_globals() -> list:
    """PyG's Data and the storage classes it pickles with: data, never code."""
    from torch_geometric.data import Data
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    return [Data, DataEdgeAttr, DataTensorAttr, GlobalStorage]


def load_weights_only(path: Path, *, mmap: bool = False) -> object:
    """torch.load(weights_only=True) with PyG's Data classes allowed for this load only.
    (torch's `safe_globals` context would, on leaving, also drop what PyG itself allowed.)"""
    import torch

    serialization = torch.serialization
    before = serialization.get_safe_globals()
    serialization.add_safe_globals(_safe_globals())
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    finally:
        serialization.clear_safe_globals()
        serialization.add_safe_globals(before)


def drop_unsafe_processed(root: Path) -> None:
    """PyG loads a processed file with weights_only=True and, when that fails, loads it again
    unrestricted: a crafted `processed/*.pt` would run its code. Each one under `root` is
    first opened as plain data (memory-mapped: no tensor is read); a `processed` folder
    with any that is not is deleted, so the dataset is made again from its raw files."""
    for processed in sorted({p.parent for p in root.rglob("processed/*.pt")}):
        for f in sorted(processed.glob("*.pt")):
            try:
                load_weights_only(f, mmap=True)
            except Exception as exc:  # anything but plain tensors and PyG's data classes
                warn(f"{f} is not plain data ({first_line(exc)}); it is not loaded: "
                     "processing again from the raw files")
                shutil.rmtree(processed, ignore_errors=True)
                break


def full(data_dir: Path) -> ConfigError | None:
    """The error to give when `data_dir` has no room left (a library's write failed with
    some message of its own), else None."""
    if shutil.disk_usage(data_dir).free >= files.FULL_BELOW:
        return None
    return not_writable(data_dir, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))


def not_writable(data_dir: Path, exc: OSError) -> ConfigError:
    return ConfigError(f"data_dir={str(data_dir)!r} is not writable ({exc.strerror or exc}); "
                       "point data_dir at a writable folder")


@contextlib.contextmanager
def locked(data_dir: Path, name: str) -> Iterator[None]:
    """Hold `<data_dir>/.<name>.lock` while a dataset is copied, generated or processed.
    The lock is the kernel's (flock): it is released if its holder dies. A read-only cache
    (a shared, finished one) is used without a lock: nothing will be written to it, and a
    write it turns out to need fails with a clear error."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(data_dir / f".{name}.lock"), timeout=LOCK_TIMEOUT_S)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout as exc:
        raise ConfigError(f"another process has held {data_dir}/.{name}.lock for "
                          f"{LOCK_TIMEOUT_S:.0f} s; is a run stuck preparing {name}?") from exc
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EROFS, errno.EPERM) or not data_dir.is_dir():
            raise not_writable(data_dir, exc) from exc
        yield
        return
    try:
        yield
    finally:
        lock.release()


def atomic_copy(src: Path, dst: Path) -> None:
    """Copy `src` to `dst` so that `dst` is never seen half-written; copyfile, not copy, so a
    read-only source's permission bits are not carried over."""
    files.atomic_write(dst, lambda tmp: shutil.copyfile(src, tmp))
