"""The Hydra callback that writes a sweep's report when its last job ends, in the process
that launched the sweep (whichever launcher ran the jobs), and hands the sweep's outcome to
the command line (report/handoff.py)."""

from __future__ import annotations

from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from gnnbench.records import store, sweep
from gnnbench.report import handoff as handoff_file


class SweepReport(Callback):
    def __init__(self, handoff: str | None = None) -> None:
        """`handoff`: the command line's hand-off file (None: nobody to tell)."""
        self.handoff = handoff

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        root = Path(config.hydra.sweep.dir).resolve()
        handoff_file.write(self.handoff, handoff_file.SweepOutcome(dir=str(root)))

    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        # Here, not at the top: matplotlib's import would delay every sweep's first job.
        from gnnbench.report.cli import write_report

        root = Path(config.hydra.sweep.dir)
        write_report([root])
        # The jobs' outcomes come from their records on disk, since a launcher may have run
        # them in other processes.
        records = store.find([root], warn=False)
        handoff_file.write(self.handoff, handoff_file.SweepOutcome(
            dir=str(root), running=False,
            failed=[r.name for r in records if r.status not in ("ok", "skipped")],
            # jobs that left no record (stopped before they began, or their process died):
            # the sweep did not do all it was asked
            missing=[job for p in sweep.progress([root], records) for job in p.missing]))
        offline = list(root.glob("wandb/offline-run-*")) + list(root.glob("*/wandb/offline-run-*"))
        if offline:
            print(f"W&B: {len(offline)} offline run(s) in this sweep (the jobs and the report); "
                  f"upload them all with: wandb sync {root}/wandb/offline-run-* "
                  f"{root}/*/wandb/offline-run-*", flush=True)
