"""report.md: what was measured where (header), the table, and the runs whose timings
should not be quoted without a second look."""

from __future__ import annotations

from gnnbench.records.compare import run_stability
from gnnbench.records.model import Env, Record
from gnnbench.report import header, sites
from gnnbench.report.compile_cost import compile_cost_markdown
from gnnbench.report.headline import overhead_cell, speedup_cell
from gnnbench.report.rows import Row, groups, stability_warnings, variant_cell
from gnnbench.report.serving import serving_markdown
from gnnbench.report.summary import PAIRED_EPOCH


def _fmt(value: object, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _cuda_graphs(row: Row) -> str:
    if row.cuda_graphs is None:
        return "–"
    skips = row.cudagraph_skips
    return row.cuda_graphs + (f", {skips} skipped by Inductor" if skips else "")


def _accuracy(row: Row) -> str:
    if row.test_acc_mean is None:
        return "–"
    if row.test_acc_std is None:  # one run: no spread to show
        cell = f"{row.test_acc_mean:.4f} (1 run)"
    else:
        cell = f"{row.test_acc_mean:.4f} ± {row.test_acc_std:.4f}"
    near = row.near_chance_runs
    return cell + (f"; **{near} near chance**" if near else "")


def _stability(row: Row, disagree: bool) -> str:
    if row.train_ms is None:
        return "–"
    unstable, parts = row.unstable_runs, []
    if unstable:
        parts.append(f"{unstable} of {row.runs.split('/')[0]} unstable")
    if disagree:
        parts.append("runs disagree")
    return "; ".join(parts) or ("too few epochs" if unstable is None else "ok")


def _paired(row: Row) -> bool:
    return "paired" in row.variant.split()


def _speedup(row: Row, measure: str) -> str:
    value = getattr(row, f"{measure}_speedup")
    if value is None and measure == "epoch" and _paired(row) and row.speedup is not None:
        return "– (paired)"
    return speedup_cell(value, getattr(row, f"{measure}_ci_low"),
                        getattr(row, f"{measure}_ci_high"))


def _run_ratios(row: Row) -> str:
    low, high = row.run_ratio_min, row.run_ratio_max
    if low is None:
        return "–"
    return f"{low:.2f}×" if abs(high - low) < 0.005 else f"{low:.2f}–{high:.2f}×"


def _pays_back(row: Row) -> str:
    cells = [f"{state}: {cell}" for state, cell in
             (("cold cache", row.pays_back_cold), ("warm cache", row.pays_back_warm),
              ("cache not recorded", row.pays_back_unrecorded)) if cell]
    return "; ".join(cells) or "–"


def to_markdown(rows: list[Row], skipped: int = 0,
                disagree: list[bool] | None = None) -> str:
    """The table; `disagree[i]`: row i's runs disagree with each other (stability)."""
    disagree = disagree or [False] * len(rows)
    head = ("| model | dataset | variant | runs | train time (ms), median [IQR] | speedup "
            "[95% CI] | per-run ratios | inference speedup | whole-epoch speedup | end-to-end "
            "speedup | compile overhead (s), median [max] | break-even epochs | paid back "
            "(measured) | graph breaks | recompiles | CUDA graphs "
            "| memory ratio | test acc (mean ± std) | Δ acc vs eager | stability | status |")
    lines = [head, "|" + "---|" * 21]
    for r, runs_disagree in zip(rows, disagree, strict=True):
        speed = "–" if r.speedup is None else speedup_cell(
            r.speedup, r.speedup_ci_low, r.speedup_ci_high,
            f"no CI: {r.steady_epochs} epochs")
        if r.speedup is not None and r.ci_level == "epochs":
            speed += " (within-process)"
        e2e = r.end_to_end_speedup
        status = r.status if not r.reason else f"{r.status}: {r.reason[:120]}"
        be = r.break_even_epochs
        lines.append(
            f"| {r.model} | {r.dataset} | {variant_cell(r)} | {r.runs} | "
            f"{_fmt(r.train_ms)} [{_fmt(r.train_ms_iqr)}] | {speed} | "
            f"{_run_ratios(r)} | {_speedup(r, 'inference')} | {_speedup(r, 'epoch')} | "
            f"{'–' if e2e is None else f'{e2e:.2f}×'} | {overhead_cell(r)} | "
            f"{_fmt(be, 0) if be is not None else ('never' if r.speedup else '–')} | "
            f"{_pays_back(r)} | "
            f"{_fmt(r.graph_breaks)} | {_fmt(r.recompiles)} | {_cuda_graphs(r)} | "
            f"{_fmt(r.memory_ratio)} | {_accuracy(r)} | {_fmt(r.test_acc_delta, 4)} | "
            f"{_stability(r, runs_disagree)} | {status.replace('|', '/')} |")
    if any(_paired(r) and r.speedup is not None for r in rows):
        lines.append(f"\nPaired rows have no whole-epoch speedup: {PAIRED_EPOCH} (the "
                     "compiled model's and its eager twin's); their train steps and inference "
                     "are timed apart.")
    if skipped:
        lines.append(f"\n{skipped} sweep job(s) skipped: they repeated an eager run already made.")
    return "\n".join(lines)


def scaling_markdown(rows: list[Row]) -> str | None:
    """DDP rows: throughput and scaling against one rank; None when there are none."""
    ddp = [r for r in rows if r.distributed == "ddp" and r.train_ms is not None]
    if not ddp:
        return None
    lines = ["## Scaling (DDP)", "",
             "Train time is the slowest rank's train part of an epoch (ranks wait for each "
             "other at every gradient all-reduce); throughput is training nodes per second of "
             "it; scaling efficiency is the speedup over the same setting and variant on one "
             "rank divided by the ranks (1.00 is perfect), with a bootstrap 95 % CI. Each "
             "run's per-rank split (sampling, transfer, compute) is in its `results.json` "
             "(`timing.ranks`).", "",
             "| model | dataset | variant | ranks | runs | train time (ms), median | "
             "throughput (nodes/s) | speedup vs 1 rank | scaling efficiency [95% CI] |",
             "|" + "---|" * 9]
    for r in ddp:
        eff = "–" if r.scaling_efficiency is None else f"{r.scaling_efficiency:.2f}" + (
            f" [{r.scaling_efficiency_ci_low:.2f}–{r.scaling_efficiency_ci_high:.2f}]"
            if r.scaling_efficiency_ci_low is not None else " [no CI]")
        rate = "–" if r.throughput_nodes_s is None else f"{r.throughput_nodes_s:,.0f}"
        lines.append(f"| {r.model} | {r.dataset} | {r.variant} | {r.world_size} | "
                     f"{r.runs} | {_fmt(r.train_ms)} | {rate} | "
                     f"{_fmt(r.scaling_speedup)} | {eff} |")
    return "\n".join(lines)


def shapes_markdown(rows: list[Row]) -> str | None:
    """Rows of batches of whole graphs and heterogeneous graphs: what shapes their runs met
    and what that cost; None when there are none."""
    shaped = [r for r in rows if r.shape_policy is not None]
    if not shaped:
        return None
    lines = ["## Shapes (graph batches, heterogeneous graphs)", "",
             "How batches met the model (`train.shape_policy`), the most distinct input "
             "shapes a run met, recompilations per epoch after the warm-up (mean over runs; "
             "the first epoch's are in `recompiles` above), the share of node rows and edges "
             "computed that were padding, the runs that hit dynamo's recompile limit "
             "(with fullgraph=True their status is `compile_error`), and the speedup of the "
             "train step alone (forward, backward, optimizer over the epoch's batches, "
             "without sampling or collating them and moving them to the device; intervals "
             "as above).", "",
             "| model | dataset | variant | runs | shape policy | distinct shapes | "
             "recompiles per epoch | padding share | recompile limit hit | "
             "train step speedup (no loading) |",
             "|" + "---|" * 10]
    for r in shaped:
        hits = "–" if r.recompile_limit_hits is None else f"{r.recompile_limit_hits} run(s)"
        lines.append(f"| {r.model} | {r.dataset} | {variant_cell(r)} | {r.runs} | "
                     f"{r.shape_policy} | {_fmt(r.distinct_shapes)} | "
                     f"{_fmt(r.recompiles_per_epoch)} | {_fmt(r.padding_share, 3)} | {hits} | "
                     f"{_speedup(r, 'compute')} |")
    return "\n".join(lines)


def _gpus(run: Record) -> str:
    """The host's index of the GPU(s) a run trained on (every rank's for a DDP run)."""
    env = run.env or Env()
    ranks = [Env.model_validate(r) for r in (run.distributed.ranks or [])] \
        if run.distributed is not None else []
    if ranks and any(str(r.device or "").startswith("cuda") for r in ranks):
        return ", ".join(str(r.device_index) if r.device_index is not None else
                         "not recorded" for r in ranks)
    if str(env.device or "").startswith("cuda"):
        return str(env.device_index) if env.device_index is not None else "not recorded"
    return "–"


def runs_markdown(runs: list[Record]) -> str:
    """Where each run ran: its host and GPU, so that runs from several hosts (or copied back
    from a cluster) can be told apart."""
    lines = ["## Runs", "", "<details><summary>Each run's host and GPU "
             f"({len(runs)} records)</summary>", "",
             "| run | status | host | device | GPU (host index) | folder |", "|" + "---|" * 6]
    for run in sorted(runs, key=lambda r: (r.name, r.folder or "")):
        env = run.env or Env()
        folder = "/".join(str(run.folder or "").split("/")[-2:])
        lines.append(f"| {run.name} | {run.status} | {env.host or 'not recorded'} | "
                     f"{env.device_name or '–'} ({env.device or '–'}) | "
                     f"{_gpus(run)} | {folder} |")
    return "\n".join([*lines, "", "</details>"])


def report_markdown(title: str, runs: list[Record], rows: list[Row],
                    serving: list[Record] = ()) -> str:
    """The whole of report.md: header, table, stability warnings; the compile cost by cache
    state and serving sections where records have them."""
    members = [m for _, m in groups(runs)]
    warnings = [stability_warnings(m) for m in members]
    disagree = [any(who == "runs" for who, _ in found) for found in warnings]
    verdicts = [v for m in members for v in map(run_stability, m) if v is not None]
    skipped = sum(r.status == "skipped" for r in runs)
    parts = [f"# gnnbench report: {title}", header.header(runs, rows, verdicts),
             to_markdown(rows, skipped, disagree)]
    listed = [f"- `{who}`: {warning}" if who != "runs" else
              f"- {r.model}/{r.dataset} {r.variant}, across its runs: {warning}"
              for r, found in zip(rows, warnings, strict=True) for who, warning in found]
    scaling = scaling_markdown(rows)
    if scaling:
        parts.append(scaling)
    shaped = shapes_markdown(rows)
    if shaped:
        parts.append(shaped)
    where = sites.report_section(rows, members)
    if where:
        parts.append(where)
    for section in (compile_cost_markdown(rows, runs), serving_markdown(list(serving))):
        if section:
            parts.append(section)
    if listed:
        parts.append("## Timing stability warnings\n\n"
                     "Quote these rows' times and speedups with care (README, \"Timing "
                     f"stability\"). {header.thresholds_line()}\n\n" + "\n".join(listed))
    parts.append(runs_markdown(runs))
    return "\n\n".join(parts) + "\n"
