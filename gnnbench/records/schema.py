"""The `results.json` record: its version, a new record's fields, and how records written
by an older version are read today.

How records evolve (also in README): a config key added later gets a default that keeps the
old behaviour and, if it changes what is measured, an entry in `ADDED_KEYS`; a record
without the key is read as if it had that default. Records on disk are never rewritten:
`upgrade` fills in what their version did not know when they are read.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

# 1: records before the version field (up to the reference sweep of 2026-11-30).
# 2: `schema_version`, `cuda_graphs` observed (with `cuda_graph_audit`), env host/device index.
# 3: `stability` (the timing-stability verdict, gnnbench/measure/stability.py).
# 4: `train.precision`, `graph.layout` and `capture` (the matrix of precisions and layouts),
#    `graph` (layout and its conversion time), inference and whole-epoch speedups;
#    `train.prefetch`, `train.pad_batches` (mini-batch padding waste in `batching`); DDP
#    training (train.distributed, .world_size, .dist_backend; `distributed`, `scaling`,
#    per-rank timings); env.device_index is the host's GPU index (CUDA_VISIBLE_DEVICES
#    applied), with env.device_uuid and env.cuda_visible_devices; `started_at`, `ended_at`.
# 5: `model.mlp_norm` (GIN's MLP with batch norm; on by default where the model uses batch
#    norm, so GIN on the arxiv-size presets is a different setting from version 4's);
#    `accuracy.chance` (the test split's majority-class share) and `accuracy.near_chance`
#    (the run did not learn); older records were not judged.
# 6: models and datasets that are not gnnbench's own (model=custom, pyg-*; dataset=pyg,
#    file): a `_target_` outside gnnbench and a saved graph's `dataset.sha256` are part of
#    the setting (its path is not); `compile.graph_break_sites` and
#    `compile.recompile_sites` (the file and line of each break and recompilation), and
#    `graph_break` (the user's frame and dynamo's explanation) where a break failed the run.
#    No key of an existing group was added: earlier records read as before.
# 7: `dataset.family` removed from the dataset configs: a label no code read, yet hashed
#    into the setting; older records are read without it (REMOVED_KEYS).
# 8: `timing.train_step_s` is `timing.train_s` (and `first_train_step_s` `first_train_s`):
#    the train part of an epoch, one step full-batch but every batch of a mini-batch epoch,
#    as each epoch's `train_s` (RENAMED_KEYS: older records are read under the new names).
# 9: `train.shape_policy` (how batches of whole graphs meet a compiled model; `exact`, what
#    every earlier run did), graph-level and heterogeneous datasets, `shapes` (distinct
#    shapes, padding share, recompilations per epoch, whether dynamo's recompile limit was
#    hit) and `compile.recompile_limit_hits`.
# 10: `train.prefetch_stream` (the priority of the prefetching thread's CUDA stream;
#     `normal`, what every earlier prefetching run had).
SCHEMA_VERSION = 10

# Measured config keys added after version 1: dotted key -> (version that added it, the
# default that keeps the old behaviour). A record older than the version reads the default.
# A key that only one model has is listed in MODEL_KEYS too: other models never get it.
ADDED_KEYS: dict[str, tuple[int, object]] = {
    "train.precision": (4, "fp32"),
    "graph.layout": (4, "coo"),
    "train.prefetch": (4, False),
    "train.pad_batches": (4, False),
    "train.distributed": (4, "none"),  # one process trained every run before
    "train.world_size": (4, 1),
    "train.dist_backend": (4, "auto"),
    "model.mlp_norm": (5, False),  # version 4's GIN had a plain MLP
    "train.shape_policy": (9, "exact"),  # every batch as it came
    "train.prefetch_stream": (10, "normal"),
}
MODEL_KEYS: dict[str, str] = {"model.mlp_norm": "gin"}
# Config keys removed since, that measured nothing: dotted key -> the version that removed
# it. A record older than that version is read without it.
REMOVED_KEYS: dict[str, int] = {"dataset.family": 7}

# Measured fields renamed since (not config keys): old dotted key -> (new dotted key, the
# version that renamed it). A record older than that version is read under the new name.
RENAMED_KEYS: dict[str, tuple[str, int]] = {
    "timing.train_step_s": ("timing.train_s", 8),
    "timing.first_train_step_s": ("timing.first_train_s", 8),
}

STATUSES = ("ok", "graph_break", "compile_error", "oom", "diverged", "interrupted", "error",
            "skipped")


def _get(tree: Mapping, dotted: str) -> tuple[bool, object]:
    node: object = tree
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _set(tree: dict, dotted: str, value: object) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
        if not isinstance(tree, dict):
            return  # not a record's shape: the reader names the problem
    tree[last] = copy.deepcopy(value)


def upgrade(record: dict) -> dict:
    """The record as version SCHEMA_VERSION reads it (in place, and returned)."""
    version = record.setdefault("schema_version", 1)
    model = record["config"].get("model")
    model = model.get("name") if isinstance(model, dict) else None
    for key, (added_in, default) in ADDED_KEYS.items():
        if key in MODEL_KEYS and MODEL_KEYS[key] != model:
            continue
        if version < added_in and not _get(record["config"], key)[0]:
            _set(record["config"], key, default)
    for key, removed_in in REMOVED_KEYS.items():
        parent, _, leaf = key.rpartition(".")
        found, node = _get(record["config"], parent)
        if version < removed_in and found and isinstance(node, dict):
            node.pop(leaf, None)
    for old, (new, renamed_in) in RENAMED_KEYS.items():
        parent, _, leaf = old.rpartition(".")
        found, node = _get(record, parent)
        if version < renamed_in and found and isinstance(node, dict) and leaf in node:
            node[new.rpartition(".")[2]] = node.pop(leaf)
    if version < 2:
        # Version 1 wrote the CUDA graphs a setting asked for, not what the run observed.
        record.setdefault("cuda_graph_audit", None)
    if version < 3:
        # Not checked when it ran; the report judges its epochs alone (no machine load).
        record.setdefault("stability", None)
    if version < 4:
        record.setdefault("distributed", None)  # one process trained it
        record.setdefault("scaling", None)
    if version < 6:
        record.setdefault("graph_break", None)  # not recorded
    return record

