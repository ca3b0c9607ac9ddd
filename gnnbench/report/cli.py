"""`python -m gnnbench.report DIR [DIR ...]` (also `gnnbench report`): the comparison report
over the records under one or more folders (sweeps, single runs, copies from other hosts)."""

from __future__ import annotations

import argparse
import csv
import gc
import io
import os
import sys
from pathlib import Path

from gnnbench.config import files
from gnnbench.records import publish, store, sweep
from gnnbench.records.model import Record
from gnnbench.report import compile_cost, header, headline, parallel, plots
from gnnbench.report.markdown import report_markdown
from gnnbench.report.rows import Row, build_rows, columns


def render(folders: list[Path], title: str) -> tuple[list[Record], list[Row], str, str]:
    """(runs, rows, report.md, report.csv) from every record under `folders`: what
    `write_report` writes, and what a committed report must equal."""
    # Records no reader can use (a command that never composed has no config) are skipped
    # with a warning each, by the store.
    found = store.find(folders)
    runs = [r for r in found if r.serving is None]  # training runs: the table's
    rows, incomplete = parallel.both(lambda: build_rows(runs),
                                     lambda: completeness(folders, runs))
    markdown = report_markdown(title, runs, rows, serving=[r for r in found if r.serving])
    if incomplete:  # first thing under the title: the figures below miss these jobs
        head, rest = markdown.split("\n\n", 1)
        markdown = f"{head}\n{incomplete}\n\n{rest}"
    table = io.StringIO(newline="")
    fields = columns(rows)
    writer = csv.DictWriter(table, fieldnames=fields)
    writer.writeheader()
    writer.writerows(row.cells(fields) for row in rows)
    return runs, rows, markdown, table.getvalue()


def write_report(folders: list[Path], out: Path | None = None, log_to_wandb: bool = True,
                 upload_hint: bool = False) -> list[Row]:
    """Write report.md, report.csv, speedup.png and epoch_times.png into `out` (default: the
    first folder), from every record under `folders`. `upload_hint`: say how to upload the
    report's W&B run when it was logged offline (a sweep says it once for all its runs)."""
    out = Path(out or folders[0])
    runs, rows, markdown, table = render(folders, out.name)
    out.mkdir(parents=True, exist_ok=True)
    files.atomic_write(out / "report.md", markdown)
    files.atomic_write(out / "report.csv", table)
    device = ", ".join(header.devices(runs))

    def some_plots() -> bool:  # the plots in two halves, each on a core where there are two
        plots.speedup_bars(rows, out / "speedup.png", device)
        return bool(compile_cost.cumulative_plot(rows, runs, out / "cumulative_time.png"))

    _, cumulative = parallel.both(
        lambda: plots.epoch_time_distributions(rows, runs, out / "epoch_times.png", device),
        some_plots)
    print(markdown)
    print(f"report: {out / 'report.md'} (also report.csv, speedup.png, epoch_times.png"
          f"{', cumulative_time.png' if cumulative else ''})")
    if log_to_wandb and runs:
        settings = runs[0].config.wandb
        fields = columns(rows)
        offline = publish.publish_report([row.cells(fields) for row in rows], fields, settings, out,
                                         settings.group or out.name)
        if offline and upload_hint:
            print(publish.upload_hint(offline), flush=True)
    return rows


def completeness(folders: list[Path], runs: list[Record]) -> str:
    """A warning section for sweeps with jobs that left no record or were interrupted. A
    sweep is named by its path from the parent of the first folder reported on (for a
    report over one sweep: the sweep's own name), so a report read or remade in another
    place or from another directory says the same."""
    lines = []
    base = Path(folders[0]).resolve().parent if folders else Path.cwd()
    for p in sweep.progress(folders, runs):
        if not (p.missing or p.interrupted):
            continue
        where = os.path.relpath(Path(p.sweep).resolve(), base)
        lines.append(f"\n**Sweep incomplete: {where}** ({p.planned} jobs planned; "
                     f"{len(p.missing)} without a record, {len(p.interrupted)} "
                     "interrupted). Re-run its command with `hydra.sweep.dir=` that folder to "
                     "finish it; jobs with a final record are kept.\n")
        lines += [f"- no record: job {job}" for job in p.missing]
        lines += [f"- interrupted: job {job}" for job in p.interrupted]
    return "\n".join(lines)


def exit_now(code: int) -> None:
    """End the report command without freeing what it read: a process about to exit gains
    nothing from deallocating a million record objects one by one (a third of a second
    over 2,000 records). Output is flushed first; only where no W&B run was made in this
    process, whose own exit handlers must run. For `python -m gnnbench.report` only: a
    script calling `gnnbench.cli.main()` can still catch `gnnbench report`'s SystemExit."""
    if "wandb" in sys.modules:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """The command: thousands of records make millions of objects and no reference cycle,
    and the cyclic collector's passes over them were a third of its time: it is off while
    the command runs (only here: a sweep's process keeps it)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(argv)
    finally:
        if collecting:
            gc.enable()


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="gnnbench report",
        description="Compare the runs under run or sweep folders (compiled against eager "
                    "runs of the same setting, matched across all the folders given).")
    parser.add_argument("directories", type=Path, nargs="+", metavar="DIR")
    parser.add_argument("--out", type=Path, help="where to write the report (default: the "
                                                 "first DIR)")
    parser.add_argument("--no-wandb", action="store_true", help="do not log the table to W&B")
    parser.add_argument("--readme", type=Path, metavar="FILE",
                        help="also write the headline table into FILE, between its "
                             f"'{headline.START}' and '{headline.END}' lines")
    args = parser.parse_args(argv)
    for folder in args.directories:
        if not folder.is_dir():
            print(f"gnnbench: error: {folder} is not a directory", file=sys.stderr)
            return 2
    if not any(next(f.rglob(store.RESULTS_FILE), None) for f in args.directories):
        print(f"gnnbench: error: no {store.RESULTS_FILE} under "
              f"{', '.join(map(str, args.directories))}", file=sys.stderr)
        return 2
    out = args.out or args.directories[0]
    rows = write_report(args.directories, out, log_to_wandb=not args.no_wandb,
                        upload_hint=True)
    if args.readme:
        link = os.path.relpath(out / "report.md", args.readme.resolve().parent)
        try:
            headline.update_readme(args.readme, headline.to_markdown(rows, link))
        except (OSError, ValueError) as exc:
            print(f"gnnbench: error: {exc}", file=sys.stderr)
            return 2
        print(f"headline table written into {args.readme}")
    return 0
