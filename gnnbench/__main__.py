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


@hydra.main(config_path=str(config.CONF_DIR), config_name="config", version_base=None)
def _run(cfg: DictConfig) -> None:
    from gnnbench import report, run

    out_dir = Path(HydraConfig.get().runtime.output_dir)
    result = run.run_experiment(cfg, out_dir)
    print(report.format_summary(result, str(out_dir / "results.json")), flush=True)
    if result["status"] != "ok":
        _failed_runs.append(result["name"])
        if HydraConfig.get().mode == RunMode.RUN:
            print(f"gnnbench: error: {result['reason']}", file=sys.stderr)


def main() -> None:
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
