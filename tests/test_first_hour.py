"""The first hour as a user meets gnnbench on a fresh, offline machine: the headline command
works, help is ours, the console ends with the answer, and nothing noisy or stray is left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from conftest import make_config
from support.processes import clean_env, run, run_without_override

from gnnbench.report import header, plots
from gnnbench.report.cli import write_report
from gnnbench.report.rows import build_rows
from gnnbench.report.summary import format_summary
from gnnbench.runner import run_experiment


@pytest.mark.slow
def test_the_headline_command_runs_offline_without_a_mirror(tmp_path):
    """Issue point 1: Cora ships with the package; no data_mirror, no network."""
    proc = run(["model=sage", "dataset=cora", "compile=true", "train.epochs=6",
                "train.warmup_epochs=2", "wandb.mode=disabled", f"data_dir={tmp_path / 'd'}"],
               tmp_path)
    assert proc.returncode == 0, proc.stderr
    [path] = list((tmp_path / "outputs").rglob("results.json"))
    record = json.loads(path.read_text())
    assert record["status"] == "ok" and record["dataset"]["num_nodes"] == 2708
    assert record["config"]["data_mirror"] is None
    # The console ends with the answer, or says where an eager reference would come from.
    assert "no eager run of this setting and seed found" in proc.stdout
    assert "compile=false first, or add train.paired=true" in proc.stdout


def test_help_is_a_page_of_our_own(tmp_path):
    """Issue point 4: usage, every group's choices (from the config folders), presets,
    variants, where results go; Hydra's help one flag away."""
    proc = run(["--help"], tmp_path)
    assert proc.returncode == 0 and "powered by Hydra" not in proc.stdout
    for text in ("usage:", "gnnbench report DIR",
                 "model=      custom, gat, gcn, gin, pyg-edgecnn, pyg-gat, pyg-gcn, pyg-gin",
                 "variant=    default, default-static, eager", "experiment= arxiv-gcn",
                 "outputs/runs/",
                 "hydra.sweep.dir=", "train.paired=true"):
        assert text in proc.stdout, text
    hydra = run(["--hydra-help"], tmp_path)
    assert hydra.returncode == 0 and "powered by Hydra" in hydra.stdout


