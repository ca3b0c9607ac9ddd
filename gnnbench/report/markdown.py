"""report.md: what was measured where (header), the table, and the runs whose timings
should not be quoted without a second look."""

from __future__ import annotations

from gnnbench.report import header
from gnnbench.report.headline import overhead_cell
from gnnbench.report.rows import groups, run_stability, setting_note, stability_warnings


def _fmt(value: object, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _cuda_graphs(row: dict) -> str:
    if row["cuda_graphs"] is None:
        return "–"
    skips = row["cudagraph_skips"]
    return row["cuda_graphs"] + (f", {skips} skipped by Inductor" if skips else "")


def _accuracy(row: dict) -> str:
    if row["test_acc_mean"] is None:
        return "–"
    if row["test_acc_std"] is None:  # one run: no spread to show
        return f"{row['test_acc_mean']:.4f} (1 run)"
    return f"{row['test_acc_mean']:.4f} ± {row['test_acc_std']:.4f}"


def _stability(row: dict, disagree: bool) -> str:
    if row["epoch_ms"] is None:
        return "–"
    unstable, parts = row["unstable_runs"], []
    if unstable:
        parts.append(f"{unstable} of {row['runs'].split('/')[0]} unstable")
    if disagree:
        parts.append("runs disagree")
    return "; ".join(parts) or ("too few epochs" if unstable is None else "ok")


def _speedup(row: dict, measure: str) -> str:
    value = row.get(f"{measure}_speedup")
    if value is None:
        return "–"
    low, high = row.get(f"{measure}_ci_low"), row.get(f"{measure}_ci_high")
    return f"{value:.2f}×" + (f" [{low:.2f}–{high:.2f}]" if low is not None else "")


def to_markdown(rows: list[dict], skipped: int = 0,
                disagree: list[bool] | None = None) -> str:
    """The table; `disagree[i]`: row i's runs disagree with each other (stability)."""
    disagree = disagree or [False] * len(rows)
    head = ("| model | dataset | variant | runs | epoch time (ms), median [IQR] | speedup "
            "[95% CI] | inference speedup | whole-epoch speedup | compile overhead (s), "
            "median [max] | break-even epochs | graph breaks | recompiles | CUDA graphs "
            "| memory ratio | test acc (mean ± std) | Δ acc vs eager | stability | status |")
    lines = [head, "|" + "---|" * 18]
    for r, runs_disagree in zip(rows, disagree, strict=True):
        speed = "–" if r["speedup"] is None else f"{r['speedup']:.2f}× " + (
            f"[{r['speedup_ci_low']:.2f}–{r['speedup_ci_high']:.2f}]"
            if r["speedup_ci_low"] is not None else f"[no CI: {r['steady_epochs']} epochs]")
        status = r["status"] if not r["reason"] else f"{r['status']}: {r['reason'][:120]}"
        be = r["break_even_epochs"]
        lines.append(
            f"| {r['model']} | {r['dataset']} | {r['variant']}{setting_note(r)} | {r['runs']} | "
            f"{_fmt(r['epoch_ms'])} [{_fmt(r['epoch_ms_iqr'])}] | {speed} | "
            f"{_speedup(r, 'inference')} | {_speedup(r, 'epoch')} | {overhead_cell(r)} | "
            f"{_fmt(be, 0) if be is not None else ('never' if r['speedup'] else '–')} | "
            f"{_fmt(r['graph_breaks'])} | {_fmt(r['recompiles'])} | {_cuda_graphs(r)} | "
            f"{_fmt(r['memory_ratio'])} | {_accuracy(r)} | {_fmt(r['test_acc_delta'], 4)} | "
            f"{_stability(r, runs_disagree)} | {status.replace('|', '/')} |")
    if skipped:
        lines.append(f"\n{skipped} sweep job(s) skipped: they repeated an eager run already made.")
    return "\n".join(lines)


def report_markdown(title: str, runs: list[dict], rows: list[dict]) -> str:
    """The whole of report.md: header, table, stability warnings."""
    members = [m for _, m in groups(runs)]
    warnings = [stability_warnings(m) for m in members]
    disagree = [any(who == "runs" for who, _ in found) for found in warnings]
    verdicts = [v for m in members for v in map(run_stability, m) if v is not None]
    skipped = sum(r["status"] == "skipped" for r in runs)
    parts = [f"# gnnbench report: {title}", header.header(runs, rows, verdicts),
             to_markdown(rows, skipped, disagree)]
    listed = [f"- `{who}`: {warning}" if who != "runs" else
              f"- {r['model']}/{r['dataset']} {r['variant']}, across its runs: {warning}"
              for r, found in zip(rows, warnings, strict=True) for who, warning in found]
    if listed:
        parts.append("## Timing stability warnings\n\n"
                     "Quote these rows' times and speedups with care (README, \"Timing "
                     f"stability\"). {header.thresholds_line()}\n\n" + "\n".join(listed))
    return "\n\n".join(parts) + "\n"
