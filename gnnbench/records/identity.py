"""What makes two runs comparable. A *setting* is everything that changes what is measured
(model, dataset, training, and the device type), and nothing that does not (where the data
is cached, W&B, Hydra's folders, which GPU of a host); a model or dataset class outside
gnnbench is identified by its `_target_` and options, a saved graph by its content hash.
Its *variant* is how it is compiled. A run is a setting, a variant and a seed: an eager run
of the same setting (and seed) is a compiled run's reference, on any host, under any
launcher, in any order. How many ranks (GPUs) train a DDP run is part of its setting; the
same setting on one rank is its scaling reference (`scaling_key`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from gnnbench.config import variant_label
from gnnbench.config.sources import is_foreign
from gnnbench.records.model import Record

# Top-level config keys that say where things are or how they are reported, not what is
# measured. A new key is part of a setting unless it is listed here.
NOT_MEASURED = ("data_dir", "data_mirror", "reference_dirs", "rerun", "wandb", "gpus")
# The variant (how the setting is compiled) and the run (seed), not the setting.
VARIANT_KEYS = ("compile", "compiler", "capture")
# train.device: its type is part of the setting, its index is not (the type comes from
# where the run ran). train.paired: how the eager side is measured, part of the variant label.
# train.dist_timeout_s: when a stuck DDP run fails, not what it measures.
NOT_MEASURED_TRAIN = ("seed", "device", "paired", "dist_timeout_s")
# Train keys added later whose default leaves a setting's digest as it was before them: a
# report orders rows by that digest, so committed reports keep their order, and settings
# keep their keys wherever they were quoted. Any other value is part of the setting.
ELIDED_AT_DEFAULT_TRAIN = {"shape_policy": "exact", "prefetch_stream": "normal"}
# How many processes train it: a DDP run and its one-GPU reference differ only here.
SCALE_KEYS = ("distributed", "world_size", "dist_backend")
# dataset.path: where a saved graph lies (its content hash, dataset.sha256, identifies it);
# dataset.download: whether PyG may fetch missing files; dataset.loader: gnnbench's code;
# dataset.family: a label records before schema 7 carry (no code read it; the reader drops
# it too, records/schema.py), never part of a setting.
NOT_MEASURED_DATASET = ("path", "download", "loader", "family")


def device_type(record: Record) -> str:
    """cpu or cuda: where the run really ran (env), else what its config asked for."""
    ran_on = record.env.device if record.env is not None else None
    asked = record.config.train.device
    return str(ran_on or (asked if asked != "auto" else "unknown")).split(":")[0]


def _without_private(value: object) -> object:
    """Drop keys like Hydra's `_target_` where they name gnnbench's code that reads a group
    (the group's `name` already identifies it). A `_target_` outside gnnbench (a user's
    model class, a PyG dataset or transform) is what is measured: it stays."""
    if value is None or isinstance(value, (str, int, float, list)):  # the ABC checks slowly
        return value
    if isinstance(value, Mapping):
        return {k: _without_private(v) for k, v in value.items()
                if not str(k).startswith("_") or (k == "_target_" and is_foreign(v)
                                                  and v is not None)}
    return value


def setting(config: Mapping, device: str) -> dict:
    """The measured setting of a resolved config, on a device type."""
    kept = {k: _without_private(v) for k, v in config.items()
            if k not in NOT_MEASURED and k not in VARIANT_KEYS}
    kept["train"] = {k: v for k, v in kept["train"].items() if k not in NOT_MEASURED_TRAIN
                     and not (k in ELIDED_AT_DEFAULT_TRAIN and ELIDED_AT_DEFAULT_TRAIN[k] == v)}
    if isinstance(kept.get("dataset"), Mapping):
        kept["dataset"] = {k: v for k, v in kept["dataset"].items()
                           if k not in NOT_MEASURED_DATASET}
    kept["device_type"] = device
    return kept


def _digest(tree: Mapping) -> str:
    text = json.dumps(tree, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def setting_key(config: Mapping, device: str) -> str:
    """A short stable digest of `setting`, equal for equal settings."""
    return _digest(setting(config, device))


def distributed(config: Mapping) -> bool:
    return config["train"].get("distributed", "none") == "ddp"


def world_size(config: Mapping) -> int:
    """How many ranks trained the run: 1 unless it is a DDP run."""
    return int(config["train"].get("world_size", 1)) if distributed(config) else 1


def scaling_key(config: Mapping, device: str) -> str:
    """The setting without how many processes train it: equal for a DDP run on N GPUs and
    the same setting on one GPU (DDP with world_size 1, or one plain process)."""
    kept = setting(config, device)
    kept["train"] = {k: v for k, v in kept["train"].items() if k not in SCALE_KEYS}
    return _digest(kept)


def variant_key(config: Mapping) -> str:
    """The variant (eager, or how it is compiled): runs of a setting compare within one."""
    return variant_label(config)


def record_setting_key(record: Record) -> str:
    return record.remembered("setting", lambda: setting_key(record.config.as_dict,
                                                            device_type(record)))


def record_run_key(record: Record) -> str:
    return f"{record_setting_key(record)}-s{record.config.train.seed}"


def record_scaling_key(record: Record) -> str:
    return record.remembered("scaling", lambda: scaling_key(record.config.as_dict,
                                                            device_type(record)))


def record_variant(record: Record) -> str:
    return record.remembered("variant", lambda: variant_label(record.config.as_dict))


def record_distributed(record: Record) -> bool:
    return distributed(record.config.as_dict)


def record_world_size(record: Record) -> int:
    return world_size(record.config.as_dict)


def run_key(config: Mapping, device: str) -> str:
    """A setting and a seed: two eager jobs with equal run keys would measure the same thing."""
    return f"{setting_key(config, device)}-s{config['train']['seed']}"
