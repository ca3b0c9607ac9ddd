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
    if {"-h", "--help"} & set(sys.argv[1:]):
        from gnnbench.cli.usage import page

        print(page(), end="")
        sys.exit(0)
    if "--hydra-help" in sys.argv[1:]:
        sys.argv = [a if a != "--hydra-help" else "--help" for a in sys.argv]
    from gnnbench import config
    from gnnbench.runner import interrupts

    try:
        config.check_overrides(sys.argv[1:])
    except config.ConfigError as exc:
        from gnnbench.cli.invalid import record_invalid_command

        record_invalid_command(sys.argv[1:], str(exc))
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        sys.exit(1)
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
