"""Where results go: the per-run `results.json` (the source of truth)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

RESULTS_FILE = "results.json"


def _finite(value: object) -> object:
    """JSON has no NaN or Infinity: write them as null rather than as invalid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def write_results(result: dict, out_dir: Path) -> Path:
    """Atomic write: a reader never sees half a file, even if the run is killed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RESULTS_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(_finite(result), indent=2, allow_nan=False) + "\n")
    os.replace(tmp, path)
    return path


def read_results(path: Path) -> dict:
    path = Path(path)
    return json.loads((path / RESULTS_FILE if path.is_dir() else path).read_text())
