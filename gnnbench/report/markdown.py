"""The report's table as Markdown."""

from __future__ import annotations

from gnnbench.report.headline import overhead_cell


def _fmt(value: object, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _cuda_graphs(row: dict) -> str:
    if row["cuda_graphs"] is None:
        return "–"
    skips = row["cudagraph_skips"]
    return row["cuda_graphs"] + (f", {skips} skipped by Inductor" if skips else "")


def to_markdown(rows: list[dict], skipped: int = 0) -> str:
    head = ("| model | dataset | variant | runs | epoch time (ms), median [IQR] | speedup "
            "[95% CI] | compile overhead (s), median [max] | break-even epochs | graph breaks "
            "| recompiles | CUDA graphs | memory ratio | test acc (mean ± std) "
            "| Δ acc vs eager | status |")
    lines = [head, "|" + "---|" * 15]
    for r in rows:
        speed = "–" if r["speedup"] is None else f"{r['speedup']:.2f}× " + (
            f"[{r['speedup_ci_low']:.2f}–{r['speedup_ci_high']:.2f}]"
            if r["speedup_ci_low"] is not None else f"[no CI: {r['steady_epochs']} epochs]")
        acc = (f"{r['test_acc_mean']:.4f} ± {r['test_acc_std']:.4f}"
               if r["test_acc_mean"] is not None else "–")
        status = r["status"] if not r["reason"] else f"{r['status']}: {r['reason'][:120]}"
        be = r["break_even_epochs"]
        lines.append(
            f"| {r['model']} | {r['dataset']} | {r['variant']} | {r['runs']} | "
            f"{_fmt(r['epoch_ms'])} [{_fmt(r['epoch_ms_iqr'])}] | {speed} | "
            f"{overhead_cell(r)} | "
            f"{_fmt(be, 0) if be is not None else ('never' if r['speedup'] else '–')} | "
            f"{_fmt(r['graph_breaks'])} | {_fmt(r['recompiles'])} | {_cuda_graphs(r)} | "
            f"{_fmt(r['memory_ratio'])} | {acc} | {_fmt(r['test_acc_delta'], 4)} | "
            f"{status.replace('|', '/')} |")
    if skipped:
        lines.append(f"\n{skipped} sweep job(s) skipped: they repeated an eager run already made.")
    return "\n".join(lines)