def test_version_names_gnnbench_and_its_stack(tmp_path):
    """`--version` is gnnbench's (not Hydra's), with what a bug report needs: torch, PyG and
    the CUDA torch was built with; the console script says the same."""
    import torch
    import torch_geometric

    expected = [f"gnnbench {metadata.version('gnnbench')}", f"torch {torch.__version__}",
                f"torch_geometric {torch_geometric.__version__}",
                f"CUDA {torch.version.cuda or 'none'}"]
    proc = run(["--version"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.splitlines() == expected, proc.stderr
    script = subprocess.run([str(Path(sys.executable).with_name("gnnbench")), "--version"],
                            cwd=tmp_path, env=clean_env(tmp_path), capture_output=True,
                            text=True, timeout=120)
    assert script.returncode == 0 and script.stdout == proc.stdout


def test_version_of_a_checkout_that_is_not_installed(monkeypatch):
    """Run from a checkout on PYTHONPATH with no installed metadata: pyproject's version."""
    from gnnbench.cli import version

    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    declared = metadata.version("gnnbench")  # the install was built from pyproject.toml
    monkeypatch.setattr(version.metadata, "version", not_installed)
    assert version.gnnbench_version() == f"{declared} (not installed)"


def test_a_failed_download_leaves_nothing_behind(tmp_path):
    """Issue point 2: PubMed is not built in; with no mirror and no network the run fails
    with one line and no empty data/PubMed/raw/ is left to confuse the next run."""
    data = tmp_path / "data"
    env = clean_env(tmp_path, https_proxy="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9")
    proc = subprocess.run([sys.executable, "-m", "gnnbench", "dataset=pubmed",
                           "wandb.mode=disabled", f"data_dir={data}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    [error] = [line for line in proc.stderr.splitlines() if line.startswith("gnnbench: error")]
    assert "cannot download PubMed" in error and "data_mirror" in error
    assert not (data / "PubMed").exists()
    assert [p.name for p in data.iterdir()] == [".PubMed.lock"]


OFFLINE = {"https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}


@pytest.mark.parametrize("args, error", [
    (["train.lr=abc"], "train.lr='abc' is not a number; it must be a number > 0"),
    (["train.epochs=-1"], "train.epochs=-1 must be an integer >= 1"),
    (["dataset=pubmed"], "cannot download PubMed"),  # no mirror, no network
])
def test_bad_values_are_one_line_like_bad_commands(tmp_path, args, error):
    """A bad value, or a dataset with no files, is the user's to fix, as `model=GCN` is: one
    line on stderr, nothing on stdout (no W&B line, no run summary), exit 1, and an `error`
    record where the run would have gone, with no W&B run named like a real one."""
    proc = run([*args, f"data_dir={tmp_path / 'data'}"], tmp_path, timeout=300, env=OFFLINE)
    assert proc.returncode == 1
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("gnnbench: error: ") and error in line
    [path] = list((tmp_path / "outputs" / "runs").glob("*/results.json"))
    record = json.loads(path.read_text())
    assert record["status"] == "error" and error in record["reason"]
    assert record["input_error"] is True
    assert not (path.parent / "wandb").exists()


def test_a_run_that_fails_while_training_is_still_logged_and_summarised(tmp_path):
    """Unlike bad input, a failure of the run itself (here a loss gone non-finite) is a
    result to look at: a W&B run, the summary on stdout, and the error line."""
    proc = run(["train.lr=1e30", "train.epochs=50", "train.device=cpu",
                f"data_dir={tmp_path / 'data'}"], tmp_path)
    assert proc.returncode == 1
    assert "-> status diverged" in proc.stdout and "W&B offline run saved in" in proc.stdout
    assert "gnnbench: error: non-finite loss" in proc.stderr
    [path] = list((tmp_path / "outputs" / "runs").glob("*/results.json"))
    assert "input_error" not in json.loads(path.read_text())
    assert list(path.parent.glob("wandb/offline-run-*"))


def test_a_read_only_data_dir_says_so(tmp_path):
    """Issue point 2, as a user without write permission (root's override capability
    dropped): not "cannot download ... set data_mirror"."""
    data = tmp_path / "ro-data"
    data.mkdir()
    data.chmod(0o555)
    proc = run_without_override(["dataset=cora", "wandb.mode=disabled", f"data_dir={data}"],
                                tmp_path)
    assert proc.returncode == 1, proc.stderr
    [error] = [line for line in proc.stderr.splitlines() if line.startswith("gnnbench: error")]
    assert f"data_dir='{data}' is not writable (Permission denied)" in error


@pytest.mark.slow  # several gnnbench processes or a sweep of jobs: the tier rule
def test_runs_and_sweeps_leave_no_noise_and_no_stray_files(tmp_path):
    """Issue point 7: no "Processing... Done!" on the console (it is in the run's log), no
    empty files, W&B's own logs under the sweep (none in $HOME), one sync command for every
    W&B run of the sweep, and one report run however often the report is made."""
    home = tmp_path / "home"
    env = clean_env(tmp_path, HOME=str(home))
    sweep = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "gnnbench", "-m", "dataset=cora", "train.seed=0,1",
         "train.epochs=3", "train.warmup_epochs=1", "wandb.mode=offline",
         f"data_dir={tmp_path / 'data'}", f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Processing" not in proc.stdout + proc.stderr
    logs = [p.read_text() for p in sweep.glob("*/gnnbench.log")]
    assert any("Cora: Processing..." in text for text in logs)
    assert not [p for p in sweep.rglob("*") if p.is_file() and p.stat().st_size == 0]
    assert not (home / ".cache" / "wandb").exists()
    assert list(sweep.glob("wandb/service/**/core-debug-*.log"))
    links = [p for p in sweep.rglob("*") if p.is_symlink()]
    assert all(p.resolve().is_relative_to(sweep.resolve()) for p in links)
    [sync] = [line for line in proc.stdout.splitlines() if "upload them all with" in line]
    command = sync.split("upload them all with: ", 1)[1]
    listed = subprocess.run(f"ls -d {command.removeprefix('wandb sync ')}", shell=True,
                            capture_output=True, text=True).stdout.split()
    assert len(listed) == 3  # two jobs and the report
    report = subprocess.run([sys.executable, "-m", "gnnbench.report", str(sweep)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    [offline] = list(sweep.glob("wandb/offline-run-*"))
    # Like a run, the report says how to upload its offline W&B run.
    assert f"upload it with: wandb sync {offline}" in report.stdout.splitlines()[-1]


@pytest.mark.slow
def test_the_summary_names_expected_graph_breaks(run):
    """Issue point 3: the whole step's two graph breaks are torch.optim's, and the console
    says so instead of repeating dynamo's advice to remove them."""
    result = run("model=sage", "compile=true", "compiler.scope=step", "train.paired=true",
                 "train.epochs=8", "train.warmup_epochs=2")
    assert result.status == "ok", result.reason
    text = format_summary(result)
    assert "2 graph break(s) (all expected: torch.optim's own graph_break() calls" in text
    c = result.comparison
    ci = f"95% CI {c.speedup_ci95[0]:.2f}–{c.speedup_ci95[1]:.2f}"
    said = (f"=> no measurable difference in the train step ({c.speedup:.2f}x, {ci})"
            if c.measurable is False else f"=> {c.speedup:.2f}x the eager train step [{ci}]")
    assert f"{said} against paired eager twin" in text
    assert Path(result.config.data_dir).is_dir()


def answer_line(summary: str) -> str:
    """The `=>` line; notes and warnings about the reference may follow it."""
    [line] = [line for line in summary.splitlines() if line.startswith("  => ")]
    return line


@pytest.mark.slow
def test_a_paired_run_says_why_it_has_no_whole_epoch_speedup(run, tmp_path, data_dir):
    """An unpaired compiled run quotes a whole-epoch speedup; a paired one cannot (both
    models train in each epoch), and says so on the console and in the report instead of
    leaving the figure out without a word."""
    quick = ["train.epochs=8", "train.warmup_epochs=2"]
    compiled = ["compile=true", "compiler.backend=eager", *quick]
    assert run(*quick).status == "ok"  # the eager reference of the unpaired run
    unpaired = run_experiment(make_config([f"data_dir={data_dir}", "train.device=cpu",
                                           "wandb.mode=disabled", *compiled]),
                              tmp_path / "unpaired", reference_dirs=[tmp_path])
    assert unpaired.comparison.epoch is not None
    assert "; whole epoch " in answer_line(format_summary(unpaired))
    paired = run(*compiled, "train.paired=true")
    assert paired.status == "ok", paired.reason
    assert paired.comparison.epoch is None
    answer = answer_line(format_summary(paired))
    assert "whole epoch " not in answer
    assert "no whole-epoch figure (an epoch of a paired run holds both models' work)" in answer
    write_report([tmp_path], log_to_wandb=False)
    report = (tmp_path / "report.md").read_text()
    rows = {line.split(" | ")[2]: line for line in report.splitlines()
            if "compile-default backend=eager" in line}
    assert "| – (paired) |" in rows["compile-default backend=eager paired"]
    assert "(paired)" not in rows["compile-default backend=eager"]
    assert "Paired rows have no whole-epoch speedup: an epoch of a paired run holds" in report


def test_plot_titles_name_the_processor_not_its_architecture(run, tmp_path):
    """A CPU run records the CPU's model (Linux: /proc/cpuinfo's model name), and the
    report's plots are titled with it, not with "x86_64"."""
    result = run("train.epochs=3", "train.warmup_epochs=1")
    env = result.env
    cpuinfo = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in
             (cpuinfo.read_text().splitlines() if cpuinfo.is_file() else [])
             if line.split(":")[0].strip() == "model name"]
    if names:
        assert env.cpu_model == names[0]
    assert env.device_name == env.cpu_model and env.device == "cpu"
    device = ", ".join(header.devices([result]))
    drawn = plots.epoch_time_distributions(build_rows([result]), [result],
                                           tmp_path / "epoch_times.png", device)
    assert f"on {env.cpu_model}," in drawn["title"]


def test_library_notes_go_to_the_run_log_not_the_console(tmp_path):
    """PyTorch's TF32 hint and Inductor's online-softmax note say nothing about the run:
    they land in its gnnbench.log; a warning about the run still reaches the console."""
    tests = Path(__file__).resolve().parent
    env = {"PYTHONPATH": f"{tests}{os.pathsep}{tests.parent}"}  # this checkout's gnnbench
    proc = run(["model._target_=support.noisy_model.NoisyGCN", "train.epochs=2",
                "train.warmup_epochs=1", "train.device=cpu", "wandb.mode=disabled",
                f"data_dir={tmp_path / 'data'}"], tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "TensorFloat32" not in proc.stderr and "Online softmax" not in proc.stderr
    assert "NoisyGCN: a warning about this run" in proc.stderr
    [log] = list((tmp_path / "outputs" / "runs").glob("*/gnnbench.log"))
    text = log.read_text()
    assert "UserWarning: TensorFloat32 tensor cores for float32 matrix multiplication" in text
    assert "UserWarning: Online softmax is disabled on the fly" in text
    assert "NoisyGCN" not in text
