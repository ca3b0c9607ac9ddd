"""What compiling cost and when it paid back, by the cache state a run started with: the
report's "Compile cost" section (rows whose runs recorded where their compile time went,
i.e. runs since the cache axis) and the cumulative-time plot (eager against each compiled
variant of a setting, epoch by epoch, with the epoch where the compiled run's cumulative
time fell below eager's for good marked). Both from records only, like the table."""

from __future__ import annotations

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the file-only backend

from gnnbench.config import files  # noqa: E402
from gnnbench.records.compare import compare, cumulative, paid_back_at  # noqa: E402
from gnnbench.records.model import Record  # noqa: E402
from gnnbench.report.rows import Group, Row, groups, setting_note  # noqa: E402


def _times(run: Record) -> list[float]:
    """Every epoch's time from the first (whole epoch where recorded, else train + eval)."""
    return [r.epoch_wall_s if r.epoch_wall_s is not None else (r.train_s or 0) + (r.eval_s or 0)
            for r in run.epochs]


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _cost_rows(rows: list[Row], grouped: list[Group]) -> list[tuple[Row, list[Record], list]]:
    """Compiled rows whose runs recorded their compile times, with their eager runs."""
    eager = {setting: members for (setting, variant), members in grouped if variant == "eager"}
    found = []
    for row, ((setting, _), members) in zip(rows, grouped, strict=True):
        ok = [r for r in members if r.status == "ok" and r.compile is not None
              and r.compile.times is not None]
        if row.variant != "eager" and ok:
            found.append((row, ok, [r for r in eager.get(setting, []) if r.status == "ok"]))
    return found


def compile_cost_markdown(rows: list[Row], runs: list[Record]) -> str | None:
    """The section, or None when no run recorded its compile times."""
    found = _cost_rows(rows, groups(runs))
    if not found:
        return None
    lines = ["## Compile cost by cache state", "",
             "Compile time from dynamo's own metrics (median over runs; dynamo tracing, AOT"
             "Autograd + Inductor, kernel compilation), the cache lookups of Inductor's FX-graph"
             " cache, the projected break-even (compile time over the steady step saved), the "
             "epoch at which the compiled run's cumulative time fell below eager's for good "
             "(measured), and whole runs as configured, compile included (median wall time).",
             "", "| setting | variant | FX cache hits/misses | compile s | dynamo / AOT+Inductor"
             " / kernels s | train speedup | break-even epochs | paid back at epoch | "
             "end to end eager → compiled s |", "|" + "---|" * 9]
    for row, ok, eager in found:
        times = [r.compile.times for r in ok]
        hits = sum((r.compile.cache or {}).get("fxgraph_hits", 0) for r in ok)
        misses = sum((r.compile.cache or {}).get("fxgraph_misses", 0) for r in ok)
        split = " / ".join(_fmt(_median([getattr(t, k) for t in times]), 2)
                           for k in ("dynamo_s", "aot_inductor_s", "kernel_compile_s"))
        cmp = compare(eager, ok) if eager else None
        paid = [paid_back_at(_times(eager[0]), _times(r)) for r in ok] if eager else []
        paid_cell = ("–" if not paid else "never" if all(p is None for p in paid)
                     else _fmt(_median(paid), 0))
        e2e = (cmp.end_to_end or {}) if cmp is not None else {}
        end = (f"{_fmt(e2e.get('eager_wall_s'))} → {_fmt(e2e.get('compiled_wall_s'))}"
               if e2e else "–")
        lines.append(
            f"| {row.model}/{row.dataset}{setting_note(row)} | {row.variant} | {hits}/{misses} "
            f"| {_fmt(_median([t.total_s for t in times]), 2)} | {split} | "
            f"{_fmt(row.speedup, 2) + '×' if row.speedup is not None else '–'} | "
            f"{_fmt(row.break_even_epochs, 0)} | {paid_cell} | {end} |")
    return "\n".join(lines)


def cumulative_plot(rows: list[Row], runs: list[Record], path: Path) -> dict | None:
    """Cumulative training time against epochs, eager and each compiled variant of every
    setting with compile times recorded (a run per line: the first ok run of each row), the
    epoch where a compiled line crosses below eager's for good marked. None when there is
    nothing to draw (no file written)."""
    found = [(row, ok, eager) for row, ok, eager in _cost_rows(rows, groups(runs)) if eager]
    if not found:
        return None
    settings = sorted({(f"{r.model}/{r.dataset}{setting_note(r)}", id(e[0])): e[0]
                       for r, _, e in found}.items())
    fig, axes = plt.subplots(len(settings), 1, figsize=(8, 3.2 * len(settings)), squeeze=False)
    titles: list[str] = []
    lines: list[str] = []
    crossings: list[tuple[str, int]] = []
    for ax, ((label, _), eager) in zip(axes[:, 0], settings, strict=True):
        reference = _times(eager)
        ax.plot(range(1, len(reference) + 1), cumulative(reference), color="black", label="eager")
        lines.append(f"{label} eager")
        for row, ok, eager_runs in found:
            if eager_runs[0] is not eager:
                continue
            mine = _times(ok[0])
            line, = ax.plot(range(1, len(mine) + 1), cumulative(mine), label=row.variant)
            lines.append(f"{label} {row.variant}")
            at = paid_back_at(reference, mine)
            if at is not None:
                ax.plot(at, cumulative(mine)[at - 1], "o", color=line.get_color())
                ax.annotate(f"epoch {at}", (at, cumulative(mine)[at - 1]), xytext=(4, -10),
                            textcoords="offset points", fontsize=7, color=line.get_color())
                crossings.append((f"{label} {row.variant}", at))
        ax.set_title(f"{label}: cumulative time, compile included", fontsize=10)
        ax.set_xlabel("epochs")
        ax.set_ylabel("seconds since the first epoch")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        titles.append(ax.get_title())
    fig.tight_layout()
    files.atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)
    return dict(title=titles, lines=lines, crossings=crossings)

