"""Where the Hydra configs live and how a config is composed from overrides.

The configs are the top-level `conf/`; the package reaches them through its `conf` link, so
an editable checkout and an installed wheel (which holds a copy) read them from one place.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from gnnbench.config.errors import ConfigError
from gnnbench.config.naming import run_name

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


def compose_config(overrides: list[str]) -> DictConfig:
    """The config the CLI would build from these overrides, for tests and benchmarks that
    run experiments in-process."""
    from hydra import compose, initialize_config_dir

    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=overrides)


def group_choices(group: str) -> list[str]:
    """The registry of a config group: one option per YAML file."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def check_group_overrides(argv: list[str]) -> None:
    """Reject `model=foo` (also inside a sweep list) before Hydra prints its multi-line error."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    candidates = [a for a in argv if "=" in a and not a.startswith("-")]
    groups = {g: group_choices(g) for g in CONFIG_GROUPS}
    for override in OverridesParser.create().parse_overrides(candidates):
        key = override.key_or_group
        if key not in groups or override.is_delete():
            continue
        values = (
            list(override.sweep_string_iterator())
            if override.is_sweep_override()
            else [override.get_value_element_as_str()]
        )
        for value in values:
            if value not in groups[key]:
                raise ConfigError(
                    f"unknown {key} '{value}'; valid choices: {', '.join(groups[key])}"
                )
