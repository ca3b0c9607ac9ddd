"""Where the Hydra configs live and how a config is composed from overrides.

The configs are the top-level `conf/`; the package reaches them through its `conf` link, so
an editable checkout and an installed wheel (which holds a copy) read them from one place.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from gnnbench.config import sources
from gnnbench.config.errors import ConfigError, file_name, suggest
from gnnbench.config.naming import run_name
from gnnbench.config.validate import NAME_KEYS, pool_size

PACKAGE_DIR = Path(__file__).resolve().parents[1]
CONF_DIR = PACKAGE_DIR / "conf"
# Groups a user picks one option of; their options are the YAML files in conf/<group>/.
CONFIG_GROUPS = ("model", "dataset", "workload", "variant", "regime", "experiment")


def project_dir() -> str:
    """The checkout's root when running from one (data/ lives there), else the working
    directory."""
    checkout = PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "conf").is_dir():
        return str(checkout)
    return os.getcwd()


def _run_name_of_root(*, _root_: DictConfig) -> str:
    return run_name(_root_)


def unique_tag(overrides: str = "") -> str:
    """What keeps two runs started in the same second apart in their folder names: a short
    digest of their overrides (train.lr=0.01 vs 0.5) and the process id (the same command
    started twice at once)."""
    digest = hashlib.sha1(str(overrides).encode()).hexdigest()[:6]
    return f"{digest}-{os.getpid()}" if overrides else str(os.getpid())


def register_resolvers() -> None:
    """Idempotent: the Hydra entry point, tests and benchmarks all call it."""
    if not OmegaConf.has_resolver("gnnbench_project_dir"):
        OmegaConf.register_new_resolver("gnnbench_project_dir", project_dir)
    if not OmegaConf.has_resolver("gnnbench_run_name"):
        OmegaConf.register_new_resolver("gnnbench_run_name", _run_name_of_root)
    if not OmegaConf.has_resolver("gnnbench_unique"):
        # Cached: a run's folder name is resolved more than once and must not change.
        OmegaConf.register_new_resolver("gnnbench_unique", unique_tag, use_cache=True)
    if not OmegaConf.has_resolver("gnnbench_pool_size"):
        # conf/hydra/launcher/gpu-pool.yaml: how many jobs at once (`gpus`, or one per GPU).
        OmegaConf.register_new_resolver("gnnbench_pool_size", pool_size)
    if not OmegaConf.has_resolver("gnnbench_gpu_count"):
        OmegaConf.register_new_resolver("gnnbench_gpu_count", gpu_count)
    # Models and datasets that are not gnnbench's own (conf/model/custom.yaml, conf/dataset/
    # pyg.yaml, file.yaml): their names, and the content hash that identifies a saved graph.
    for name, fn in (("gnnbench_target_name", sources.target_name),
                     ("gnnbench_pyg_dataset_name", sources.pyg_dataset_name),
                     ("gnnbench_file_name", sources.file_name),
                     ("gnnbench_file_sha256", sources.file_sha256)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


def gpu_count() -> int:
    """The CUDA devices this process sees (0 without CUDA)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def launcher_choices() -> list[str]:
    """`hydra/launcher=` options: gnnbench's presets (conf/hydra/launcher/) and those of the
    installed Hydra launcher plugins (basic, joblib, submitit_local, submitit_slurm)."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins

    Plugins.instance()  # imports the plugins, which register their configs
    stored = [name.removesuffix(".yaml")
              for name in ConfigStore.instance().list("hydra/launcher")]
    return sorted({*group_choices("hydra/launcher"), *stored})


def compose_config(overrides: list[str], name: str = "config") -> DictConfig:
    """The config the CLI would build from these overrides, for tests and benchmarks that
    run experiments in-process; `name="serve"`: what `python -m gnnbench.serve` reads."""
    from hydra import compose, initialize_config_dir

    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name=name, overrides=overrides)


def group_choices(group: str) -> list[str]:
    """The registry of a config group: one option per YAML file."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def _leaf_keys(cfg: DictConfig, prefix: str = "") -> list[str]:
    keys = []
    for key, value in cfg.items():
        dotted = f"{prefix}{key}"
        keys.append(dotted)
        if isinstance(value, DictConfig):
            keys += _leaf_keys(value, f"{dotted}.")
    return keys


