"""Where in the model's own code dynamo broke a graph or recompiled: the file and line of
the user's frame, read from dynamo's messages and exceptions (text and stack frames only;
measure/dynamo.py collects them).

The user's frame is the deepest frame outside the libraries (torch, PyG, Python's own) and
outside gnnbench's training plumbing: for a break inside a PyG layer, the line of the
user's model that called the layer; for gnnbench's own models, gnnbench's model file.
"""

from __future__ import annotations

import functools
import os
import re
import sysconfig
from collections.abc import Iterable
from pathlib import Path

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)'
                    r'(?:\n(?P<code>[^\n]*))?')
_AT = re.compile(r"in user code at (?P<file>.+):(?P<line>\d+)\s*$", re.MULTILINE)
_RECOMPILING = re.compile(r"Recompiling function (?P<function>\S+) in (?P<file>.+):(?P<line>\d+)")
_PACKAGE = Path(__file__).resolve().parents[1]
EXPLANATION_CHARS = 4000


@functools.cache
def _library_roots() -> tuple[str, ...]:
    import torch
    import torch_geometric

    roots = [Path(torch.__file__).parent, Path(torch_geometric.__file__).parent,
             *(_PACKAGE / part for part in ("training", "runner", "measure", "cli")),
             _PACKAGE / "models" / "foreign.py"]
    paths = sysconfig.get_paths()
    roots += [Path(paths[k]) for k in ("stdlib", "platstdlib") if k in paths]
    return tuple(str(r.resolve()) for r in roots)


def is_library(file: str) -> bool:
    """Code the user did not write: torch's, PyG's (also the `propagate` PyG generates from
    its templates into temporary files named torch_geometric.nn.conv...), Python's,
    gnnbench's training plumbing, and code dynamo makes itself (<eval_with_key>...)."""
    if file.startswith("<") or Path(file).name.startswith("torch_geometric."):
        return True
    return str(Path(file).resolve()).startswith(_library_roots())


def frame(file: str, line: int | str, function: str | None = None,
          code: str | None = None) -> dict:
    return {"file": file, "line": int(line), "function": function,
            "code": code.strip() if code else None}


def user_frame(frames: Iterable[dict]) -> dict | None:
    """The deepest frame of the model's own code, None where every frame is a library's."""
    found = [f for f in frames if not is_library(f["file"])]
    return found[-1] if found else None


def shown(file: str) -> str:
    """A path as the console shows it: relative to the working directory when under it,
    from the package's folder when installed (torch_geometric/utils/loop.py)."""
    cwd = os.getcwd()
    if file.startswith(cwd + os.sep):
        return os.path.relpath(file, cwd)
    parts = Path(file).parts
    for i in range(len(parts) - 1, -1, -1):  # gnnbench's own file, wherever it was checked out
        if parts[i] == "gnnbench" and (_PACKAGE.joinpath(*parts[i + 1:])).is_file():
            return str(Path(*parts[i:]))
    for marker in ("site-packages" + os.sep, "dist-packages" + os.sep):
        if marker in file:
            return file.split(marker, 1)[1]
    return file


def where(site: dict) -> str:
    """`mymodel.py:13 in forward: if x.sum() > 0:`, and the library line it broke in when
    that is not the user's own."""
    user, at = site.get("user"), site.get("at")
    if user is None:
        return f"{shown(at['file'])}:{at['line']}" if at else "an unknown place"
    text = f"{shown(user['file'])}:{user['line']}"
    text += f" in {user['function']}" if user.get("function") else ""
    text += f": {user['code']}" if user.get("code") else ""
    if at and (at["file"], at["line"]) != (user["file"], user["line"]):
        text += f" (inside {shown(at['file'])}:{at['line']})"
    return text


def _short(reason: str) -> str:
    """Dynamo's name for the break ("Data-dependent branching"), not its preamble."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith("Encountered graph break")]
    return (useful or lines or ["graph break"])[0]


def graph_break(message: str) -> dict | None:
    """One message of dynamo's `graph_breaks` log (fullgraph=False): where it broke, the
    user's frame (None for a repeat, whose stack dynamo suppresses), its name and text."""
    at = _AT.search(message.splitlines()[0] if message else "")
    if at is None:
        return None
    reason = message.split("Graph Break Reason:", 1)[-1]
    reason, _, traceback = reason.partition("User code traceback:")
    frames = [frame(**m.groupdict()) for m in _FRAME.finditer(traceback)]
    return {"reason": _short(reason), "at": frame(**at.groupdict()),
            "user": user_frame(frames), "explanation": reason.strip()[:EXPLANATION_CHARS]}


def merge(sites: list[dict]) -> list[dict]:
    """One entry per place and reason, counted; a repeat borrows its first sighting's
    user frame."""
    merged: dict[tuple, dict] = {}
    for site in sites:
        key = (site["at"]["file"], site["at"]["line"], site["reason"])
        if key not in merged:
            merged[key] = {**site, "count": 0}
        merged[key]["count"] += 1
        if merged[key]["user"] is None:
            merged[key]["user"] = site["user"]
    return list(merged.values())


def recompile(message: str, reason: str) -> dict | None:
    """Dynamo's `recompiles` message: the function recompiled, where it is defined, and the
    guard that failed (`reason`)."""
    found = _RECOMPILING.search(message)
    if found is None:
        return None
    return {"function": found["function"], "file": found["file"], "line": int(found["line"]),
            "reason": reason}


def from_exception(exc: BaseException) -> dict:
    """A graph break raised under fullgraph=True: dynamo's stack of the user's frames (its
    `real_stack`, else the "from user code" text), its name, and its explanation."""
    text = str(exc)
    stack = getattr(exc, "real_stack", None) or []
    frames = [frame(f.filename, f.lineno, f.name, f.line) for f in stack]
    if not frames:
        frames = [frame(**m.groupdict())
                  for m in _FRAME.finditer(text.partition("from user code:")[2])]
    explanation = text.split("Set TORCHDYNAMO_VERBOSE", 1)[0].strip()
    return {"reason": _short(text), "at": frames[-1] if frames else None,
            "user": user_frame(frames), "frames": frames,
            "explanation": explanation[:EXPLANATION_CHARS]}
