"""Settings declared once: every config key's type, range and choices is a field of a pydantic
model (`Settings`), and `check` validates a group against it. A failure becomes the one line
users know, generated from the same declaration: the key, the value as typed, the valid
choices or bounds ("train.epochs=0 must be an integer >= 1"), a "did you mean" for an unknown
key. Rules that involve several keys live beside the fields as model validators that raise
`ConfigError` with their own line.

The run's groups are declared in `groups.py`; a model's options beside its class
(`GNN.Options`), a dataset's beside its loader (`Options` in its module)."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import annotated_types as at
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, ValidationError

from gnnbench.config.errors import (
    ConfigError,
    choice,
    file_name,
    integer,
    number,
    suggest,
)

S = TypeVar("S", bound=BaseModel)


class Settings(BaseModel):
    """A config group's declaration. Strict: `1` is not `true`, `"5"` is not `5` (the
    command line already gives typed values); an unknown key is an error, not ignored."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


@dataclass(frozen=True)
class Message:
    """Marks a field whose error line a helper writes: `line(key, value)` raises the
    `ConfigError` (a file name, a device), where bounds and choices alone cannot say it."""

    line: Callable[[str, object], None]


def _device_line(key: str, value: object) -> None:
    raise ConfigError(f"{key}={value!r} is not valid; choose one of: auto, cpu, cuda, cuda:N")


def _not_dotted(value: str) -> str:
    if ".." in value:
        raise ValueError("'..' in a file name")
    return value


# Values that become file and folder names: a run's folder, a dataset's cache file.
FileName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+=,-]*$"),
                     AfterValidator(_not_dotted), Message(file_name)]
Flag = Annotated[bool, Strict()]
Device = Annotated[str, Field(pattern=r"^(auto|cpu|cuda(:[0-9]+)?)$"), Message(_device_line)]
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


def Count(minimum: int) -> Any:  # noqa: N802 - a type, used like one
    """An integer of at least `minimum` (true is not 1)."""
    return Annotated[int, Strict(), Field(ge=minimum)]


def Real(*, above: float | None = None, at_least: float | None = None,  # noqa: N802
         below: float | None = None, at_most: float | None = None) -> Any:
    """A real number within bounds (an integer is a real number; true is not)."""
    return Annotated[float, Field(gt=above, ge=at_least, lt=below, le=at_most)]


def check(declaration: type[S], values: Mapping, prefix: str = "") -> S:
    """`values` checked against `declaration`: the settings, or a `ConfigError` for the first
    bad key (in the order the keys are declared), named `<prefix>.<key>`."""
    try:
        return declaration.model_validate(dict(values))
    except ValidationError as exc:
        raise ConfigError(explain(declaration, exc, prefix)) from None


def explain(declaration: type[BaseModel], exc: ValidationError, prefix: str = "") -> str:
    """The one line for the first error pydantic found."""
    error = exc.errors(include_url=False)[0]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, ConfigError):  # a rule that wrote its own line
        return str(cause)
    loc = [str(part) for part in error["loc"]]
    key = ".".join([prefix, *loc] if prefix else loc)
    value = error.get("input")
    owner, field = _field_at(declaration, error["loc"])
    if error["type"] == "extra_forbidden":
        known = sorted(owner.model_fields) if owner is not None else []
        hint = suggest(loc[-1], known)
        parent = key.rpartition(".")[0]
        return (f"{key} is not a setting gnnbench reads"
                f"{hint.replace(' mean ', f' mean {parent}.') if parent else hint}")
    if error["type"] == "missing":
        return f"{key} is missing: the config must set it"
    if field is not None:
        try:
            _line(key, value, field.annotation, field.metadata)
        except ConfigError as line:
            return str(line)
    return f"{key}={value!r} is not valid ({error['msg']})"


def _field_at(declaration: type[BaseModel], loc: tuple) -> tuple[type[BaseModel] | None, Any]:
    """The model that declares the last key of `loc`, and that key's field (None: a list
    item, a key of an open mapping)."""
    owner: type[BaseModel] | None = declaration
    field = None
    for part in loc:
        if owner is None or not isinstance(part, str) or part not in owner.model_fields:
            return owner, None
        field = owner.model_fields[part]
        inner = field.annotation
        owner = inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None
    return owner, field


def _line(key: str, value: object, annotation: Any, metadata: list) -> None:
    """Raise the line for `value` from the declared type and bounds (helpers in errors.py)."""
    if typing.get_origin(annotation) is Annotated:  # Optional[Annotated[...]]
        annotation, *extra = typing.get_args(annotation)
        metadata = [*metadata, *extra]
    for mark in metadata:
        if isinstance(mark, Message):
            mark.line(key, value)
    args = typing.get_args(annotation)
    optional = type(None) in args and typing.get_origin(annotation) in (typing.Union,
                                                                         types.UnionType)
    if optional:
        if value is None:
            return
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            bare = typing.get_args(inner[0])[0] if typing.get_origin(inner[0]) is Annotated \
                else inner[0]
            if bare is bool:
                choice(key, value, (True, False, None))
            _line(key, value, inner[0], metadata)
            return
    if typing.get_origin(annotation) is Literal:
        choice(key, value, args)
    if annotation is bool:
        choice(key, value, (False, True))
    bounds = {type(m).__name__: getattr(m, type(m).__name__.lower()) for m in _bounds(metadata)}
    if annotation is int:
        integer(key, value, bounds.get("Ge", 0))
    if annotation is float:
        number(key, value, above=bounds.get("Gt"), at_least=bounds.get("Ge"),
               below=bounds.get("Lt"), at_most=bounds.get("Le"))
    patterns = [getattr(m, "pattern", None) for m in metadata if getattr(m, "pattern", None)]
    if annotation is str and (not isinstance(value, str) or any(
            not re.fullmatch(p, value) for p in patterns)):
        raise ConfigError(f"{key}={value!r} is not valid: it must be a string"
                          + (f" matching {patterns[0]}" if patterns else ""))


def _bounds(metadata: list) -> list:
    found = []
    for mark in metadata:
        if isinstance(mark, (at.Gt, at.Ge, at.Lt, at.Le)):
            found.append(mark)
        for inner in getattr(mark, "metadata", []) or []:  # FieldInfo inside Annotated
            if isinstance(inner, (at.Gt, at.Ge, at.Lt, at.Le)):
                found.append(inner)
    return found
