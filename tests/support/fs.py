"""Helpers shared by tests (not fixtures)."""

from pathlib import Path


def make_read_only(root: Path) -> None:
    """Remove every write bit, as on a shared read-only mount."""
    for path in sorted(root.rglob("*"), reverse=True) + [root]:
        path.chmod(0o555 if path.is_dir() else 0o444)
