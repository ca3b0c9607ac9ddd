"""Human-readable views of results: the few lines a run prints when it ends, and the
comparison report over a sweep (Markdown, CSV, plots, a W&B table)."""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from gnnbench import config, headline, plots, timing, tracking


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.2f} ms"


def _bytes(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.1f} MiB"


def variant(cfg: dict) -> str:
    if cfg["compile"] is not True:
        return "eager"
    c = cfg["compiler"]
    return (f"compile mode={c['mode']} scope={c['scope']} dynamic={c['dynamic']} "
            f"fullgraph={c['fullgraph']} backend={c['backend']}")


def format_summary(result: dict, where: str | None = None) -> str:
    cfg = result["config"]
    device = result["env"]["device"] or "n/a"
    lines = [f"gnnbench {result['name']}: {cfg['model']['name']} on {cfg['dataset']['name']}, "
             f"{variant(cfg)}, device {device} -> status {result['status']}"]
    if result["reason"]:
        lines.append(f"  reason: {result['reason']}")
    t = result.get("timing") or {}
    if "train_step_s" in t:
        step, ev = t["train_step_s"], t["eval_s"]
        unit = "train step" if (result.get("batching") or {}).get("mode") == "full" else \
            "train epoch"
        lines.append(f"  {unit}: median {_ms(step['median'])} (IQR {_ms(step['iqr'])}, "
                     f"n={step['n']} epochs after {t['warmup_epochs']} warm-up); "
                     f"eval: median {_ms(ev['median'])}")
        if "sample_s" in t:
            b = result["batching"]
            lines.append(f"  per epoch ({b['batches_per_epoch']} batches, {b['sampler']} "
                         f"sampler): sampling {_ms(t['sample_s']['median'])}, transfer "
                         f"{_ms(t['transfer_s']['median'])}, compute "
                         f"{_ms(t['compute_s']['median'])}")
        first = f"  first epoch: {t['first_epoch_s']:.2f} s"
        if t.get("compile_overhead_s") is not None:
            first += f"; compile overhead {t['compile_overhead_s']:.2f} s"
        lines.append(first)
    if result.get("compile"):
        c = result["compile"]
        lines.append(f"  dynamo: {c['graphs']} graph(s), {c['graph_breaks']} graph break(s), "
                     f"{c['recompiles']} recompilation(s)")
    if result.get("accuracy"):
        a = result["accuracy"]
        lines.append(f"  accuracy: test {a['test_at_best_val']:.4f} at best val "
                     f"{a['best_val']:.4f} (epoch {a['best_epoch']}); final test "
                     f"{a['final']['test']:.4f}")
    if result.get("memory"):
        m = result["memory"]
        lines.append(f"  peak memory: {_bytes(m['peak_bytes'])} ({m['kind']})")
    lines.append(f"  wall time {t.get('wall_s', 0):.1f} s"
                 + (f"; results: {where}" if where else ""))
    return "\n".join(lines)


# --- The comparison report over a run or sweep directory --------------------------------

COLUMNS = ["model", "dataset", "variant", "runs", "status", "steady_epochs", "epoch_ms",
           "epoch_ms_iqr",
           "run_median_ms_min", "run_median_ms_max", "speedup", "speedup_ci_low",
           "speedup_ci_high", "compile_overhead_s", "compile_overhead_max_s",
           "break_even_epochs", "graph_breaks",
           "recompiles", "memory_ratio", "test_acc_mean", "test_acc_std", "test_acc_delta",
           "reason"]


def variant_label(cfg: dict) -> str:
    """eager, or compile-<mode> plus every compiler setting that differs from the default."""
    if cfg["compile"] is not True:
        return "eager"
    c = cfg["compiler"]
    extras = ["step" if c.get("scope") == "step" else "",
              f"dynamic={c['dynamic']}" if c["dynamic"] is not True else "",
              "fullgraph=False" if c["fullgraph"] is not True else "",
              f"backend={c['backend']}" if c["backend"] != "inductor" else "",
              "paired" if cfg["train"].get("paired") else ""]
    return " ".join([f"compile-{c['mode']}", *[e for e in extras if e]])


