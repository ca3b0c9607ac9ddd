"""The report's two pictures: speedup with its CI, and each variant's epoch times."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the file-only backend

from gnnbench.config import variant_label  # noqa: E402
from gnnbench.records.compare import steady_steps  # noqa: E402


def speedup_bars(rows: list[dict], path: Path) -> None:
    rows = [r for r in rows if r["speedup"] is not None]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows) + 2), 4))
    if rows:
        labels = [f"{r['model']}/{r['dataset']}\n{r['variant']}" for r in rows]
        values = [r["speedup"] for r in rows]
        # A row without a CI (too few epochs) gets a zero-length error bar: no interval drawn.
        no_ci = [r["speedup_ci_low"] is None for r in rows]
        errors = [[0.0 if none else v - r["speedup_ci_low"]
                   for v, r, none in zip(values, rows, no_ci, strict=True)],
                  [0.0 if none else r["speedup_ci_high"] - v
                   for v, r, none in zip(values, rows, no_ci, strict=True)]]
        ax.bar(range(len(rows)), values, yerr=errors, capsize=4, color="tab:blue")
        ax.set_xticks(range(len(rows)), labels, rotation=45, ha="right", fontsize=7)
    else:
        ax.text(0.5, 0.5, "no compiled run with an eager reference", ha="center",
                transform=ax.transAxes)
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_ylabel("speedup over eager (median epoch, 95% CI)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def epoch_time_distributions(runs: list[dict], path: Path) -> None:
    series: dict[str, list[float]] = {}
    for run in runs:
        if run["status"] != "ok":
            continue
        cfg = run["config"]
        label = f"{cfg['model']['name']}/{cfg['dataset']['name']}\n{variant_label(cfg)}"
        series.setdefault(label, []).extend(s * 1e3 for s in steady_steps(run))
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(series) + 2), 4))
    if series:
        ax.boxplot(list(series.values()), showfliers=True)
        ax.set_xticks(range(1, len(series) + 1), list(series), rotation=45, ha="right",
                      fontsize=7)
        ax.set_yscale("log")
    ax.set_ylabel("train epoch time after warm-up (ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
