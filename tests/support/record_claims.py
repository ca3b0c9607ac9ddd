"""Test-only: whether a committed record still claims what its command composes today,
and whether every key added since is declared in `ADDED_KEYS` with the default that keeps
what the record measured (README: how records evolve)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gnnbench.records.schema import ADDED_KEYS, REMOVED_KEYS
from gnnbench.records.schema import _get as get


def leaves(tree: Mapping, prefix: str = "") -> Iterator[tuple[str, object]]:
    """(dotted key, value) of every leaf; lists are leaves."""
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from leaves(value, f"{dotted}.")
        else:
            yield dotted, value


def claim_mismatches(recorded: Mapping, composed: Mapping,
                     ignore: tuple[str, ...] = ()) -> list[str]:
    """Where a record's config claims something that `composed` (what its command composes
    today) does not: every key the record has must compose to the same value. Keys the
    record lacks were added later and are checked by `unregistered_additions`."""
    out = []
    for key, value in leaves(recorded):
        if key.split(".")[0] in ignore or key in REMOVED_KEYS:  # declared gone: may claim it
            continue
        present, today = get(composed, key)
        if not present:
            out.append(f"{key}: recorded {value!r}, no longer composed")
        elif today != value:
            out.append(f"{key}: recorded {value!r}, composes {today!r} today")
    return out


def unregistered_additions(recorded: Mapping, composed: Mapping, measured: set[str],
                           ignore: tuple[str, ...] = ()) -> list[str]:
    """Measured keys composed today that the record lacks and that `ADDED_KEYS` does not
    declare with the value they compose to (so an old record would be read wrongly)."""
    out = []
    for key, value in leaves(composed):
        if key.split(".")[0] in ignore or get(recorded, key)[0] or key not in measured:
            continue
        declared = ADDED_KEYS.get(key)
        if declared is None:
            out.append(f"{key}: added without an ADDED_KEYS entry")
        elif declared[1] != value:
            out.append(f"{key}: composes {value!r}, but ADDED_KEYS says old records mean "
                       f"{declared[1]!r}")
    return out
