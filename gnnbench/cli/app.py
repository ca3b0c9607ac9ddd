"""The Hydra entry point: one job of a run or a sweep. Everything a job needs from other jobs
(its eager reference, whether it repeats an eager job) comes from records on disk, so any
Hydra launcher can run the jobs, in any order, in any process or on any host."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from gnnbench import config

config.register_resolvers()
# Runs of this process that did not end ok (a single run, or a sweep under the basic
# launcher); a sweep's exit status is decided from its records (report.callback).
failed_runs: list[str] = []


def _skip_if_repeat(cfg: DictConfig, out_dir: Path, sweep_dir: Path) -> bool:
    """An eager job whose setting and seed another job of this sweep already measures (a
    sweep crossing compile=false,true with compiler.* repeats its eager jobs) is recorded as
    skipped instead of trained again."""
    from gnnbench.records import identity, store
    from gnnbench.runner import skipped_record

    try:
        device = config.resolve_device(cfg.train.device).type
    except config.ConfigError:
        return False  # the run itself reports the bad device
    from omegaconf import OmegaConf

    key = identity.run_key(OmegaConf.to_container(cfg, resolve=True), device)
    holder = store.claim(sweep_dir, key, out_dir)
    if holder is None:
        return False
    store.write(skipped_record(cfg, holder), out_dir)
    print(f"gnnbench: skipped {out_dir.name}: same eager run as {holder}", flush=True)
    return True


@hydra.main(config_path=str(config.CONF_DIR), config_name="config", version_base=None)
def job(cfg: DictConfig) -> None:
    from gnnbench.report.summary import format_summary
    from gnnbench.runner import run_experiment

    hydra_cfg = HydraConfig.get()
    out_dir = Path(hydra_cfg.runtime.output_dir)
    sweeping = hydra_cfg.mode == RunMode.MULTIRUN
    sweep_dir = Path(hydra_cfg.sweep.dir).resolve() if sweeping else None
    if sweeping and cfg.compile is False and _skip_if_repeat(cfg, out_dir, sweep_dir):
        return
    # Where eager references are looked for: this sweep (a single run: the folder of its
    # run folders), and any folders the user names.
    search = [sweep_dir or out_dir.parent, *map(Path, cfg.get("reference_dirs") or [])]
    group = cfg.wandb.group or (sweep_dir.name if sweeping else None)
    result = run_experiment(cfg, out_dir, reference_dirs=search, wandb_group=group)
    print(format_summary(result, str(out_dir / "results.json")), flush=True)
    if result["status"] != "ok":
        failed_runs.append(result["name"])
        if not sweeping:
            print(f"gnnbench: error: {result['reason']}", file=sys.stderr)
