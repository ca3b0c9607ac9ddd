"""`python -m gnnbench [overrides]`, `gnnbench report DIR ...`: the top layer."""

from __future__ import annotations

import sys
import warnings


def main() -> None:
    # PyG's import-time notice about torch.jit is noise for a benchmark's user.
    warnings.filterwarnings(
        "ignore", message=r".*torch\.jit\.script.*deprecated", category=FutureWarning
    )
    if sys.argv[1:2] == ["report"]:  # `gnnbench report DIR`
        from gnnbench.report.cli import main as report_main

        sys.exit(report_main(sys.argv[2:]))
    from gnnbench import config
    from gnnbench.runner import interrupts

    try:
        config.check_group_overrides(sys.argv[1:])
    except config.ConfigError as exc:
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        sys.exit(2)
    from gnnbench.cli import app
    from gnnbench.report import callback

    interrupts.install()
    try:
        app.job()
    except interrupts.Interrupted as exc:  # a second signal outside a run: stop now
        print(f"gnnbench: stopped by {exc.args[0]}", file=sys.stderr)
        sys.exit(interrupts.exit_code(exc.signum))
    if app.failed_runs or callback.LAST_SWEEP.get("failed"):
        sys.exit(1)
