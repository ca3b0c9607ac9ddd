"""Bad input from the user, as one line that names the value and the valid choices."""

from __future__ import annotations

from collections.abc import Iterable


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
