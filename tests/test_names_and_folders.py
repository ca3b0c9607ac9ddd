"""What a user types never writes outside the folders it names: a name with a path in it is
refused before anything is made, and a mistyped command never overwrites a record."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.processes import clean_env, start


def gnnbench(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gnnbench", *args, "wandb.mode=disabled"],
                          cwd=cwd, env=clean_env(cwd, **env), capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_a_model_name_with_a_path_is_refused_before_any_folder(tmp_path):
    cwd = tmp_path / "work"
    cwd.mkdir()
    for args in (["model.name=../../escaped"], ["-m", "model.name=fine,../../escaped"]):
        proc = gnnbench([*args, "train.epochs=2"], cwd)
        assert proc.returncode == 1 and proc.stdout == ""
        [line] = proc.stderr.splitlines()
        assert "model.name='../../escaped' becomes a file name" in line
    assert not list(tmp_path.rglob("*escaped*"))


def test_a_dataset_name_with_a_path_makes_no_cache_file_outside_data_dir(run_in, tmp_path):
    result = run_in("dataset.name=../../escaped", "train.epochs=2")
    assert result.status == "error" and result.input_error is True
    assert "dataset.name='../../escaped' becomes a file name" in result.reason
    assert not list(tmp_path.parent.rglob("*escaped*"))


@pytest.mark.parametrize("mistake", ["train.epoch=3", "train.lr=abc"])
def test_a_mistyped_command_into_an_existing_run_folder_writes_beside_it(tmp_path, mistake):
    """A key that does not exist (caught before Hydra) and a bad value (caught in the run)."""
    run_dir = tmp_path / "outputs" / "my-run"
    proc = gnnbench(["train.epochs=2", "train.warmup_epochs=1", f"hydra.run.dir={run_dir}"],
                    tmp_path)
    assert proc.returncode == 0, proc.stderr
    before = (run_dir / "results.json").read_text()

    proc = gnnbench(["train.epochs=2", "train.warmup_epochs=1", mistake,
                     f"hydra.run.dir={run_dir}"], tmp_path)
    key = mistake.split("=")[0]
    assert proc.returncode == 1 and key in proc.stderr
    assert (run_dir / "results.json").read_text() == before  # the run's record is intact
    [beside] = [p for p in run_dir.parent.iterdir() if p != run_dir]
    assert beside.name.startswith("my-run_invalid-command_")
    record = json.loads((beside / "results.json").read_text())
    assert record["status"] == "error" and key in record["reason"]


@pytest.mark.slow  # several gnnbench processes or a sweep of jobs: the tier rule
def test_a_sweep_resumed_through_its_real_path_runs_its_unfinished_eager_job(tmp_path):
    """Started through a symlink, a job killed before it wrote its record (here: its record
    removed, as SIGKILL would leave it), resumed through the resolved path as the resume
    command prints it: the job runs; it is never 'skipped: same eager run as' itself."""
    real = tmp_path / "real-sweep"
    real.mkdir()
    link = tmp_path / "linked-sweep"
    link.symlink_to(real)
    args = ["-m", "train.seed=0,1", "train.epochs=2", "train.warmup_epochs=1"]
    proc = gnnbench([*args, f"hydra.sweep.dir={link}"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [job] = [p for p in real.iterdir() if p.name.startswith("0_")]
    (job / "results.json").unlink()

    proc = gnnbench([*args, f"hydra.sweep.dir={real.resolve()}"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((job / "results.json").read_text())
    assert record["status"] == "ok", record["reason"]
    assert "same eager run as" not in proc.stdout


@pytest.mark.slow  # several gnnbench processes or a sweep of jobs: the tier rule
def test_a_second_sweep_into_a_running_sweeps_folder_says_so_and_exits(tmp_path):
    """Two real processes: the first sweep is held inside its first job's forward (a file
    gate, not a timing guess) while the second starts into the same folder."""
    sweep_dir = tmp_path / "sweep"
    gate = tmp_path / "gate"
    gate.touch()
    args = ["-m", "train.seed=0,1", "train.epochs=2", "train.warmup_epochs=1",
            "model._target_=support.held_model.HeldGCN", "wandb.mode=disabled",
            f"hydra.sweep.dir={sweep_dir}"]
    importable = {"PYTHONPATH": str(Path(__file__).parent)}
    first = start(args, tmp_path, env={"HELD_MODEL_GATE": str(gate), **importable})
    try:
        deadline = time.monotonic() + 300
        while not Path(f"{gate}.held").exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first sweep never reached its forward"
            time.sleep(0.05)
        second = gnnbench(args, tmp_path, **importable)
        assert second.returncode == 1 and second.stdout == ""
        [line] = second.stderr.splitlines()
        assert f"another sweep is running in {sweep_dir}" in line
    finally:
        gate.unlink()
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    jobs = sorted(p.name for p in sweep_dir.iterdir() if (p / "results.json").exists())
    assert len(jobs) == 2
    # The folder is free again once its sweep has ended: a resume is not refused.
    assert gnnbench(args, tmp_path, **importable).returncode == 0


@pytest.mark.slow  # several gnnbench processes or a sweep of jobs: the tier rule
def test_a_resumed_sweep_with_a_bad_value_keeps_one_record_per_job(tmp_path):
    """The bad value's error record is replaced by the same error on resume, never set
    beside it (which would count the job twice in the sweep's report)."""
    sweep_dir = tmp_path / "sweep"
    args = ["-m", "train.lr=0.01,abc", "train.epochs=2", "train.warmup_epochs=1",
            f"hydra.sweep.dir={sweep_dir}"]
    for _ in range(2):
        proc = gnnbench(args, tmp_path)
        assert proc.returncode == 1 and "train.lr='abc' is not a number" in proc.stderr
    jobs = sorted(p.name for p in sweep_dir.iterdir() if (p / "results.json").exists())
    assert len(jobs) == 2, jobs
