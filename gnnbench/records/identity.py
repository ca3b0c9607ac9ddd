"""What makes two runs comparable. A *setting* is everything that changes what is measured
(model, dataset, training, and the device type), and nothing that does not (where the data
is cached, W&B, Hydra's folders, which GPU of a host). Its *variant* is how it is compiled.
A run is a setting, a variant and a seed: an eager run of the same setting (and seed) is a
compiled run's reference, on any host, under any launcher, in any order."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

# Top-level config keys that say where things are or how they are reported, not what is
# measured. A new key is part of a setting unless it is listed here.
NOT_MEASURED = ("data_dir", "data_mirror", "reference_dirs", "rerun", "wandb")
# The variant (how the setting is compiled) and the run (seed), not the setting.
VARIANT_KEYS = ("compile", "compiler", "capture")
# train.device: its type is part of the setting, its index is not (the type comes from
# where the run ran). train.paired: how the eager side is measured, part of the variant label.
NOT_MEASURED_TRAIN = ("seed", "device", "paired")


def device_type(record: Mapping) -> str:
    """cpu or cuda: where the run really ran (env), else what its config asked for."""
    ran_on = (record.get("env") or {}).get("device")
    asked = str(record["config"]["train"].get("device", "auto"))
    return str(ran_on or (asked if asked != "auto" else "unknown")).split(":")[0]


def _without_private(value: object) -> object:
    """Drop keys like Hydra's `_target_`: they name the code that reads a group (the group's
    `name` already identifies it), not a measured setting."""
    if isinstance(value, Mapping):
        return {k: _without_private(v) for k, v in value.items() if not str(k).startswith("_")}
    return value


def setting(config: Mapping, device: str) -> dict:
    """The measured setting of a resolved config, on a device type."""
    kept = {k: _without_private(v) for k, v in config.items()
            if k not in NOT_MEASURED and k not in VARIANT_KEYS}
    kept["train"] = {k: v for k, v in kept["train"].items() if k not in NOT_MEASURED_TRAIN}
    kept["device_type"] = device
    return kept


def setting_key(config: Mapping, device: str) -> str:
    """A short stable digest of `setting`, equal for equal settings."""
    text = json.dumps(setting(config, device), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record_setting_key(record: Mapping) -> str:
    return setting_key(record["config"], device_type(record))


def run_key(config: Mapping, device: str) -> str:
    """A setting and a seed: two eager jobs with equal run keys would measure the same thing."""
    return f"{setting_key(config, device)}-s{config['train']['seed']}"
