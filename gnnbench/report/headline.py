"""The headline table a README opens with, made from a report's rows so that no number in
it is typed by hand: per model and dataset, what `compile=true` gives and what the fastest
compiled variant gives, with its one-off cost, graph breaks, memory and accuracy."""

from __future__ import annotations

import re
from pathlib import Path

from gnnbench.config import files
from gnnbench.report.rows import setting_note

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


def overhead_cell(row: dict) -> str:
    """Compile overhead as `median [max]` over a row's runs."""
    if row.get("compile_overhead_s") is None:
        return "–"
    return f"{row['compile_overhead_s']:.2f} [{row['compile_overhead_max_s']:.2f}]"


def headline_rows(rows: list[dict]) -> list[dict]:
    """One entry per (model, dataset): its eager row, its `compile-default` row and its
    fastest compiled row that ran (None where there is none)."""
    settings: dict[tuple, list[dict]] = {}
    for row in rows:  # rows of other precisions or layouts are settings of their own
        if row.get("distributed", "none") != "none":  # DDP rows: the report's Scaling section
            continue
        key = (row["model"], row["dataset"], row.get("precision"), row.get("layout"))
        settings.setdefault(key, []).append(row)
    out = []
    for (model, dataset, *_), members in settings.items():
        compiled = [r for r in members if r["variant"] != "eager" and r["speedup"] is not None]
        out.append({
            "model": model, "dataset": dataset + setting_note(members[0]),
            "eager": next((r for r in members if r["variant"] == "eager"), None),
            "default": next((r for r in compiled if r["variant"] == "compile-default"), None),
            "fastest": max(compiled, key=lambda r: r["speedup"]) if compiled else None,
        })
    return out


def _measure(row: dict | None, measure: str = "") -> str:
    """`measure`: "" (the train step), "inference" or "epoch"."""
    if not row:
        return "–"
    prefix = f"{measure}_" if measure else ""
    return speedup_cell(row.get(f"{measure}_speedup" if measure else "speedup"),
                        row.get(f"{prefix}ci_low" if measure else "speedup_ci_low"),
                        row.get(f"{prefix}ci_high" if measure else "speedup_ci_high"))


def to_markdown(rows: list[dict], link: str) -> str:
    head = ("| model | dataset | eager train time per epoch (ms) | `compile=true` speedup "
            "| fastest variant | its speedup [95% CI] | its inference speedup "
            "| its whole-epoch speedup | compile overhead (s), median [max] "
            "| break-even epochs "
            "| graph breaks | memory ratio | Δ test acc | runs |")
    lines = [head, "|" + "---|" * 14]
    for h in headline_rows(rows):
        eager, default, best = h["eager"], h["default"], h["fastest"] or {}
        be = best.get("break_even_epochs")
        lines.append(
            f"| {h['model']} | {h['dataset']} | {_num(eager and eager['epoch_ms'])} | "
            f"{_measure(default)} | {best.get('variant', '–')} | "
            f"{_measure(best)}"
            f" | {_measure(best, 'inference')} | {_measure(best, 'epoch')}"
            f" | {overhead_cell(best) if best else '–'} | "
            f"{_num(be, 0) if be is not None else ('never' if best else '–')} | "
            f"{_num(best.get('graph_breaks'), 0) if best.get('graph_breaks') is not None else '–'}"
            f" | {_num(best.get('memory_ratio'))} | {_num(best.get('test_acc_delta'), 4)} | "
            f"{best.get('runs', '–')} |")
    lines.append(f"\nFull results, every variant and how they were made: [{link}]({link}).")
    return "\n".join(lines)


def update_readme(readme: Path, table: str) -> None:
    """Replace what stands between the headline markers in `readme`."""
    text = readme.read_text()
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no '{START}' ... '{END}' block to replace")
    files.atomic_write(readme, pattern.sub(lambda _: f"{START}\n{table}\n{END}", text, count=1))
