"""Hydra multirun sweeps end to end: every job a W&B run in one group, failures recorded,
no repeated eager baselines, and the comparison report with the right rows."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.wandb_file import find_runs, read_run

pytestmark = pytest.mark.slow


def sweep(args: list[str], cwd: Path, timeout: int = 1200) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "GNNBENCH_"))}
    env.update(WANDB_DIR=str(cwd / "wandb-home"), WANDB_CONFIG_DIR=str(cwd / "wandb-home"),
               WANDB_CACHE_DIR=str(cwd / "wandb-home"), WANDB_DATA_DIR=str(cwd / "wandb-home"),
               NETRC=str(cwd / "no-netrc"))
    return subprocess.run([sys.executable, "-m", "gnnbench", "-m", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def only_sweep_dir(cwd: Path) -> Path:
    [found] = list((cwd / "outputs" / "sweeps").iterdir())
    return found


def test_models_datasets_modes_sweep(tmp_path, read_only_mirror, data_dir):
    """2 models x 2 Planetoid datasets x eager + 2 compile modes, plus PubMed, which the
    offline mirror lacks: its jobs fail, are recorded, and the sweep goes on."""
    proc = sweep(["model=gcn,sage", "dataset=cora,citeseer,pubmed", "compile=false,true",
                  "compiler.mode=default,reduce-overhead", "train.epochs=6",
                  "train.warmup_epochs=1", f"data_mirror={read_only_mirror}",
                  f"data_dir={data_dir}"], tmp_path)
    assert proc.returncode == 1, proc.stderr  # some jobs failed, and that is reported
    root = only_sweep_dir(tmp_path)
    jobs = sorted(p for p in root.iterdir() if p.is_dir() and (p / "results.json").exists())
    assert len(jobs) == 2 * 3 * 4
    assert jobs[0].name.startswith("0_gcn-cora-eager-s0")
    results = {j.name: json.loads((j / "results.json").read_text()) for j in jobs}
    statuses = [r["status"] for r in results.values()]
    # The second eager job of each (model, dataset) repeats the first: it is not run again,
    # whatever the first one's outcome (PubMed's is a failure, and would be again).
    assert statuses.count("skipped") == 2 * 3
    assert statuses.count("ok") == 2 * 2 * 3
    assert statuses.count("error") == 2 * 3  # PubMed: cannot download, no mirror copy
    assert all("PubMed" in r["reason"] for r in results.values() if r["status"] == "error")
    for r in results.values():
        if r["status"] == "skipped":
            holder = json.loads((Path(r["reason"].split(" as ")[1]) / "results.json").read_text())
            assert holder["config"]["compile"] is False and holder["name"] == r["name"]

    rows = list(csv.DictReader((root / "report.csv").open()))
    assert [(r["model"], r["dataset"], r["variant"]) for r in rows] == [
        (m, d, v) for m in ("gcn", "sage") for d in ("citeseer", "cora", "pubmed")
        for v in ("eager", "compile-default", "compile-reduce-overhead")]
    for row in rows:
        if row["dataset"] == "pubmed":
            assert row["status"] == "error" and "PubMed" in row["reason"] and not row["speedup"]
            continue
        assert row["status"] == "ok" and row["runs"] == "1/1 ok"
        assert float(row["train_ms"]) > 0 and 0 < float(row["test_acc_mean"]) <= 1
        if row["variant"] != "eager":
            low, high = float(row["speedup_ci_low"]), float(row["speedup_ci_high"])
            assert low <= float(row["speedup"]) <= high
            assert float(row["compile_overhead_s"]) > 0
            assert row["graph_breaks"] == "0" and float(row["memory_ratio"]) > 0
    report = (root / "report.md").read_text()
    assert report.count("| error: ") == 6 and "6 sweep job(s) skipped" in report
    assert (root / "speedup.png").stat().st_size > 0
    assert (root / "epoch_times.png").stat().st_size > 0

    runs = [read_run(path) for path in find_runs(root)]
    benchmark = [w for w in runs if w.job_type == "benchmark"]
    # Every job that ran; none for skipped ones, nor for PubMed's: a dataset with no files
    # is bad input, recorded in results.json and the report, never a W&B run named like one.
    assert len(benchmark) == 2 * 2 * 3
    assert all(w.summary["status"] == "ok" and w.exit_code == 0 for w in benchmark)
    assert {w.group for w in runs} == {root.name}
    [report_run] = [w for w in runs if w.job_type == "report"]
    assert len(report_run.tables["comparison"]) == len(rows)


def test_seed_repeats_and_paired_measurement(tmp_path, data_dir):
    proc = sweep(["model=sage", "compile=false,true", "train.seed=0,1,2", "train.epochs=4",
                  "train.warmup_epochs=1", "wandb.mode=disabled", f"data_dir={data_dir}"],
                 tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader((only_sweep_dir(tmp_path) / "report.csv").open()))
    assert [r["variant"] for r in rows] == ["eager", "compile-default"]
    for row in rows:
        assert row["runs"] == "3/3 ok"
        assert float(row["test_acc_std"]) >= 0
        assert float(row["run_median_ms_min"]) <= float(row["train_ms"]) * 10
        assert float(row["run_median_ms_min"]) <= float(row["run_median_ms_max"])
    assert float(rows[1]["speedup"]) > 0

    # The same report on demand, through both entry points.
    root = only_sweep_dir(tmp_path)
    expected = (root / "report.csv").read_text()
    (root / "report.csv").unlink()
    for command in (["-m", "gnnbench.report"], ["-m", "gnnbench", "report"]):
        proc = subprocess.run([sys.executable, *command, str(root), "--no-wandb"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "| sage | synthetic | compile-default | 3/3 ok |" in proc.stdout
        assert len((root / "report.csv").read_text().splitlines()) == len(expected.splitlines())
    proc = subprocess.run([sys.executable, "-m", "gnnbench", "report", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "is not a directory" in proc.stderr


def test_paired_run_compares_in_one_process(run):
    result = run("model=sage", "compile=true", "train.paired=true", "train.epochs=7",
                 "train.warmup_epochs=2", "wandb.mode=disabled")
    assert result.status == "ok", result.reason
    cmp = result.comparison
    assert cmp.reference == "paired eager twin"
    assert cmp.speedup_ci95[0] <= cmp.speedup <= cmp.speedup_ci95[1]
    eager_steps = sorted(r.eager_train_s for r in result.epochs[2:])
    assert len(eager_steps) == 5 and cmp.eager_step_median_s == pytest.approx(eager_steps[2])
    # Both models learn; Inductor draws its own dropout masks, so the losses differ a little.
    first, last = result.epochs[0], result.epochs[-1]
    assert last.loss < first.loss and last.eager_loss < first.eager_loss
    assert result.paired.loss_max_abs_diff == pytest.approx(
        max(abs(r.loss - r.eager_loss) for r in result.epochs))
    assert cmp.test_acc_delta == pytest.approx(
        result.accuracy.test_at_best_val - cmp.eager_test_acc)


def test_speedup_plot_draws_rows_without_a_ci(tmp_path):
    """Products-size rows can have too few epochs for a CI: the plot still shows their bar
    (and a row with a CI its interval) instead of failing the whole report."""
    from gnnbench.report import plots
    from gnnbench.report.rows import Row

    rows = [Row(model="sage", dataset="p", variant="compile-default", speedup=1.3,
                speedup_ci_low=None, speedup_ci_high=None),
            Row(model="gcn", dataset="cora", variant="compile-default", speedup=1.1,
                speedup_ci_low=1.0, speedup_ci_high=1.2)]
    plots.speedup_bars(rows, tmp_path / "speedup.png")
    assert (tmp_path / "speedup.png").stat().st_size > 0
