"""The Hydra callback that writes a sweep's report when its last job ends, in the process
that launched the sweep (whichever launcher ran the jobs)."""

from __future__ import annotations

from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from gnnbench.records import store, sweep

# Set by on_multirun_end, read by the CLI to choose its exit status: the jobs' outcomes come
# from their records on disk, since a launcher may have run them in other processes.
LAST_SWEEP: dict = {}


class SweepReport(Callback):
    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        # Here, not at the top: matplotlib's import would delay every sweep's first job.
        from gnnbench.report.cli import write_report

        root = Path(config.hydra.sweep.dir)
        write_report([root])
        records = store.find([root], warn=False)
        LAST_SWEEP.clear()
        LAST_SWEEP.update(dir=str(root), failed=[r["name"] for r in records
                                                 if r["status"] not in ("ok", "skipped")],
                          # jobs that left no record (stopped before they began, or their
                          # process died): the sweep did not do all it was asked
                          missing=[job for p in sweep.progress([root], records)
                                   for job in p["missing"]])
        offline = list(root.glob("wandb/offline-run-*")) + list(root.glob("*/wandb/offline-run-*"))
        if offline:
            print(f"W&B: {len(offline)} offline run(s) in this sweep (the jobs and the report); "
                  f"upload them all with: wandb sync {root}/wandb/offline-run-* "
                  f"{root}/*/wandb/offline-run-*", flush=True)