def load_runs(root: Path) -> list[dict]:
    runs = []
    for path in sorted(Path(root).rglob(tracking.RESULTS_FILE)):
        result = tracking.read_results(path)
        result["_dir"] = str(path.parent)
        runs.append(result)
    return runs


def _setting(cfg: dict) -> str:
    """The configuration apart from compile settings and seed: what one row compares."""
    plain = json.loads(config.reference_key(cfg))
    plain["train"].pop("seed", None)
    return json.dumps(plain, sort_keys=True)


def _steps(run: dict, prefix: str = "") -> list[float]:
    warmup = run["timing"]["warmup_epochs"]
    return [r[f"{prefix}train_s"] for r in run["epochs"][warmup:]]


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def build_rows(runs: list[dict]) -> list[dict]:
    """One row per (setting, variant); compiled rows against the eager runs of the same
    setting (or, for paired runs, against their in-process eager twins)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        if run["status"] == "skipped":
            continue
        groups.setdefault((_setting(run["config"]), variant_label(run["config"])), []).append(run)
    rows = []
    def order(item: tuple) -> tuple:
        (setting, variant), members = item
        cfg = members[0]["config"]
        return cfg["model"]["name"], cfg["dataset"]["name"], setting, variant != "eager", variant

    for (setting, variant), members in sorted(groups.items(), key=order):
        cfg = members[0]["config"]
        ok = [r for r in members if r["status"] == "ok"]
        failed = [r for r in members if r["status"] != "ok"]
        row = {c: None for c in COLUMNS}
        row.update(model=cfg["model"]["name"], dataset=cfg["dataset"]["name"], variant=variant,
                   runs=f"{len(ok)}/{len(members)} ok",
                   status="ok" if not failed else failed[0]["status"],
                   reason=failed[0]["reason"] if failed else None)
        rows.append(row)
        if not ok:
            continue
        steps = [s for r in ok for s in _steps(r)]
        stats = timing.summarize(steps)
        medians = [r["timing"]["train_step_s"]["median"] for r in ok]
        accs = [r["accuracy"]["test_at_best_val"] for r in ok]
        row.update(steady_epochs=stats["n"], epoch_ms=stats["median"] * 1e3,
                   epoch_ms_iqr=stats["iqr"] * 1e3,
                   run_median_ms_min=min(medians) * 1e3, run_median_ms_max=max(medians) * 1e3)
        row["test_acc_mean"], row["test_acc_std"] = _mean_std(accs)
        if variant == "eager":
            continue
        overheads = [r["timing"]["compile_overhead_s"] for r in ok
                     if r["timing"]["compile_overhead_s"] is not None]
        # The median is what a run with a warm Inductor cache pays; the max is usually the
        # first, cold-cache compile of a sweep (autotuning modes: minutes, not seconds).
        row["compile_overhead_s"] = _median(overheads)
        row["compile_overhead_max_s"] = max(overheads, default=None)
        row["graph_breaks"] = max(r["compile"]["graph_breaks"] for r in ok)
        row["recompiles"] = max(r["compile"]["recompiles"] for r in ok)
        if cfg["train"].get("paired"):
            eager_steps = [s for r in ok for s in _steps(r, "eager_")]
            eager_accs = [r["paired"]["accuracy"]["test_at_best_val"] for r in ok]
            eager_peak = None
        else:
            eager = groups.get((setting, "eager"), [])
            eager = [r for r in eager if r["status"] == "ok"]
            if not eager:
                continue
            eager_steps = [s for r in eager for s in _steps(r)]
            eager_accs = [r["accuracy"]["test_at_best_val"] for r in eager]
            eager_peak = _median([r["memory"]["peak_bytes"] for r in eager])
        cmp = timing.compare(eager_steps, steps, row["compile_overhead_s"])
        row.update(speedup=cmp["speedup"], speedup_ci_low=cmp["speedup_ci95"][0],
                   speedup_ci_high=cmp["speedup_ci95"][1],
                   break_even_epochs=cmp["break_even_epochs"],
                   test_acc_delta=row["test_acc_mean"] - statistics.fmean(eager_accs))
        peak = _median([r["memory"]["peak_bytes"] for r in ok])
        if eager_peak:
            row["memory_ratio"] = peak / eager_peak
    return rows


def _fmt(value: object, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def to_markdown(rows: list[dict], skipped: int = 0) -> str:
    head = ("| model | dataset | variant | runs | epoch time (ms), median [IQR] | speedup "
            "[95% CI] | compile overhead (s), median [max] | break-even epochs | graph breaks "
            "| recompiles | memory ratio | test acc (mean ± std) | Δ acc vs eager | status |")
    lines = [head, "|" + "---|" * 14]
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
            f"{headline.overhead_cell(r)} | "
            f"{_fmt(be, 0) if be is not None else ('never' if r['speedup'] else '–')} | "
            f"{_fmt(r['graph_breaks'])} | {_fmt(r['recompiles'])} | {_fmt(r['memory_ratio'])} "
            f"| {acc} | {_fmt(r['test_acc_delta'], 4)} | {status.replace('|', '/')} |")
    if skipped:
        lines.append(f"\n{skipped} sweep job(s) skipped: they repeated an eager run already made.")
    return "\n".join(lines)


def write_report(root: Path, log_to_wandb: bool = True) -> list[dict]:
    """Write report.md, report.csv, speedup.png and epoch_times.png into `root`."""
    root = Path(root)
    runs = load_runs(root)
    rows = build_rows(runs)
    skipped = sum(r["status"] == "skipped" for r in runs)
    markdown = to_markdown(rows, skipped)
    (root / "report.md").write_text(f"# gnnbench report: {root.name}\n\n{markdown}\n")
    with open(root / "report.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    plots.speedup_bars(rows, root / "speedup.png")
    plots.epoch_time_distributions(runs, root / "epoch_times.png", variant_label)
    print(markdown)
    print(f"report: {root / 'report.md'} (also report.csv, speedup.png, epoch_times.png)")
    if log_to_wandb and runs:
        cfg = runs[0]["config"]
        group = cfg["wandb"]["group"] or root.name
        tracking.publish_report(rows, COLUMNS, cfg["wandb"], root, group)
    return rows


class SweepReport(Callback):
    """Hydra callback: the report of a multirun, written when its last job ends."""

    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        write_report(Path(config.hydra.sweep.dir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gnnbench report",
                                     description="Compare the runs under a run or sweep directory.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--no-wandb", action="store_true", help="do not log the table to W&B")
    parser.add_argument("--readme", type=Path, metavar="FILE",
                        help="also write the headline table into FILE, between its "
                             f"'{headline.START}' and '{headline.END}' lines")
    args = parser.parse_args(argv)
    if not args.directory.is_dir():
        print(f"gnnbench: error: {args.directory} is not a directory", file=sys.stderr)
        return 2
    if not any(args.directory.rglob(tracking.RESULTS_FILE)):
        print(f"gnnbench: error: no results.json under {args.directory}", file=sys.stderr)
        return 2
    rows = write_report(args.directory, log_to_wandb=not args.no_wandb)
    if args.readme:
        link = os.path.relpath(args.directory / "report.md", args.readme.resolve().parent)
        try:
            headline.update_readme(args.readme, headline.to_markdown(rows, link))
        except (OSError, ValueError) as exc:
            print(f"gnnbench: error: {exc}", file=sys.stderr)
            return 2
        print(f"headline table written into {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