def _open_prefixes(cfg: DictConfig) -> tuple[str, ...]:
    """Where any key may be added: the options of a model class that is not gnnbench's
    (passed to its constructor) and a PyG dataset's keyword arguments (`dataset.args`)."""
    found = []
    if sources.is_foreign(cfg.model.get("_target_")):
        found.append("model.")
    if isinstance(cfg.dataset.get("args"), DictConfig):
        found.append("dataset.args.")
    return tuple(found)


def check_overrides(argv: list[str]) -> None:
    """One check for every command-line override before Hydra sees it, so each mistake is
    one line naming the value and the choices (Hydra's own errors run to several lines, and
    a typo added with `+` would otherwise be accepted and ignored):

    - a group option that does not exist (`model=gat`, `dataset=Cora`, also in a sweep list);
    - a key gnnbench does not read (`train.epoch=5`, `+train.epoch=5`), with the closest key
      (a foreign model's own options and a PyG dataset's `args` take any key, added with +);
    - `+key` for a key that exists (Hydra refuses to add it twice: drop the `+`)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    candidates = [a for a in argv if "=" in a and not a.startswith("-")]
    groups = {g: group_choices(g) for g in CONFIG_GROUPS}
    if any(a.lstrip("+~").startswith("hydra/launcher=") for a in candidates):
        groups["hydra/launcher"] = launcher_choices()
    parsed = OverridesParser.create().parse_overrides(candidates)
    picks: list[list[str]] = []
    for override in parsed:
        key = override.key_or_group
        if key not in groups or override.is_delete():
            continue
        values = (list(override.sweep_string_iterator()) if override.is_sweep_override()
                  else [override.get_value_element_as_str()])
        for value in values:
            if value not in groups[key]:
                raise ConfigError(f"unknown {key} '{value}'; valid choices: "
                                  f"{', '.join(groups[key])}{suggest(value, groups[key])}")
        if key != "hydra/launcher":  # Hydra's group: no gnnbench keys depend on it
            picks.append([f"{key}={v}" for v in values])
    keyed = [o for o in parsed if o.key_or_group not in groups and not o.is_delete()
             and not o.key_or_group.startswith("hydra")]
    for override in keyed:
        if override.key_or_group == "gpus" and not override.is_sweep_override():
            pool_size(override.value())  # the launcher reads it before any job could say so
        if override.key_or_group in NAME_KEYS:  # Hydra names the run's folder with it
            values = (list(override.sweep_string_iterator()) if override.is_sweep_override()
                      else [override.value()])
            for value in values:
                file_name(override.key_or_group, value)
    if not keyed:
        return
    # The keys a run reads depend on the groups chosen (model.aggr exists for sage only):
    # check against each combination the command asks for (a few at most in practice).
    for combination in list(itertools.product(*picks))[:16]:
        composed = compose_config(list(combination))
        known, open_to = set(_leaf_keys(composed)), _open_prefixes(composed)
        where = f" with {' '.join(combination)}" if combination else ""
        for override in keyed:
            key, added = override.key_or_group, override.is_add() or override.is_force_add()
            if key in known:
                if override.is_add():
                    raise ConfigError(f"+{key} adds a key that exists; set it without the "
                                      f"'+': {override.input_line.lstrip('+')}")
                continue
            if key.startswith(open_to):  # a foreign class's own option: any name goes
                if not added:
                    raise ConfigError(f"{key} is a new option of the class{where}; add it "
                                      f"with a '+': +{override.input_line}")
                continue
            parent, _, leaf = key.rpartition(".")
            siblings = sorted({k.rpartition(".")[2] for k in known
                               if k.rpartition(".")[0] == parent})
            hint = suggest(leaf, siblings)
            hint = hint.replace(" mean ", f" mean {parent}." if parent else " mean ")
            if not siblings:  # the parent itself is misspelt: compare whole keys
                hint = suggest(key, sorted(known))
            raise ConfigError(f"{key} is not a setting gnnbench reads{where}"
                              f"{' (added with +)' if added else ''}{hint}")
