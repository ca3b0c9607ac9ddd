"""W&B for real, in offline mode, read back from the `.wandb` file it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.wandb_file import find_runs, read_run

QUICK = ("train.epochs=4", "train.warmup_epochs=1")
OFFLINE = ("wandb.mode=offline",)


@pytest.fixture(autouse=True)
def wandb_env(tmp_path, monkeypatch):
    for var in ("WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    yield
    import wandb

    wandb.teardown()  # stop wandb-core so that the next test starts it under its own env


def test_offline_run_reads_back_what_the_run_recorded(run):
    result = run("model=sage", "dataset=cora", "wandb.tags=[nightly]", *QUICK, *OFFLINE)
    assert result.status == "ok"
    w = read_run(result.wandb_dir, wait=30)
    assert w.name == "sage-cora-eager-s0" == result.name
    assert w.group == "sage-cora" and w.project == "gnnbench" and w.job_type == "benchmark"
    assert set(w.tags) == {"sage", "cora", "eager", "cpu", "nightly"}
    assert w.exit_code == 0
    assert w.config["model"] == result.config.as_dict["model"]
    assert w.config["train"] == result.config.as_dict["train"]
    assert w.config["env"]["torch"] == result.env.torch
    assert [row["epoch"] for row in w.history] == [0, 1, 2, 3]
    for row, epoch in zip(w.history, result.epochs, strict=True):
        assert row["loss"] == pytest.approx(epoch.loss)
        assert row["train_step_ms"] == pytest.approx(epoch.train_s * 1e3)
        assert row["acc/val"] == pytest.approx(epoch.val_acc)
    s = w.summary
    assert s["status"] == "ok"
    assert s["train_step_median_ms"] == pytest.approx(
        result.timing.train_s.median * 1e3)
    assert s["test_acc_at_best_val"] == pytest.approx(result.accuracy.test_at_best_val)
    assert s["cuda_graphs"] == result.cuda_graphs == "none"
    assert s["peak_memory_bytes"] == result.memory.peak_bytes
    assert s["unstable"] is (not result.stability.ok)
    assert s["stability_warnings"] == len(result.stability.warnings)


@pytest.mark.slow
def test_compiled_failure_exits_one_with_reason_tables(run):
    result = run("model=sage", "model.aggr=lstm", "dataset=synthetic",
                 "dataset.num_features=16", "compile=true", *QUICK, *OFFLINE)
    assert result.status == "graph_break"
    w = read_run(result.wandb_dir, wait=30)
    assert w.exit_code == 1
    assert w.summary["status"] == "graph_break" and w.summary["reason"] == result.reason
    # No epoch ran: no timing figures, rather than zeros that look measured.
    assert not {"train_step_median_ms", "train_step_iqr_ms", "eval_median_ms"} & set(w.summary)
    assert w.history == []


@pytest.mark.slow
def test_compiled_run_logs_graph_break_and_recompile_tables(run):
    result = run("model=gcn", "model.normalize=layer", "compiler.fullgraph=false",
                 "compile=true", "dataset=cora", *QUICK, *OFFLINE)
    w = read_run(result.wandb_dir, wait=30)
    breaks = w.tables["graph_break_reasons"]
    assert sum(row["count"] for row in breaks) == result.compile.graph_breaks > 0
    assert [row["reason"] for row in w.tables["recompile_reasons"]] == \
        result.compile.recompile_reasons
    assert w.summary["graph_breaks"] == result.compile.graph_breaks
    assert w.summary["cuda_graphs"] == result.cuda_graphs == "none"
    assert w.summary["cuda_graph_skips"] == result.cuda_graph_audit.inductor_skips


def test_disabled_writes_nothing(run, tmp_path):
    result = run("wandb.mode=disabled", *QUICK)
    assert result.status == "ok" and result.wandb_dir is None
    assert find_runs(tmp_path) == []


def test_unreachable_wandb_falls_back_to_offline_once(tmp_path):
    """Online mode against a closed local port: W&B cannot start, so the run logs offline
    instead, with one warning, and loses nothing (reliability defect 9)."""
    env = {**os.environ, "WANDB_API_KEY": "x" * 40, "WANDB_BASE_URL": "http://127.0.0.1:9",
           "WANDB_DIR": str(tmp_path), "WANDB_CONFIG_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "gnnbench", "wandb.mode=online", "wandb.init_timeout_s=3",
         *QUICK], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines()
                if line.startswith("gnnbench: warning: W&B")]
    assert len(warnings) == 1 and "offline instead" in warnings[0], proc.stderr
    [results] = list((tmp_path / "outputs").rglob("results.json"))
    result = json.loads(results.read_text())
    assert result["status"] == "ok" and "offline-run-" in result["wandb_dir"]
    w = read_run(result["wandb_dir"], wait=30)
    assert [row["epoch"] for row in w.history] == [0, 1, 2, 3]
    assert w.summary["test_acc_at_best_val"] == pytest.approx(
        result["accuracy"]["test_at_best_val"])
