"""Whether a record can be used: the fields that the report, the comparisons and the
reference searches read, with their types. One place decides, so that a record that passes
never crashes a reader, and one that fails (hand-edited, cut short by another tool, the
record of a command that never composed, written by a newer gnnbench) is skipped with its
first problem named instead of costing a report or a finished run."""

from __future__ import annotations

import json
from collections.abc import Mapping

from gnnbench.records.schema import SCHEMA_VERSION, STATUSES

# JSON's names for the types a key may have; bool is not a number here, though it is in Python.
INT, NUMBER, STR, BOOL, DICT, LIST, NULL, ANY = (
    "integer", "number", "string", "boolean", "object", "array", "null", "any")

# (dotted key, the types it may have). A key ending in "?" may be absent (records older than
# it); "*" is every item of an array. A key under one that is absent or null is not checked:
# the rule for that one says whether it may be.
EVERY_RECORD: list[tuple[str, tuple[str, ...]]] = [
    ("name", (STR,)), ("reason?", (STR, NULL)),
    ("config", (DICT,)),
    ("config.model", (DICT,)), ("config.model.name", (STR,)),
    ("config.dataset", (DICT,)), ("config.dataset.name", (STR,)),
    ("config.train", (DICT,)), ("config.train.seed", (INT,)),
    ("config.train.epochs", (INT,)), ("config.train.warmup_epochs", (INT,)),
    ("config.train.precision?", (STR,)), ("config.train.distributed?", (STR,)),
    ("config.train.world_size?", (INT,)), ("config.train.paired?", (BOOL,)),
    ("config.graph?", (DICT,)), ("config.graph.layout?", (STR,)),
    ("config.compile", (BOOL,)), ("config.wandb", (DICT,)), ("config.wandb.mode", (STR,)),
    ("config.wandb.group", (STR, NULL)),
    ("env?", (DICT, NULL)), ("env.device?", (STR, NULL)),
    ("dataset?", (DICT, NULL)), ("dataset.split_sizes?", (DICT, NULL)),
    ("dataset.split_sizes.train?", (INT, NULL)),
    ("distributed?", (DICT, NULL)), ("distributed.ranks?", (LIST, NULL)),
    ("distributed.ranks.*", (DICT,)),
    ("timing?", (DICT, NULL)), ("epochs", (LIST,)), ("epochs.*", (DICT,)),
    ("started_at?", (NUMBER, NULL)), ("ended_at?", (NUMBER, NULL)),
]
# How a compiled run is compiled: its variant's label is made from these.
COMPILED = [("config.compiler", (DICT,)), ("config.compiler.mode", (STR,)),
            ("config.compiler.dynamic", (ANY,)), ("config.compiler.fullgraph", (ANY,)),
            ("config.compiler.backend", (STR,)), ("config.compiler.scope?", (STR, NULL))]
# What the report and the comparisons read of a finished run.
FINISHED = [
    ("timing", (DICT,)), ("timing.warmup_epochs", (INT,)), ("timing.train_step_s", (DICT,)),
    ("timing.train_step_s.median", (NUMBER,)), ("timing.compile_overhead_s", (NUMBER, NULL)),
    ("timing.ranks?", (LIST,)), ("timing.throughput_nodes_per_s?", (NUMBER, NULL)),
    *[(f"epochs.*.{key}", (NUMBER,)) for key in ("train_s", "eval_s?", "epoch_wall_s?",
                                                   "eager_train_s?", "eager_eval_s?")],
    ("memory", (DICT,)), ("memory.peak_bytes", (NUMBER, NULL)),
    ("accuracy", (DICT,)), ("accuracy.test_at_best_val", (NUMBER,)),
    ("accuracy.near_chance?", (BOOL,)),
    ("compile?", (DICT, NULL)), ("compile.graph_breaks", (INT,)), ("compile.recompiles", (INT,)),
    ("cuda_graphs?", (STR, NULL)), ("cuda_graph_audit?", (DICT, NULL)),
    ("cuda_graph_audit.inductor_skips", (INT,)),
    ("stability?", (DICT, NULL)), ("stability.ok", (BOOL,)), ("stability.warnings", (LIST,)),
    ("stability.checks", (DICT,)), ("stability.checks.spread?", (NUMBER, NULL)),
    ("stability.checks.load_per_cpu?", (NUMBER, NULL)),
    ("paired?", (DICT, NULL)), ("paired.accuracy", (DICT,)),
    ("paired.accuracy.test_at_best_val", (NUMBER,)),
]


def _kind(value: object) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    return {float: NUMBER, str: STR, dict: DICT, list: LIST}.get(type(value), type(value).__name__)


def _fits(value: object, kinds: tuple[str, ...]) -> bool:
    kind = _kind(value)
    return ANY in kinds or kind in kinds or (kind == INT and NUMBER in kinds)


def _an(kind: str) -> str:
    return kind if kind == NULL else ("an " if kind[0] in "aeiou" else "a ") + kind


def _check(node: object, parts: list[str], where: str, kinds: tuple[str, ...]) -> str | None:
    """The problem with the key `parts` under `node` (`where`: the path to `node`)."""
    part, rest = parts[0], parts[1:]
    if part == "*":
        items = node if isinstance(node, list) else []
        for i, item in enumerate(items):
            found = _check_at(item, rest, f"{where}[{i}]", kinds)
            if found:
                return found
        return None
    optional = part.endswith("?")
    part = part.rstrip("?")
    where = f"{where}.{part}" if where else part
    if not isinstance(node, Mapping):
        return None  # its parent is absent, null or of the wrong type: its own rule says
    if part not in node:
        return None if optional or rest else f"{where} is missing"
    return _check_at(node[part], rest, where, kinds)


def _check_at(value: object, rest: list[str], where: str, kinds: tuple[str, ...]) -> str | None:
    if rest:
        return _check(value, rest, where, kinds)
    if _fits(value, kinds):
        return None
    return f"{where} is {_an(_kind(value))}, expected {' or '.join(map(_an, kinds))}"


def _value(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def problem(record: object) -> str | None:
    """The first thing that makes `record` (a file's parsed JSON) unusable, in a few words
    for a one-line warning; None when every reader can use it."""
    if not isinstance(record, dict):
        return f"the file holds {_an(_kind(record))}, expected an object"
    version = record.get("schema_version", 1)
    if _kind(version) != INT or version < 1:
        return f"schema_version {_value(version)} is not a version gnnbench knows"
    if version > SCHEMA_VERSION:
        return (f"schema_version {version} is newer than this gnnbench reads "
                f"({SCHEMA_VERSION}): update gnnbench to read it")
    if "status" not in record:
        return "status is missing"
    status = record["status"]
    if status not in STATUSES:
        return f"status {_value(status)} is not one of {', '.join(STATUSES)}"
    rules = list(EVERY_RECORD)
    config = record.get("config")
    if isinstance(config, Mapping) and config.get("compile") is True:
        rules += COMPILED
    if status == "ok":
        rules += FINISHED
    for key, kinds in rules:
        found = _check(record, key.split("."), "", kinds)
        if found:
            return found
    if status == "ok" and len(record["epochs"]) <= record["timing"]["warmup_epochs"]:
        return (f"status ok, but none of its {len(record['epochs'])} epochs is after its "
                f"{record['timing']['warmup_epochs']} warm-up epochs")
    return None
