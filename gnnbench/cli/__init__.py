"""`python -m gnnbench [overrides]`, `gnnbench report DIR ...`: the top layer."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gnnbench.report import handoff


def main() -> None:
    # PyG's import-time notice about torch.jit is noise for a benchmark's user.
    warnings.filterwarnings(
        "ignore", message=r".*torch\.jit\.script.*deprecated", category=FutureWarning
    )
    if sys.argv[1:2] == ["report"]:  # `gnnbench report DIR`
        from gnnbench.report.cli import main as report_main

        sys.exit(report_main(sys.argv[2:]))
    if "--version" in sys.argv[1:]:
        from gnnbench.cli.version import versions

        print(versions(), end="")
        sys.exit(0)
    if {"-h", "--help"} & set(sys.argv[1:]):
        from gnnbench.cli.usage import page

        print(page(), end="")
        sys.exit(0)
    if "--hydra-help" in sys.argv[1:]:
        sys.argv = [a if a != "--hydra-help" else "--help" for a in sys.argv]
    from gnnbench import config

    try:  # before torch is imported: a mistyped command is answered within a second
        config.check_overrides(sys.argv[1:])
    except config.ConfigError as exc:
        from gnnbench.cli.invalid import record_invalid_command

        record_invalid_command(sys.argv[1:], str(exc))
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        sys.exit(1)
    from gnnbench.cli import app, callbacks, sweep_check
    from gnnbench.report import handoff
    from gnnbench.runner import interrupts

    sweep_check.install()  # a sweep's first job within seconds, whatever its size
    callbacks.install_hydra_file_writer()  # a job's .hydra files whole, or one error line
    _launch_dir_importable()
    _quiet_other_ranks()
    interrupts.install()
    # Where the sweep's callbacks tell this process how the sweep went (report/handoff.py).
    path = handoff.new_path()
    sys.argv.append(f"{handoff.SETTING}='{path}'")
    try:
        try:
            app.job()
        except interrupts.Interrupted as exc:  # a second signal outside a run: stop now
            sweep = handoff.read(path)
            if sweep and sweep.running:  # its jobs ran in other processes: say what is left
                app.stop_sweep(Path(sweep.dir), f"{exc.args[0]}, twice",
                               interrupts.exit_code(exc.signum))
            print(f"gnnbench: stopped by {exc.args[0]}", file=sys.stderr)
            sys.exit(interrupts.exit_code(exc.signum))
        except app.SweepStopped:  # said, with the resume hint
            raise
        except SystemExit as exc:
            sweep = handoff.read(path)
            if sweep and sweep.running and exc.code:  # a job's files, or the launcher, failed
                why = exc.why if isinstance(exc, callbacks.CannotWrite) else \
                    "its launcher failed (above)"
                app.stop_sweep(Path(sweep.dir), why, 1)
            raise
        _exit_status(handoff.read(path))
    finally:
        path.unlink(missing_ok=True)


def _launch_dir_importable() -> None:
    """A model of the user's own (`model._target_=mymodel.Net`) is imported from the
    directory gnnbench is launched from. `python -m gnnbench` puts that directory on the
    import path, the `gnnbench` console script does not: it is added, last, so that it never
    hides an installed package. (Hydra does not change the working directory.)"""
    import os

    launched = os.getcwd()
    if not any(os.path.abspath(p or os.curdir) == launched for p in sys.path):
        sys.path.append(launched)


def _quiet_other_ranks() -> None:
    """Under torchrun or srun every rank runs this command; rank 0 alone records the run, in
    the folder the command names. The other ranks get no run folder of their own (Hydra's
    job folder and log go to a temporary folder)."""
    import tempfile

    from gnnbench.runner import launch

    if launch.records_run():
        return
    scratch = tempfile.mkdtemp(prefix="gnnbench-rank-")
    sys.argv += ["hydra.output_subdir=null", f"hydra.run.dir={scratch}"]


def _exit_status(sweep: handoff.SweepOutcome | None) -> None:
    """The exit status of a command that returned from Hydra, from the records of its sweep
    when there is one (its jobs may have run in other processes; a single run that failed
    has exited 1 already): 128 + the signal that stopped it, 1 if a job failed or left no
    record, else 0."""
    from gnnbench.cli import app
    from gnnbench.runner import interrupts

    if sweep is None:
        return
    if sweep.running:  # its end could not be handed over (the hand-off file not written)
        print(f"gnnbench: error: how the sweep in {sweep.dir} ended is unknown; its report "
              "(report.md there) lists its jobs", file=sys.stderr)
        sys.exit(1)
    signum = interrupts.requested()
    if signum is not None:  # the jobs heard it through the sweep's stop file
        app.stop_sweep(Path(sweep.dir), interrupts.name(signum), interrupts.exit_code(signum),
                       report=False)
    if sweep.missing:
        print(f"gnnbench: error: {len(sweep.missing)} job(s) of the sweep left no record "
              "(listed in its report); to run them, run: "
              f"{app.resume_command(Path(sweep.dir))}", file=sys.stderr)
        sys.exit(1)
    if sweep.failed:
        sys.exit(1)
