"""The report's two pictures, one line per report row in the table's order (so a row sits
at the same height in both): each compiled variant's speedup with its CI, and every row's
steady epoch times. Each returns what it drew (title, axis labels, row labels), which the
tests read back instead of trusting the image."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the file-only backend
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from gnnbench.config import files
from gnnbench.records.compare import steady_steps  # noqa: E402
from gnnbench.records.model import Record  # noqa: E402
from gnnbench.report.rows import Row, groups, variant_cell  # noqa: E402

FASTER, SLOWER, UNCLEAR, EAGER = "tab:green", "tab:red", "tab:gray", "black"


def row_label(row: Row) -> str:
    unstable = " [unstable]" if row.unstable_runs else ""
    return f"{row.model}/{row.dataset}  {variant_cell(row)}{unstable}"


def _plain(ms: float) -> str:
    """3 significant digits without exponents: 5740, 35.5, 0.215."""
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.3g}"


def _on(device: str | None) -> str:
    return f" on {device}" if device else ""


def _axis(ax: plt.Axes, low: float, high: float, unit: str) -> None:
    """A log axis when the values span more than a factor of 4, with plain labelled ticks
    (1, 2, 5 per decade, or 1, 3 over many decades: `300`, not `3×10²`); else linear."""
    label = FuncFormatter(lambda v, _: f"{v:g}{unit}")
    if high / low > 4:
        subs = (1, 2, 5) if math.log10(high / low) <= 3 else (1, 3)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=subs))
        ax.xaxis.set_minor_formatter(NullFormatter())
        # From a labelled tick below the data to one above it, so both ends are read off.
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(low)) - 1,
                                              math.ceil(math.log10(high)) + 1) for m in subs]
        ax.set_xlim(max(t for t in ticks if t <= low / 1.1),
                    min(t for t in ticks if t >= high * 1.1))
    else:
        pad = (high - low) * 0.08 or 0.1 * high
        ax.set_xlim(max(low - pad, 0), high + pad)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=7, steps=[1, 2, 5, 10]))
    ax.xaxis.set_major_formatter(label)
    ax.grid(axis="x", which="major", alpha=0.3)


def _figure(n: int) -> tuple[plt.Figure, plt.Axes]:
    return plt.subplots(figsize=(10, 1.6 + 0.26 * max(n, 2)))


def _labels(fig: plt.Figure, ax: plt.Axes, rows: list[Row], path: Path) -> dict:
    labels = [row_label(r) for r in rows]
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.set_ylim(max(len(rows), 1) - 0.5, -0.5)  # the table's first row at the top
    fig.tight_layout()
    files.atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    drawn = {"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
             "labels": labels, "xscale": ax.get_xscale(),
             "xticks": [t.get_text() for t in ax.get_xticklabels()
                        if ax.get_xlim()[0] <= t.get_position()[0] <= ax.get_xlim()[1]]}
    plt.close(fig)
    return drawn


def speedup_bars(rows: list[Row], path: Path, device: str | None = None) -> dict:
    """Each row's speedup as a point with its 95 % CI, eager rows as the 1× reference."""
    fig, ax = _figure(len(rows))
    measured = [r for r in rows if r.speedup is not None]
    if not measured:
        ax.set_title(f"No speedup to show{_on(device)}: no compiled run has an eager "
                     f"reference of the same setting", fontsize=10)
        ax.text(0.5, 0.5, "Run eager (compile=false) in the same folder, or pass its folder "
                "to the report,\nor use train.paired=true.", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_xticks([])
        return _labels(fig, ax, rows, path)
    lows = [r.speedup_ci_low or r.speedup for r in measured]
    highs = [r.speedup_ci_high or r.speedup for r in measured]
    _axis(ax, min(1.0, *lows), max(1.0, *highs), "×")
    ax.axvline(1.0, color=EAGER, linewidth=1)
    for y, row in enumerate(rows):
        if row.variant == "eager":
            ax.plot(1.0, y, "D", color=EAGER, markersize=4)
            continue
        speed, low, high = row.speedup, row.speedup_ci_low, row.speedup_ci_high
        if speed is None:
            why = "failed" if row.train_ms is None else "no eager reference"
            ax.annotate(why, (1.0, y), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize=7, color=UNCLEAR)
            continue
        color = UNCLEAR if low is None or low <= 1 <= high else \
            FASTER if low > 1 else SLOWER
        if low is not None:
            ax.plot([low, high], [y, y], color=color, linewidth=2)
        ax.plot(speed, y, "o", color=color, markersize=5)
        ax.annotate(f"{speed:.2f}×" + ("" if low is not None else " (no CI)"),
                    (max(speed, high or speed), y), xytext=(5, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.set_title(f"torch.compile speedup over eager{_on(device)}\n(median train step, 95 % CI;"
                 f" green: faster, red: slower, gray: CI includes 1×; ◆ eager)", fontsize=10)
    ax.set_xlabel("speedup over eager of the same setting (×, right of 1 = faster)")
    return _labels(fig, ax, rows, path)


def epoch_time_distributions(rows: list[Row], runs: list[Record], path: Path,
                             device: str | None = None) -> dict:
    """Each row's steady epoch times (all its runs pooled) as a box: median, quartiles,
    whiskers at 1.5 IQR, every slower or faster epoch as a point."""
    fig, ax = _figure(len(rows))
    series = [[s * 1e3 for r in members if r.status == "ok" for s in steady_steps(r)]
              for _, members in groups(runs)]
    drawn = [(y, s) for y, s in enumerate(series) if s]
    if drawn:
        values = [v for _, s in drawn for v in s]
        _axis(ax, min(values), max(values), "")
        boxes = ax.boxplot([s for _, s in drawn], positions=[y for y, _ in drawn],
                           orientation="horizontal", widths=0.6, patch_artist=True,
                           flierprops={"markersize": 2, "alpha": 0.5},
                           medianprops={"color": "black"})
        for (y, _), box in zip(drawn, boxes["boxes"], strict=True):
            box.set_facecolor("lightgray" if rows[y].variant == "eager" else "tab:blue")
            ax.annotate(f"{_plain(rows[y].train_ms)} ms", (1.0, y), xytext=(4, 0),
                        xycoords=("axes fraction", "data"), textcoords="offset points",
                        va="center", fontsize=7)
    for y, s in enumerate(series):
        if not s:
            ax.annotate("no ok run", (0.01, y), xycoords=("axes fraction", "data"),
                        va="center", fontsize=7, color=UNCLEAR)
    ax.set_title(f"Train step time after warm-up{_on(device)}, seeds pooled\n(box: median and "
                 f"quartiles; gray: eager; right: median; mini-batch rows: whole train epoch)",
                 fontsize=10)
    ax.set_xlabel("time per train step (ms)")
    return _labels(fig, ax, rows, path)
