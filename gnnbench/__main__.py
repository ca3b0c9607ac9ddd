"""`python -m gnnbench [overrides]` and the `gnnbench` console script (Hydra entry point)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from gnnbench import config

# PyG's import-time notice about torch.jit is noise for a benchmark's user.
warnings.filterwarnings(
    "ignore", message=r".*torch\.jit\.script.*deprecated", category=FutureWarning
)
config.register_resolvers()
_failed_runs: list[str] = []
# Eager runs finished in this process (Hydra's basic launcher runs a sweep's jobs here):
# the reference for compiled jobs of the same configuration, and how a sweep that crosses
# compile=false,true with compiler.* avoids training the same eager baseline twice.
_eager_runs: dict[str, dict] = {}


@hydra.main(config_path=str(config.CONF_DIR), config_name="config", version_base=None)
def _run(cfg: DictConfig) -> None:
    from gnnbench import report, run, tracking

    hydra_cfg = HydraConfig.get()
    out_dir = Path(hydra_cfg.runtime.output_dir)
    sweeping = hydra_cfg.mode == RunMode.MULTIRUN
    key = config.reference_key(cfg)
    if sweeping and cfg.compile is False and key in _eager_runs:
        first = _eager_runs[key]
        tracking.write_results(run.skipped_result(cfg, first), out_dir)
        print(f"gnnbench: skipped {out_dir.name}: same eager run as {first['name']} "
              f"({first['out_dir']})", flush=True)
        return
    group = cfg.wandb.group or (Path(hydra_cfg.sweep.dir).name if sweeping else None)
    result = run.run_experiment(cfg, out_dir, eager_reference=_eager_runs.get(key),
                                wandb_group=group)
    if cfg.compile is False and result["status"] == "ok":
        _eager_runs[key] = {**result, "out_dir": str(out_dir)}
    print(report.format_summary(result, str(out_dir / "results.json")), flush=True)
    if result["status"] != "ok":
        _failed_runs.append(result["name"])
        if not sweeping:
            print(f"gnnbench: error: {result['reason']}", file=sys.stderr)


def main() -> None:
    if sys.argv[1:2] == ["report"]:  # `gnnbench report DIR`
        from gnnbench import report

        sys.exit(report.main(sys.argv[2:]))
    try:
        config.check_group_overrides(sys.argv[1:])
    except config.ConfigError as exc:
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        sys.exit(2)
    _run()
    if _failed_runs:
        sys.exit(1)


if __name__ == "__main__":
    main()
