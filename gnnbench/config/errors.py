"""Bad input from the user, as one line that names the value and the valid choices."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

# Values that become file and folder names (a run's folder, a dataset's cache file).
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=,-]*")


class ConfigError(ValueError):
    """Bad input from the user: the message is one line naming the value and the choices."""


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def show(value: object) -> str:
    """Values as they are typed on the command line (true, not True)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return str(value)


def choice(name: str, value: object, choices: Iterable[object]) -> None:
    """`value in choices` alone would accept 1 for True: types are compared too."""
    choices = list(choices)
    ok = any(value == c and type(value) is type(c) for c in choices)
    require(ok, f"{name}={value!r} is not valid; choose one of: "
                f"{', '.join(show(c) for c in choices)}")


def integer(name: str, value: object, minimum: int) -> None:
    """An integer of at least `minimum`: the type is checked before the range, so `abc` is
    called what it is (and true, which Python counts as 1, is not an integer here)."""
    require(isinstance(value, int) and not isinstance(value, bool),
            f"{name}={value!r} is not an integer; it must be an integer >= {minimum}")
    require(value >= minimum, f"{name}={value!r} must be an integer >= {minimum}")


def number(name: str, value: object, *, above: float | None = None,
           at_least: float | None = None, below: float | None = None,
           at_most: float | None = None) -> None:
    """A real number within bounds, type first: `train.lr=abc` is not a number."""
    bounds = " and ".join(b for b in (
        f"> {above:g}" if above is not None else "",
        f">= {at_least:g}" if at_least is not None else "",
        f"< {below:g}" if below is not None else "",
        f"<= {at_most:g}" if at_most is not None else "") if b)
    require(isinstance(value, (int, float)) and not isinstance(value, bool),
            f"{name}={value!r} is not a number; it must be a number {bounds}".rstrip())
    ok = ((above is None or value > above) and (at_least is None or value >= at_least)
          and (below is None or value < below) and (at_most is None or value <= at_most))
    require(ok, f"{name}={value!r} must be {bounds}")


def suggest(wrong: str, choices: Iterable[str]) -> str:
    """"; did you mean X?" for the closest choice (or one differing only in case), else ""."""
    choices = list(choices)
    close = difflib.get_close_matches(wrong, choices, n=1, cutoff=0.6)
    if not close and wrong.lower() in {c.lower() for c in choices}:
        close = [c for c in choices if c.lower() == wrong.lower()]
    return f"; did you mean {close[0]}?" if close else ""


def file_name(name: str, value: object) -> None:
    """A value that becomes part of a path stays one plain name inside its folder: no '/',
    no '..', nothing hidden (`model.name=../../tmp/x` would write outside outputs/)."""
    require(isinstance(value, str) and _FILE_NAME.fullmatch(value) is not None
            and ".." not in value,
            f"{name}={value!r} becomes a file name: use letters, digits and . _ + = , - "
            "(no '/', no '..', not starting with '.')")


def first_line(exc: BaseException, *, typed: bool = False, limit: int = 160) -> str:
    """An exception as one line for a message: its first non-blank line (cut at `limit`),
    else its type's name; `typed`: prefixed with the type's name ("OSError: ...")."""
    line = next((x.strip() for x in str(exc).splitlines() if x.strip()), "")[:limit]
    if not line:
        return type(exc).__name__
    return f"{type(exc).__name__}: {line}" if typed else line
