"""The headline table a README opens with, made from a report's rows so that no number in
it is typed by hand: per model and dataset, what `compile=true` gives and what the fastest
compiled variant gives, with its one-off cost, graph breaks, memory and accuracy."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from gnnbench.config import files
from gnnbench.report.rows import Row, setting_note

START, END = "<!-- headline:start -->", "<!-- headline:end -->"


def speedup_cell(value: float | None, low: float | None, high: float | None,
                 no_ci: str = "no CI") -> str:
    """A speedup with its interval; one whose interval contains 1.0 is no speedup at all
    and reads so, with the interval kept for the reader."""
    if value is None:
        return "–"
    if low is None or high is None:
        return f"{value:.2f}× [{no_ci}]"
    if low <= 1.0 <= high:
        return f"no measurable difference ({value:.2f}× [{low:.2f}–{high:.2f}])"
    return f"{value:.2f}× [{low:.2f}–{high:.2f}]"


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def overhead_cell(row: Row) -> str:
    """Compile overhead as `median [max]` over a row's runs."""
    if row.compile_overhead_s is None:
        return "–"
    return f"{row.compile_overhead_s:.2f} [{row.compile_overhead_max_s:.2f}]"


class Headline(NamedTuple):
    """A (model, dataset): its eager row, its `compile-default` row and its fastest compiled
    row that ran (None where there is none)."""

    model: str
    dataset: str
    eager: Row | None
    default: Row | None
    fastest: Row | None


def headline_rows(rows: list[Row]) -> list[Headline]:
    settings: dict[tuple, list[Row]] = {}
    for row in rows:  # rows of other precisions or layouts are settings of their own
        if (row.distributed or "none") != "none":  # DDP rows: the report's Scaling section
            continue
        settings.setdefault((row.model, row.dataset, row.precision, row.layout), []).append(row)
    out = []
    for (model, dataset, *_), members in settings.items():
        compiled = [r for r in members if r.variant != "eager" and r.speedup is not None]
        out.append(Headline(
            model, dataset + setting_note(members[0]),
            eager=next((r for r in members if r.variant == "eager"), None),
            default=next((r for r in compiled if r.variant == "compile-default"), None),
            fastest=max(compiled, key=lambda r: r.speedup) if compiled else None))
    return out


def _measure(row: Row | None, measure: str = "") -> str:
    """`measure`: "" (the train step), "inference" or "epoch"."""
    if not row:
        return "–"
    if not measure:
        return speedup_cell(row.speedup, row.speedup_ci_low, row.speedup_ci_high)
    return speedup_cell(getattr(row, f"{measure}_speedup"), getattr(row, f"{measure}_ci_low"),
                        getattr(row, f"{measure}_ci_high"))


def to_markdown(rows: list[Row], link: str) -> str:
    head = ("| model | dataset | eager train time per epoch (ms) | `compile=true` speedup "
            "| fastest variant | its speedup [95% CI] | its inference speedup "
            "| its whole-epoch speedup | compile overhead (s), median [max] "
            "| break-even epochs "
            "| graph breaks | memory ratio | Δ test acc | runs |")
    lines = [head, "|" + "---|" * 14]
    for h in headline_rows(rows):
        best = h.fastest
        if best is None:
            cells = ["–"] * 10
        else:
            be = best.break_even_epochs
            cells = [best.variant, _measure(best), _measure(best, "inference"),
                     _measure(best, "epoch"), overhead_cell(best),
                     _num(be, 0) if be is not None else "never",
                     _num(best.graph_breaks, 0) if best.graph_breaks is not None else "–",
                     _num(best.memory_ratio), _num(best.test_acc_delta, 4), best.runs]
        lines.append(f"| {h.model} | {h.dataset} | {_num(h.eager and h.eager.train_ms)} | "
                     f"{_measure(h.default)} | " + " | ".join(cells) + " |")
    lines.append(f"\nFull results, every variant and how they were made: [{link}]({link}).")
    return "\n".join(lines)


def update_readme(readme: Path, table: str) -> None:
    """Replace what stands between the headline markers in `readme`."""
    text = readme.read_text()
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no '{START}' ... '{END}' block to replace")
    files.atomic_write(readme, pattern.sub(lambda _: f"{START}\n{table}\n{END}", text, count=1))
