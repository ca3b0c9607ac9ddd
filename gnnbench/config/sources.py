"""What a model or dataset that is not gnnbench's own is called, and what identifies it: a
class named by `_target_` (a user's model, PyG's stock models and datasets) and a graph
saved to a file, identified by its content, not by where it lies."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

OWN = "gnnbench."
# (resolved path, size, mtime in ns) -> SHA-256: a config is resolved several times a run.
_HASHES: dict[tuple[str, int, int], str] = {}


_NATIVE: dict[str, bool] = {}


def is_foreign(target: object) -> bool:
    """Whether a `_target_` names code outside gnnbench (a user's class, PyG's): such a
    target is what is measured, not just the code that reads a group. A subclass of
    gnnbench's own model base that lives elsewhere (`gnnbench_native`) is gnnbench's kind
    of model, built and read as one."""
    if isinstance(target, str) and target.startswith(OWN):
        return False
    if not isinstance(target, str):
        return True
    if target.startswith("torch_geometric."):  # PyG's own classes: no need to import PyG
        return True  # (seconds) to know they are not subclasses of gnnbench's model base
    if target not in _NATIVE:
        try:
            from hydra.utils import get_class

            _NATIVE[target] = bool(getattr(get_class(target), "gnnbench_native", False))
        except Exception:  # not importable here (a record read elsewhere): the user's code
            _NATIVE[target] = False
    return not _NATIVE[target]


def target_name(target: object, default: str = "custom") -> str:
    """The last part of a dotted `_target_` (mymodel.Net -> Net): how runs, folders and
    report rows of a user's class are named."""
    if not isinstance(target, str) or not target.strip():
        return default
    return target.strip().rsplit(".", 1)[-1]


def pyg_dataset_name(target: object, args: object = None) -> str:
    """planetoid-cora for torch_geometric.datasets.Planetoid with name=Cora."""
    name = target_name(target, "pyg").lower()
    sub = args.get("name") if hasattr(args, "get") else None
    return f"{name}-{str(sub).lower()}" if sub else name


def file_name(path: object) -> str:
    """A saved graph's run name: its file name without the suffix."""
    return Path(str(path)).stem if path else "file"


def file_sha256(path: object) -> str | None:
    """The SHA-256 of a file's content (None where there is no readable file: the loader
    then says what is wrong). A relative path is relative to the working directory, the
    directory a run is launched from."""
    if not path:
        return None
    resolved = Path(os.path.expanduser(str(path))).resolve()
    try:
        stat = resolved.stat()
        key = (str(resolved), stat.st_size, stat.st_mtime_ns)
        if key not in _HASHES:
            digest = hashlib.sha256()
            with open(resolved, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            _HASHES[key] = digest.hexdigest()
        return _HASHES[key]
    except OSError:
        return None
