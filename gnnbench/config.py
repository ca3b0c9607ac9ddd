"""Where the configs live, the resolvers they use, and the checks that turn bad input
into one readable line instead of a traceback deep inside a run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf

if TYPE_CHECKING:
    import torch

PACKAGE_DIR = Path(__file__).resolve().parent
# A source checkout (editable install) has conf/ beside the package; a regular install
# ships the same files as the package data gnnbench/conf.
_CHECKOUT_DIR = PACKAGE_DIR.parent
CONF_DIR = (
    _CHECKOUT_DIR / "conf"
    if (_CHECKOUT_DIR / "conf" / "config.yaml").is_file()
    else PACKAGE_DIR / "conf"
)
CONFIG_GROUPS = ("model", "dataset", "workload", "variant", "experiment")
DEVICES = ("auto", "cpu", "cuda")
BATCHING = ("full", "neighbor")
SAMPLERS = ("auto", "gnnbench", "pyg")


class ConfigError(ValueError):
    """Bad input from the user: the message is one line naming the value and the choices."""


def project_dir() -> str:
    """The checkout's root when running from one, else the working directory."""
    if (_CHECKOUT_DIR / "pyproject.toml").is_file() and (_CHECKOUT_DIR / "conf").is_dir():
        return str(_CHECKOUT_DIR)
    return os.getcwd()


def variant_name(compiled: object, mode: str, scope: str = "model") -> str:
    """eager, compile-<mode>, or compile-<mode>-step when the whole training step is compiled."""
    if compiled is not True:
        return "eager"
    return f"compile-{mode}" + ("-step" if scope == "step" else "")


def run_name(model: str, dataset: str, compiled: object, mode: str, scope: str,
             seed: object) -> str:
    """Readable run name, shared by output directories and W&B: sage-cora-compile-default-s0."""
    return f"{model}-{dataset}-{variant_name(compiled, mode, scope)}-s{seed}"


def reference_key(cfg: DictConfig | dict) -> str:
    """Runs with equal keys differ only in how (or whether) they are compiled: an eager run
    with the same key is the compiled run's reference, and a second eager one is a repeat."""
    plain = cfg if isinstance(cfg, dict) else OmegaConf.to_container(cfg, resolve=True)
    kept = {k: v for k, v in plain.items() if k not in ("compile", "compiler", "wandb")}
    kept["train"] = {k: v for k, v in kept["train"].items() if k != "paired"}
    return json.dumps(kept, sort_keys=True, default=str)


def register_resolvers() -> None:
    """Idempotent: Hydra's entry point and the tests both call it."""
    if not OmegaConf.has_resolver("gnnbench_project_dir"):
        OmegaConf.register_new_resolver("gnnbench_project_dir", project_dir)
    if not OmegaConf.has_resolver("gnnbench_run_name"):
        OmegaConf.register_new_resolver("gnnbench_run_name", run_name)


def compose_config(overrides: list[str]) -> DictConfig:
    """The config the CLI would build from these overrides, for tests and benchmarks that
    run experiments in-process."""
    from hydra import compose, initialize_config_dir

    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=overrides)


def group_choices(group: str) -> list[str]:
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


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _show(value: object) -> str:
    """Values as they are typed on the command line (true, not True)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return str(value)


def _choice(name: str, value: object, choices: tuple | list) -> None:
    # `value in choices` alone would accept 1 for True: compare types too.
    ok = any(value == c and type(value) is type(c) for c in choices)
    require(ok, f"{name}={value!r} is not valid; choose one of: "
                f"{', '.join(_show(c) for c in choices)}")


def validate(cfg: DictConfig) -> None:
    """Check every value a run reads, so a typo fails in the first second, not after compiling."""
    from gnnbench import compile as compiler
    from gnnbench import data, models

    _choice("model.name", cfg.model.name, models.MODELS)
    _choice("dataset.name", cfg.dataset.name, data.DATASETS)
    _choice("compile", cfg.compile, (False, True))
    _choice("compiler.mode", cfg.compiler.mode, compiler.MODES)
    _choice("compiler.scope", cfg.compiler.scope, compiler.SCOPES)
    _choice("compiler.dynamic", cfg.compiler.dynamic, (True, False, None))
    _choice("compiler.fullgraph", cfg.compiler.fullgraph, (True, False))
    if cfg.compile:
        _choice("compiler.backend", cfg.compiler.backend, compiler.valid_backends())
    models.validate(cfg.model)

    train = cfg.train
    require(
        isinstance(train.epochs, int) and train.epochs > 0,
        f"train.epochs={train.epochs!r} must be a positive integer",
    )
    require(
        isinstance(train.warmup_epochs, int) and 0 <= train.warmup_epochs < train.epochs,
        f"train.warmup_epochs={train.warmup_epochs!r} must be an integer in "
        f"[0, train.epochs={train.epochs})",
    )
    require(
        isinstance(train.lr, (int, float)) and train.lr > 0, f"train.lr={train.lr!r} must be > 0"
    )
    require(
        isinstance(train.weight_decay, (int, float)) and train.weight_decay >= 0,
        f"train.weight_decay={train.weight_decay!r} must be >= 0",
    )
    _choice("train.batching", train.batching, BATCHING)
    _choice("train.sampler", train.sampler, SAMPLERS)
    if train.batching == "neighbor":
        fanouts = list(train.fanouts)
        require(len(fanouts) == cfg.model.num_layers and all(
            isinstance(f, int) and (f > 0 or f == -1) for f in fanouts),
            f"train.fanouts={fanouts} needs one positive fan-out (or -1: all) per layer "
            f"(model.num_layers={cfg.model.num_layers})")
        require(isinstance(train.batch_size, int) and train.batch_size > 0,
                f"train.batch_size={train.batch_size!r} must be a positive integer")
        require(isinstance(train.eval_chunk, int) and train.eval_chunk > 0,
                f"train.eval_chunk={train.eval_chunk!r} must be a positive integer")
        require(not train.paired, "train.paired=true needs train.batching=full")
        if train.sampler == "pyg":
            from gnnbench.sampler import pyg_available

            require(pyg_available(), "train.sampler='pyg' needs pyg-lib or torch-sparse; "
                    "choose one of: auto, gnnbench")
    _choice("train.device", train.device, DEVICES)
    resolve_device(train.device)
    if cfg.data_mirror is not None:
        require(
            Path(str(cfg.data_mirror)).is_dir(),
            f"data_mirror={cfg.data_mirror!r} is not a directory",
        )


def resolve_device(name: str) -> torch.device:
    """`auto` picks CUDA when present; asking for CUDA without it is an error, not a fallback."""
    import torch

    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"train.device='cuda' but CUDA is not available (torch {torch.__version__}); "
            "choose one of: auto, cpu"
        )
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)
