"""A sweep fails before any job runs when one of its jobs cannot be composed: Hydra's
sweepers compose every job's config up front for that (`Sweeper.validate_batch_is_legal`),
at 0.1-0.8 s a job on a 2-core machine, so a sweep over 3,000 seeds sat silent for minutes
before its first job.

Jobs that differ only in the value of a gnnbench key, where each value is a literal of the
same type (`train.seed=0` and `train.seed=2999`, `train.lr=0.01` and `train.lr=0.5`),
compose alike: gnnbench's configs are untyped YAML, so a key takes any int as it takes
another. Such jobs share a kind, and one job of each kind is composed; every other
override (a group option, a string, a list, a deletion, any `hydra.` key, whose configs
are typed) keeps its value in the kind, so each of its values is composed as before. The
guarantee is Hydra's: a sweep that would not compose fails before its first job, with
Hydra's error for the job that fails."""

from __future__ import annotations

import re
from collections.abc import Sequence

# Values Hydra's override grammar reads as an int, a float, a bool or null.
_LITERALS = (("int", re.compile(r"[+-]?\d+")),
             ("float", re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?|[+-]?inf|nan",
                                  re.IGNORECASE)),
             ("bool", re.compile(r"true|false", re.IGNORECASE)),
             ("null", re.compile(r"null", re.IGNORECASE)))


def _part(override: str) -> str:
    """What of one override decides how the job composes: the override itself, or for a
    literal value of a dotted gnnbench key (never a group choice: groups are chosen by a
    plain name or a path with '/'), the key and the literal's type."""
    key, eq, value = override.partition("=")
    bare = key.lstrip("+")
    if not eq or "." not in bare or bare.startswith(("~", "hydra.")) or "/" in bare \
            or "@" in bare:
        return override
    for kind, pattern in _LITERALS:
        if pattern.fullmatch(value.strip()):
            return f"{key}=<{kind}>"
    return override


def job_kind(overrides: Sequence[str]) -> tuple[str, ...]:
    """The kind of a job: jobs of one kind compose alike, or fail alike."""
    return tuple(_part(o) for o in overrides)


def distinct_jobs(batch: Sequence[Sequence[str]]) -> list[Sequence[str]]:
    """The first job of each kind in `batch`, in order."""
    first: dict[tuple[str, ...], Sequence[str]] = {}
    for overrides in batch:
        first.setdefault(job_kind(overrides), overrides)
    return list(first.values())


def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
    """Hydra's check, on one job of each kind."""
    loader = (self.hydra_context.config_loader
              if getattr(self, "hydra_context", None) is not None else self.config_loader)
    for overrides in distinct_jobs(batch):
        loader.load_sweep_config(master_config=self.config, sweep_overrides=list(overrides))


def install() -> None:
    """Every sweeper's up-front check (Hydra's basic one, and plugins that call it) composes
    one job of each kind; the launchers still compose each job when it runs."""
    from hydra.plugins.sweeper import Sweeper

    Sweeper.validate_batch_is_legal = validate_batch_is_legal
