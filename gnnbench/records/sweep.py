"""Which jobs a sweep was asked to run, and which of them left a record, so a report can say
that a sweep is incomplete instead of "2/2 ok" when 3 of 5 jobs never finished.

The jobs come from the `multirun.yaml` Hydra writes into a sweep folder when it starts: its
sweeper's params and the command line's overrides, crossed as Hydra's basic sweeper crosses
them. A job counts as done when some job folder under the report's folders ran with (at
least) its overrides, so a job re-run into another folder still counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import yaml

from gnnbench.config import files
from gnnbench.records.identity import NOT_MEASURED
from gnnbench.records.model import Record

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
MULTIRUN, OVERRIDES = "multirun.yaml", "overrides.yaml"


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _measured(overrides: list[str]) -> frozenset[str]:
    return frozenset(o for o in overrides if _key(o).split(".")[0] not in NOT_MEASURED)


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# A line of an overrides.yaml as Hydra writes it for a plain override (`- model=gcn`): read
# without a YAML parser; any other line (quotes, brackets, comments) goes through libyaml.
_PLAIN = re.compile(r"- ([\w.+~/:-]*=[\w.=+~/:-]*|~[\w.]+)(?<!:)")


def _overrides(text: str) -> list[str]:
    """The overrides listed in an overrides.yaml's text."""
    lines = text.splitlines()
    plain = [_PLAIN.fullmatch(line) for line in lines]
    if lines and all(plain):
        return [m.group(1) for m in plain]
    return yaml.load(text, Loader=_LOADER) or []


def _runs_with(jobs: dict[Path, frozenset[str]]) -> Callable[[frozenset[str]], list[Path]]:
    """`ran(wanted)`: the job folders that ran with at least the overrides `wanted`, found
    through an index of override -> folders (a sweep's jobs each checked against every
    folder made a report over 2,000 records quadratic)."""
    index: dict[str, set[Path]] = {}
    for folder, overrides in jobs.items():
        for override in overrides:
            index.setdefault(override, set()).add(folder)

    def ran(wanted: frozenset[str]) -> list[Path]:
        if not wanted:
            return list(jobs)
        fewest = min((index.get(o, set()) for o in wanted), key=len)
        return [d for d in fewest if wanted <= jobs[d]]

    return ran


def planned_jobs(multirun: Path) -> list[list[str]] | None:
    """Each job's overrides, in Hydra's job order; None for sweepers other than the basic one
    (their jobs are not known in advance)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    hydra_cfg = (yaml.safe_load(multirun.read_text()) or {}).get("hydra", {})
    sweeper = hydra_cfg.get("sweeper") or {}
    if sweeper.get("_target_") != BASIC_SWEEPER:
        return None
    params = [f"{k}={v}" for k, v in (sweeper.get("params") or {}).items()]
    task = list((hydra_cfg.get("overrides") or {}).get("task") or [])
    try:
        overrides = OverridesParser.create().parse_overrides(params + task)
        batches = BasicSweeper.split_arguments(overrides, None)
    except Exception:  # a sweep over glob(), ranges of another kind...: unknown, not wrong
        return None
    return [job for batch in batches for job in batch]


def _job_overrides(paths: list[Path]) -> dict[Path, frozenset[str]]:
    """Each job folder's overrides, from its `.hydra/overrides.yaml` (or, in a job folder
    copied without `.hydra`, its own `overrides.yaml`)."""
    found = {}
    for path in sorted(paths, key=lambda p: p.parent.name != ".hydra"):  # .hydra's first
        job_dir = path.parent.parent if path.parent.name == ".hydra" else path.parent
        if job_dir not in found:  # libyaml's loader where built: thousands of jobs
            found[job_dir] = _measured(_overrides(path.read_text()))
    return found


class Progress(NamedTuple):
    """A sweep folder's jobs: how many were planned, and the ones without a record or
    interrupted (each as "number: overrides")."""

    sweep: str
    planned: int
    missing: list[str]
    interrupted: list[str]


def progress(folders: list[Path], records: list[Record]) -> list[Progress]:
    """One entry per sweep folder under `folders` whose jobs are known."""
    # Records come from store.find, with real paths; the folders are walked from theirs.
    by_dir = {Path(r.folder): r for r in records}
    out: list[Progress] = []
    found = [files.find_named([Path(f).resolve()], [MULTIRUN, OVERRIDES]) for f in folders]
    if not any(f[MULTIRUN] for f in found):
        return out
    jobs = _job_overrides([p for f in found for p in f[OVERRIDES]])
    runs_with = _runs_with(jobs)
    for in_folder in found:
        for multirun in sorted(in_folder[MULTIRUN]):
            planned = planned_jobs(multirun)
            if planned is None:
                continue
            missing, interrupted = [], []
            for num, overrides in enumerate(planned):
                wanted = _measured(overrides)
                ran = runs_with(wanted)
                done = [by_dir[d] for d in ran if d in by_dir]
                if any(r.status != "interrupted" for r in done):
                    continue
                (interrupted if done else missing).append(f"{num}: {' '.join(overrides)}")
            out.append(Progress(str(multirun.parent), len(planned), missing, interrupted))
    return out
