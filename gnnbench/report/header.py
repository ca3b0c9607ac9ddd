"""What a reader needs before the table's numbers mean anything: where and with what
software they were measured, for how many epochs, how many runs stand behind them, and
what each column is. All of it from the records, so it cannot go stale."""

from __future__ import annotations

from collections import Counter

from gnnbench.measure import stability
from gnnbench.records.model import Env, Record, Verdict

SOFTWARE = (("python", "Python"), ("torch", "torch"), ("torch_geometric", "torch_geometric"),
            ("cuda", "CUDA"))

COLUMN_KEY = """\
- **runs**: ok runs / runs of the row (its seeds).
- **train time**: the train part of an epoch after the warm-up (full batch: its one step;
  mini-batch: all its batches), pooled over the row's runs: median [IQR = q3 - q1].
- **variant**: how the setting is run (eager, compiled, captured); `(bf16, csr)`: a
  precision or graph layout other than fp32 and COO.
- **speedup**: eager median / this variant's median, same setting; above 1 is faster;
  bootstrap 95 % CI (none with fewer than 5 steady epochs a side). Of the train step;
  **inference speedup**: of the eval forward; **whole-epoch speedup**: of the epoch as a
  loop sees it (train, eval, metric reads), medians with CIs likewise.
- **compile overhead**: how much longer the warm-up epochs took than steady ones
  (compiling, autotuning, CUDA-graph recording): median over runs [the slowest run, usually
  a cold-cache compile].
- **break-even epochs**: compile overhead / time saved per epoch; `never`: not faster.
- **graph breaks**, **recompiles**: dynamo's counts, the most of any run.
- **CUDA graphs**: what the runs ran under, observed; `(not observed)`: an older record
  that says what was asked for.
- **memory ratio**: peak memory / eager's (medians over runs; CPU: process peak RSS).
- **test acc**: test accuracy at the best validation epoch, mean ± std over runs;
  `near chance`: runs that did not learn (less than a tenth of the way from the test
  split's commonest-class share to 1); **Δ acc vs eager**: minus eager's mean, same setting.
- **stability**: runs whose timing checks warned (listed below the table); `too few
  epochs`: no run had enough steady epochs to judge.
- **status**: `ok`, or the first failed run's status and reason."""


def _env(run: Record) -> Env:
    return run.env or Env()


def devices(runs: list[Record]) -> list[str]:
    """The device names the runs ran on, most runs first (for plot titles)."""
    names = Counter(_env(r).device_name or "unknown device" for r in runs
                    if r.status != "skipped")
    return [name for name, _ in names.most_common()]


def _device_lines(runs: list[Record]) -> str:
    where = Counter()
    for run in runs:
        if run.status == "skipped":
            continue
        env = _env(run)
        kind = str(env.device or "unknown").split(":")[0]
        host = f"host {env.host}" if env.host else "host not recorded"
        where[f"{env.device_name or 'unknown device'} ({kind}), {host}"] += 1
    return "; ".join(f"{place}: {n} run{'s' * (n != 1)}" for place, n in where.most_common())


def _software_line(runs: list[Record]) -> str:
    parts, differs = [], False
    for key, name in SOFTWARE:
        versions = Counter(str(_env(r).get(key)) for r in runs if _env(r).get(key))
        if len(versions) == 1:
            parts.append(f"{name} {next(iter(versions))}")
        elif versions:
            differs = True
            parts.append(f"{name} " + ", ".join(f"{v} ({n} runs)"
                                               for v, n in versions.most_common()))
    if not parts:
        return "not recorded"
    return ("**differs between runs**: " if differs else "") + "; ".join(parts)


def _epochs_line(runs: list[Record]) -> str:
    """Per (epochs, warm-up) pair, the datasets run with it."""
    plans: dict[tuple[int, int], set[str]] = {}
    for run in runs:
        if run.status == "skipped":
            continue
        train = run.config.train
        plans.setdefault((train.epochs, train.warmup_epochs), set()).add(
            run.config.dataset.name)
    return "; ".join(f"{epochs} epochs, the first {warmup} warm-up ({', '.join(sorted(ds))})"
                     for (epochs, warmup), ds in sorted(plans.items(), reverse=True))


def _wall_clock_line(runs: list[Record]) -> str | None:
    """From the first run's start to the last one's end, and how many ran at once at most:
    what a launcher that runs jobs side by side (the GPU pool, a job array) saves. None for
    records that predate `started_at`."""
    spans = [(r.started_at, r.ended_at) for r in runs
             if r.started_at is not None and r.ended_at is not None]
    if not spans:
        return None
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return (f"- **Wall clock**: {max(e for _, e in spans) - min(s for s, _ in spans):.1f} s "
            f"from the first run's start to the last run's end; at most {most} of "
            f"{len(spans)} runs at once")


def _grouped_line(runs: list[Record]) -> str | None:
    """Rows whose epochs were timed in groups (compiler.capture_epochs) read differently:
    said only where a report has them, so every other report reads as before."""
    sizes = sorted({r.timing.timed_epochs for r in runs
                    if r.timing is not None and r.timing.timed_epochs})
    if not sizes:
        return None
    return (f"- **Epochs timed in groups** (`capture_epochs={', '.join(map(str, sizes))}`): "
            "one unit (one CUDA graph on CUDA) per group, each epoch its share and one timing "
            "sample per group; their train time and speedup hold train and eval together "
            "(against eager's train + eval), and they have no inference speedup")


def header(runs: list[Record], rows: list, verdicts: list[Verdict]) -> str:
    """The lines above the table; `verdicts` are the ok runs' stability verdicts."""
    skipped = sum(r.status == "skipped" for r in runs)
    ran = len(runs) - skipped
    ok = sum(r.status == "ok" for r in runs)
    unstable = sum(not v.ok for v in verdicts)
    judged_late = sum(not v.recorded for v in verdicts)
    stable_line = f"{unstable} of {len(verdicts)} ok runs warned (listed under the table)"
    if judged_late:
        stable_line += (f"; {judged_late} record(s) predate the checks: their steady epochs "
                        "were judged when reporting, machine load unknown")
    lines = [
        f"- **Device**: {_device_lines(runs) or 'none'}",
        f"- **Software**: {_software_line(runs)}",
        f"- **Epochs**: {_epochs_line(runs) or 'none'}; timings are over the epochs after "
        f"the warm-up",
        f"- **Records**: {len(runs)}: {ran} runs ({ok} ok, {ran - ok} failed) in {len(rows)} "
        f"rows, {skipped} skipped (repeats of an eager run)",
        f"- **Timing stability**: {stable_line}",
        *filter(None, [_wall_clock_line(runs), _grouped_line(runs)]),
        "- **Plots**: [speedup over eager](speedup.png), [epoch-time distributions]"
        "(epoch_times.png); the table as [CSV](report.csv)",
        "",
        "Columns:",
        "",
        COLUMN_KEY,
    ]
    return "\n".join(lines)


def thresholds_line() -> str:
    return (f"Thresholds: IQR above {stability.SPREAD_MAX:.0%} of the median; halves' medians "
            f"{stability.DRIFT_MAX:.0%} apart; over {stability.SLOW_SHARE_MAX:.0%} of epochs "
            f"slower than {stability.SLOW_FACTOR:g}x the median; 1-min load above "
            f"{stability.LOAD_PER_CPU_MAX:g} per CPU; a row's run medians over "
            f"{stability.RUN_MEDIANS_RATIO_MAX:g}x apart.")
