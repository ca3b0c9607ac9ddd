"""Unstable timings do not pass silently, and the report says what it shows: the stability
checks on series like the busy-machine runs that prompted them, a real run's record, the
console summary, W&B's summary and the report (header, single runs, plots in one order)."""

from __future__ import annotations

import json
import random
import re

import pytest
import torch
from conftest import REPO

from gnnbench.measure import stability
from gnnbench.records import publish, store
from gnnbench.records.model import Record
from gnnbench.report import plots
from gnnbench.report.cli import write_report
from gnnbench.report.rows import Row, build_rows
from gnnbench.report.summary import format_summary


def ms(values: list[float]) -> list[float]:
    return [v / 1e3 for v in values]


def noisy_series(n: int = 60, seed: int = 0) -> list[float]:
    """The busy machine: steps alternating between 10-50 ms and 450-500 ms."""
    rng = random.Random(seed)
    return ms([rng.uniform(10, 50) if i % 2 else rng.uniform(450, 500) for i in range(n)])


def steady_series(n: int = 100, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return ms([rng.gauss(20, 0.4) for _ in range(n)])  # 20 ms ± 2 %


def kinds(verdict: dict) -> list[str]:
    return [w.split(":")[0] for w in verdict["warnings"]]


def test_alternating_fast_and_slow_epochs_warn_about_spread():
    verdict = stability.assess(noisy_series())
    assert not verdict["ok"]
    assert "spread" in kinds(verdict)
    assert verdict["checks"]["spread"] > stability.SPREAD_MAX
    assert verdict["thresholds"]["spread"] == stability.SPREAD_MAX


def test_a_drifting_run_warns_about_drift_not_spread():
    """A step from 20 to 24 ms mid-run: each half is steady, the run is not."""
    rng = random.Random(1)
    series = ms([rng.gauss(20, 0.2) for _ in range(50)] + [rng.gauss(24, 0.2) for _ in range(50)])
    verdict = stability.assess(series)
    assert kinds(verdict) == ["drift"]
    assert verdict["checks"]["drift"] == pytest.approx(4 / 22, rel=0.1)
    # It says which way and from what to what, in the run's own units.
    assert re.search(r"from 20\.\d\d ms .* to 2[34]\.\d\d ms", verdict["warnings"][0])


def test_a_steady_run_gives_no_warning():
    verdict = stability.assess(steady_series())
    assert verdict["ok"] and verdict["warnings"] == []
    checks = verdict["checks"]
    assert checks["steady_epochs"] == 100
    assert checks["spread"] < 0.05 and abs(checks["drift"]) < 0.02 and checks["slow_share"] == 0


def test_bursts_of_slow_epochs_warn_even_when_the_quartiles_look_fine():
    series = steady_series()
    for i in range(0, 100, 12):  # 9 epochs of 100
        series[i] = 0.1
    verdict = stability.assess(series)
    assert kinds(verdict) == ["slow epochs"]
    assert verdict["checks"]["slow_share"] == pytest.approx(0.09)


def test_too_few_epochs_give_no_timing_verdict():
    verdict = stability.assess(noisy_series(n=4))
    assert verdict["ok"] and verdict["checks"]["spread"] is None
    assert verdict["checks"]["steady_epochs"] == 4


def test_a_busy_machine_warns_from_its_load_average():
    busy, quiet = {"load_1min": 5.2, "cpu_count": 2}, {"load_1min": 0.4, "cpu_count": 2}
    verdict = stability.assess(steady_series(), busy, quiet)
    assert kinds(verdict) == ["machine load"]
    assert "5.2 on 2 CPUs at the start" in verdict["warnings"][0]
    assert stability.assess(steady_series(), quiet, quiet)["ok"]
    # No load average (another OS, an old record): no verdict on load, and no failure.
    assert stability.assess(steady_series(), None, {"load_1min": None, "cpu_count": 2})["ok"]


def test_a_run_that_sat_in_a_slow_stretch_is_caught_across_seeds():
    """Steady in itself (436 ms, IQR 4.5 ms), so only its seeds can tell."""
    [warning] = stability.across_runs({"s0": 0.021, "s1": 0.020, "s2": 0.436})
    assert "s2" in warning and "s1" in warning and "21.8x" in warning
    assert stability.across_runs({"s0": 0.021, "s1": 0.020}) == []


def test_machine_state_samples_load_without_a_gpu():
    state = stability.machine_state(torch.device("cpu"))
    assert state["cpu_count"] == __import__("os").cpu_count()
    assert state["load_1min"] is None or state["load_1min"] >= 0
    assert "gpu" not in state


def unstable(record: Record) -> Record:
    """`record` as if its epochs had alternated like the busy machine's."""
    return Record.model_validate({**record.dump(), "stability": stability.assess(noisy_series())})


def test_a_real_run_records_stability_and_the_summaries_show_it(run, tmp_path):
    result = run("train.epochs=12", "train.warmup_epochs=2")
    assert result.status == "ok", result.reason
    verdict = result.stability
    assert verdict.checks.steady_epochs == 10
    assert verdict.checks.spread is not None
    assert verdict.ok == (verdict.warnings == [])
    for when in ("start", "end"):
        assert verdict.machine[when]["cpu_count"] >= 1
    [on_disk] = store.find([tmp_path])
    assert on_disk.stability.model_dump() == json.loads(json.dumps(verdict.model_dump()))

    bad = unstable(result)
    shown = [line for line in format_summary(bad).splitlines() if line.startswith("  warning:")]
    assert shown == [f"  warning: {w}" for w in bad.stability.warnings] != []
    calm = Record.model_validate({**result.dump(),
                                  "stability": stability.assess(steady_series())})
    assert "warning:" not in format_summary(calm)
    headline = publish._headline(bad)
    assert headline["unstable"] is True
    assert headline["stability_warnings"] == len(bad.stability.warnings)
    assert publish._headline(calm)["unstable"] is False
    old = Record.model_validate({k: v for k, v in result.dump().items()
                                 if k != "stability"})  # a record from before
    assert "unstable" not in publish._headline(old) and "warning:" not in format_summary(old)


def write(record: dict, folder) -> None:
    folder.mkdir(parents=True)
    (folder / store.RESULTS_FILE).write_text(json.dumps(record))


def test_the_report_names_where_and_what_and_lists_unstable_runs(run, tmp_path):
    """One eager and one compiled-like record (an eager run relabelled: no compile on two
    busy CPUs), the compiled one unstable, plus an old record without the field."""
    result = run("train.epochs=12", "train.warmup_epochs=2")
    folder = tmp_path / "report"
    write(result.dump(), folder / "eager")
    noisy = unstable(result).dump()
    noisy["name"] = "gcn-synthetic-compile-default-s0"
    noisy["config"]["compile"] = True
    noisy["compile"] = {"graph_breaks": 0, "recompiles": 0}
    write(noisy, folder / "compiled")
    old = {k: v for k, v in result.dump().items() if k != "stability"}
    old["schema_version"], old["name"] = 2, "gcn-synthetic-eager-s1"
    # ... and it sat wholly in a slow stretch: 20x slower, steady in itself.
    old["epochs"] = [{**e, "train_s": e["train_s"] * 20} for e in old["epochs"]]
    old["timing"] = {**old["timing"], "train_s": {
        **old["timing"]["train_s"], "median": old["timing"]["train_s"]["median"] * 20}}
    old["config"] = {**old["config"], "train": {**old["config"]["train"], "seed": 1}}
    write(old, folder / "old")

    rows = write_report([folder], log_to_wandb=False)
    text = (folder / "report.md").read_text()
    env = result.env
    assert f"{env.device_name} (cpu)" in text and f"torch {torch.__version__}" in text
    assert "12 epochs, the first 2 warm-up (synthetic)" in text
    for link in ("(speedup.png)", "(epoch_times.png)", "(report.csv)"):
        assert link in text
    assert "- **speedup**:" in text  # the column key

    eager_row, compiled_row = rows
    assert eager_row.runs == "2/2 ok" and compiled_row.runs == "1/1 ok"
    assert compiled_row.unstable_runs == 1 and compiled_row.test_acc_std is None
    [line] = [li for li in text.splitlines() if li.startswith("| gcn | synthetic | compile")]
    assert "(1 run)" in line and "±" not in line and "| 1 of 1 unstable |" in line
    [eager_line] = [li for li in text.splitlines() if li.startswith("| gcn | synthetic | eager")]
    assert " ± " in eager_line  # two runs: a real spread
    assert "runs disagree" in eager_line
    assert re.search(r"- gcn/synthetic eager, across its runs: runs disagree: .*"
                     r"\(gcn-synthetic-eager-s0\) to .*\(gcn-synthetic-eager-s1\), 20\.0x", text)
    assert "## Timing stability warnings" in text
    for warning in noisy["stability"]["warnings"]:
        assert f"- `{noisy['name']}`: {warning}" in text
    assert "1 record(s) predate the checks" in text


def test_plots_have_titles_units_and_the_tables_order(tmp_path):
    runs = store.find([REPO / "results" / "h200-reference"])
    rows = build_rows(runs)
    speed = plots.speedup_bars(rows, tmp_path / "speedup.png", "NVIDIA H200")
    times = plots.epoch_time_distributions(rows, runs, tmp_path / "epoch_times.png",
                                           "NVIDIA H200")
    labels = [plots.row_label(r) for r in rows]
    assert speed["labels"] == times["labels"] == labels
    assert "speedup over eager" in speed["title"] and "NVIDIA H200" in speed["title"]
    assert "NVIDIA H200" in times["title"] and "(ms)" in times["xlabel"]
    # 0.15 ms to 7 s: a log axis, labelled in plain numbers at least every half decade.
    assert times["xscale"] == "log"
    ticks = [t for t in times["xticks"] if t]
    assert len(ticks) >= 8 and all(re.fullmatch(r"[0-9.]+", t) for t in ticks), ticks


def test_a_speedup_plot_without_a_reference_says_so(tmp_path):
    rows = [Row(model="gcn", dataset="cora", variant="compile-default", speedup=None,
                speedup_ci_low=None, speedup_ci_high=None, train_ms=2.0)]
    drawn = plots.speedup_bars(rows, tmp_path / "speedup.png", "cpu")
    assert "no compiled run has an eager reference" in drawn["title"]
    assert drawn["labels"] == ["gcn/cora  compile-default"]
