"""Helpers shared by tests (not fixtures)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def make_read_only(root: Path) -> None:
    """Remove every write bit, as on a shared read-only mount. This stops other users, not
    root (the tests run as root): see `read_only`."""
    for path in sorted(root.rglob("*"), reverse=True) + [root]:
        path.chmod(0o555 if path.is_dir() else 0o444)


def _contents(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@contextmanager
def read_only(root: Path) -> Iterator[Path]:
    """`root` read-only for every user, root included: a read-only bind mount of it over
    itself (a write is EROFS), on top of the write bits removed. Where mounting is not
    allowed, root could still write: on leaving, the contents are checked unchanged, so a
    write into the mirror fails the test either way."""
    make_read_only(root)
    before = _contents(root)
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "--bind", "-o", "ro", str(root), str(root)], capture_output=True).returncode == 0
    try:
        yield root
    finally:
        if mounted:
            subprocess.run(["umount", str(root)], check=True)
        assert _contents(root) == before, f"something wrote into the read-only {root}"
