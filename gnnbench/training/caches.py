"""The compile caches a compiled run starts with (`compiler.cache`), set up for real: the
directory Inductor keeps its FX-graph, AOTAutograd and kernel caches in
(TORCHINDUCTOR_CACHE_DIR, Triton's under it), the in-process caches that would otherwise
answer before the disk is asked, and PyTorch's portable mega-cache
(`torch.compiler.save_cache_artifacts` / `load_cache_artifacts`).

What a compile costs depends on these more than on anything else a user controls: without
this, whether a run's compile was cold or warm was an accident of what ran before it.
Together with compilation.py and measure/dynamo.py, the only code that touches
torch._inductor."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

# The environment variables that say where the caches live; set for a run, restored after.
_DIRS = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
ARTIFACTS_FILE = "cache-artifacts.bin"


def clear_in_process() -> None:
    """Forget what this process compiled and loaded (dynamo's code cache, Inductor's loaded
    modules and memoised lookups), so the next compile asks the cache directory."""
    import torch._dynamo
    from torch._inductor.utils import clear_caches

    torch._dynamo.reset()
    clear_caches()


@contextmanager
def cache_dir(path: Path) -> Iterator[Path]:
    """Inductor's (and Triton's) caches in `path` while the block runs, in-process caches
    cleared on the way in and out; the variables are restored after, so the next run of a
    sweep run in this process finds the process as it was."""
    saved = {name: os.environ.get(name) for name in _DIRS}
    path.mkdir(parents=True, exist_ok=True)
    clear_in_process()
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(path)
    os.environ["TRITON_CACHE_DIR"] = str(path / "triton")
    try:
        yield path
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        clear_in_process()


@contextmanager
def fresh_dir(prefix: str) -> Iterator[Path]:
    """An empty temporary directory, removed after (a cold cache may hold hundreds of MB)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def save_artifacts(path: Path) -> dict:
    """Everything this process compiled, as torch.compiler's portable artifacts, to `path`:
    their size and how many entries of each cache they hold."""
    saved = torch.compiler.save_cache_artifacts()
    if saved is None:
        return {"bytes": 0, "entries": {}}
    blob, info = saved
    path.write_bytes(blob)
    return {"bytes": len(blob), "entries": _entries(info)}


def load_artifacts(path: Path) -> dict:
    """Portable artifacts into the current cache directory (call inside `cache_dir`): their
    size and the entries each cache received."""
    blob = path.read_bytes()
    info = torch.compiler.load_cache_artifacts(blob)
    return {"bytes": len(blob), "entries": _entries(info) if info is not None else {}}


def _entries(info: object) -> dict[str, int]:
    artifacts = getattr(info, "artifacts", {}) or {}
    return {str(kind): len(keys) for kind, keys in artifacts.items() if keys}


def copy_tree(source: Path, target: Path) -> None:
    """A primed cache directory copied for one run, so the primed one stays as priming left
    it (a warm run may add to its cache)."""
    shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)
