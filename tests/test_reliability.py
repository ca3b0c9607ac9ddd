"""Real faults, injected for real: signals to real subprocesses, concurrent processes on one
data_dir, truncated and crafted files, a real NaN, a full disk, an unwritable folder. Each
test names the defect it guards (the reliability issue's list)."""

from __future__ import annotations

import json
import math
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.processes import clean_env, run, run_without_override, start, wait_for_line

from gnnbench.report.cli import main as report_main

QUICK = ["train.warmup_epochs=1", "train.device=cpu"]


def records(folder: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in folder.rglob("results.json")}


# --- 1. SIGINT/SIGTERM ------------------------------------------------------------------

@pytest.mark.slow
def test_ctrl_c_saves_an_interrupted_record(tmp_path):
    """Defect 1: Ctrl-C at an epoch gives exit 130 and a record of the epochs done."""
    proc = start(["train.epochs=300", "wandb.mode=disabled", *QUICK], tmp_path)
    wait_for_line(proc.stderr, "epoch 1/300")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    [record] = records(tmp_path / "outputs").values()
    assert record["status"] == "interrupted" and "SIGINT after epoch" in record["reason"]
    assert 1 <= len(record["epochs"]) < 300
    assert record["timing"]["train_s"]["n"] >= 0 and record["accuracy"] is not None


@pytest.mark.slow
def test_a_second_ctrl_c_stops_at_once(tmp_path):
    """Defect 1: the second signal does not wait for the epoch to end. The model holds its
    forward at a gate, so both signals arrive inside one epoch on any machine: the test
    synchronises on files and lines, never on how long an epoch takes."""
    gate = tmp_path / "gate"
    env = {"HELD_MODEL_GATE": str(gate), "PYTHONPATH": str(Path(__file__).parent)}
    proc = start(["train.epochs=50", "model._target_=support.held_model.HeldGCN",
                  "wandb.mode=disabled", *QUICK], tmp_path, env=env)
    wait_for_line(proc.stderr, "epoch 1/50")
    gate.touch()
    _wait_for_file(Path(f"{gate}.held"), proc)
    proc.send_signal(signal.SIGINT)
    wait_for_line(proc.stderr, "SIGINT received")
    proc.send_signal(signal.SIGINT)  # still held inside the same epoch's forward
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    [record] = records(tmp_path / "outputs").values()
    assert record["status"] == "interrupted" and "stopped at once" in record["reason"]


def _wait_for_file(path: Path, proc: subprocess.Popen, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


SWEEP = ["-m", "train.seed=0,1,2,3,4", "train.epochs=40", "wandb.mode=offline", *QUICK]


@pytest.mark.slow
def test_sigterm_stops_a_sweep_cleanly_and_the_same_command_resumes_it(tmp_path):
    """Defects 1 and 2: SIGTERM during job 2 of 5 leaves two records, an interrupted one and
    a report that says the sweep is incomplete; the same command into the same folder runs
    only the interrupted and missing jobs, and logs no second W&B run for kept ones."""
    sweep_dir = tmp_path / "sweep"
    proc = start([*SWEEP, f"hydra.sweep.dir={sweep_dir}"], tmp_path)
    wait_for_line(proc.stderr, "[gcn-synthetic-eager-s2] epoch 1/40")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "sweep stopped: SIGTERM during 2_" in err and "to resume, run:" in err
    done = records(sweep_dir)
    assert {k[:1]: v["status"] for k, v in done.items()} == {
        "0": "ok", "1": "ok", "2": "interrupted"}
    report = (sweep_dir / "report.md").read_text()
    assert "Sweep incomplete" in report and "2 without a record, 1 interrupted" in report

    again = run([*SWEEP, f"hydra.sweep.dir={sweep_dir}"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert "kept 0_" in again.stdout and "kept 1_" in again.stdout
    done = records(sweep_dir)
    assert sorted(v["status"] for v in done.values()) == ["ok"] * 5
    assert "Sweep incomplete" not in (sweep_dir / "report.md").read_text()
    w_and_b = {job.name[:1]: len(list(job.glob("wandb/offline-run-*")))
               for job in sweep_dir.iterdir() if (job / "results.json").is_file()}
    assert w_and_b == {"0": 1, "1": 1, "2": 2, "3": 1, "4": 1}


# --- 3. Concurrent first use of a data_dir, 6. run folders that collide -------------------

@pytest.mark.slow
def test_concurrent_runs_share_an_empty_data_dir_and_never_a_folder(tmp_path, mirror):
    """Defects 3 and 6: two runs generating one synthetic graph and three copying Cora from
    a mirror, all at once on an empty data_dir, all succeed; runs started in the same second
    (two of them identical) each get their own folder."""
    data = tmp_path / "data"
    big = ["dataset.num_nodes=100000", "dataset.num_edges=400000", "train.epochs=2",
           "wandb.mode=disabled", f"data_dir={data}", *QUICK]
    cora = ["dataset=cora", f"data_mirror={mirror}", "train.epochs=2", "wandb.mode=disabled",
            f"data_dir={data}", *QUICK]
    jobs = [start([*big, "train.lr=0.01"], tmp_path), start([*big, "train.lr=0.5"], tmp_path),
            start(cora, tmp_path), start(cora, tmp_path), start(cora, tmp_path)]
    for job in jobs:
        _, err = job.communicate(timeout=300)
        assert job.returncode == 0, err
    done = list(records(tmp_path / "outputs").values())
    assert len(done) == 5 and all(r["status"] == "ok" for r in done)
    synthetic = [r for r in done if r["config"]["dataset"]["name"] == "synthetic"]
    assert sorted(r["dataset"]["from_cache"] for r in synthetic) == [False, True]
    assert sorted(r["config"]["train"]["lr"] for r in synthetic) == [0.01, 0.5]


# --- 4. Corrupt caches, 11. crafted raw files ---------------------------------------------

def test_a_truncated_or_foreign_synthetic_cache_is_regenerated(run_in, capsys):
    """Defect 4: a truncated cache, garbage, and a cache made for another seed are each
    regenerated with one warning naming the file, never used."""
    first = run_in("train.epochs=2")
    path = Path(first.dataset.cache_file)
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    again = run_in("train.epochs=2")
    assert again.status == "ok" and again.dataset.from_cache is False
    assert f"cache file {path} is unusable" in capsys.readouterr().err
    path.write_bytes(b"not a torch file at all")
    assert run_in("train.epochs=2").dataset.from_cache is False
    assert str(path) in capsys.readouterr().err
    other = Path(run_in("train.epochs=2", "dataset.seed=1").dataset.cache_file)
    shutil.copyfile(other, path)  # another seed's graph under this seed's name
    third = run_in("train.epochs=2")
    assert third.dataset.from_cache is False and "other parameters" in \
        capsys.readouterr().err
    assert third.epochs[0].loss == first.epochs[0].loss  # the seed-0 graph


def test_a_truncated_raw_or_processed_planetoid_file_is_replaced(run_in, mirror, tmp_path,
                                                                  capsys):
    """Defect 4: a truncated raw file is copied again from the mirror, a truncated processed
    file is processed again; each with a warning naming it, and the run is fine."""
    first = run_in("dataset=cora", f"data_mirror={mirror}", "train.epochs=2")
    raw = tmp_path / "data" / "Cora" / "raw" / "ind.cora.graph"
    raw.write_bytes(raw.read_bytes()[:100])
    shutil.rmtree(tmp_path / "data" / "Cora" / "processed")
    again = run_in("dataset=cora", f"data_mirror={mirror}", "train.epochs=2")
    assert again.status == "ok" and f"{raw} is not the official" in capsys.readouterr().err
    processed = tmp_path / "data" / "Cora" / "processed" / "data.pt"
    processed.write_bytes(processed.read_bytes()[:200])
    third = run_in("dataset=cora", f"data_mirror={mirror}", "train.epochs=2")
    assert third.status == "ok", third.reason
    err = capsys.readouterr().err  # checked before PyG opens it: not plain data, re-made
    assert f"{processed} is not plain data" in err and "processing again" in err
    assert third.epochs[0].loss == first.epochs[0].loss


class _Marker:
    """Unpickling this creates a file: proof that code in a pickle ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path(self.path).touch, ())


def test_a_crafted_raw_file_in_a_mirror_is_never_unpickled(run_in, mirror, tmp_path):
    """Defect 11: PyG unpickles Planetoid's raw files; one that is not the official file is
    an error naming it, and nothing in it runs."""
    crafted = tmp_path / "mirror"
    shutil.copytree(mirror / "Cora", crafted / "Cora")
    marker = tmp_path / "code-ran"
    target = crafted / "Cora" / "raw" / "ind.cora.x"
    target.chmod(0o644)
    target.write_bytes(pickle.dumps(_Marker(str(marker))))
    result = run_in("dataset=cora", f"data_mirror={crafted}", "train.epochs=2")
    assert result.status == "error" and str(target) in result.reason
    assert "not the official Planetoid file" in result.reason
    assert not marker.exists()


# --- 5. Diverged training -----------------------------------------------------------------

def test_a_huge_learning_rate_ends_as_diverged_at_the_first_bad_epoch(run_in):
    """Defect 5: lr=1e30 is not `ok` with accuracy at chance: the run stops at the first
    non-finite loss and says which epoch."""
    result = run_in("train.lr=1e30", "train.epochs=50")
    assert result.status == "diverged", result.reason
    bad = len(result.epochs) - 1
    assert result.reason.endswith(f"at epoch {bad}") and "non-finite loss" in result.reason
    assert not math.isfinite(result.epochs[bad].loss)  # JSON holds it as null
    assert all(math.isfinite(r.loss) for r in result.epochs[:bad])
    assert bad < 49


def test_an_epoch_row_of_the_wrong_type_fails_the_run_keeping_the_epochs_before_it():
    """Epoch rows are validated once, after the loop: a row a trainer got wrong (a bug) is
    still an error, and the record keeps the epochs before it."""
    from gnnbench.runner import loop

    good = {"epoch": 0, "loss": 1.0, "train_s": 0.1, "eval_s": 0.01}
    rows = [good, {**good, "epoch": 1}, {**good, "epoch": 2, "loss": "1.0"}, good]
    kept, invalid = loop._validated(rows)
    assert [r.epoch for r in kept] == [0, 1] and invalid is not None
    assert "loss" in str(invalid)
    assert loop._validated(rows[:2])[1] is None


# --- 7. Full disk, 10. unwritable output folder -------------------------------------------

def _in_small_tmpfs(tmp_path: Path, size: str, script: str) -> subprocess.CompletedProcess:
    """Run `script` (sh) in a private mount namespace where $SMALL is a tmpfs of `size`."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a small filesystem")
    small = tmp_path / "small"
    small.mkdir()
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         f'mount -t tmpfs -o size={size} tmpfs "$SMALL" || exit 99; {script}'],
        cwd=tmp_path, env=clean_env(tmp_path, SMALL=str(small), PY=sys.executable),
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    if proc.returncode == 99:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    return proc


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_leaves_no_temporary_file(tmp_path):
    """Defect 7: results.json cannot be written on a full filesystem: one error line naming
    the file, exit 1, no `.tmp` left behind."""
    proc = _in_small_tmpfs(tmp_path, "48k", (
        '"$PY" -m gnnbench train.epochs=150 train.warmup_epochs=1 train.device=cpu '
        'wandb.mode=disabled hydra.run.dir="$SMALL/run"; code=$?; '
        'ls -A "$SMALL/run"; exit $code'))
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gnnbench: error")]
    assert len(errors) == 1 and "No space left on device" in errors[0], proc.stderr
    assert "results.json" in errors[0] and "Traceback" not in proc.stderr
    assert ".tmp" not in proc.stdout and "results.json" not in proc.stdout


@pytest.mark.slow
def test_a_sweep_on_a_disk_that_fills_stops_cleanly(tmp_path):
    """Defect 7: the job that cannot record its result stops the sweep with a summary of
    what finished and how to resume; the finished jobs' records stay."""
    listing = tmp_path / "ok-records.txt"
    proc = _in_small_tmpfs(tmp_path, "160k", (
        '"$PY" -m gnnbench -m train.seed=0,1,2,3 train.epochs=120 train.warmup_epochs=1 '
        'train.device=cpu wandb.mode=disabled hydra.sweep.dir="$SMALL/sweep"; code=$?; '
        f'grep -l \'"status": "ok"\' "$SMALL"/sweep/*/results.json > {listing}; '
        'ls -A "$SMALL"/sweep/*/; exit $code'))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "No space left on device" in proc.stderr and "sweep stopped" in proc.stderr
    assert "to resume, run:" in proc.stderr and "hydra.sweep.dir=" in proc.stderr
    saved = listing.read_text().split()
    assert 1 <= len(saved) < 4  # the jobs before the disk filled kept their records
    assert all(f"  ok           {Path(s).parent}" in proc.stderr for s in saved)
    assert ".tmp" not in proc.stdout


def test_an_unwritable_output_folder_is_one_line(tmp_path):
    """Defect 10, as a user without write permission (root's override capability dropped:
    root alone would write anyway and prove nothing)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    proc = run_without_override(["train.epochs=2", "wandb.mode=disabled",
                                 f"hydra.run.dir={locked / 'run'}"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"gnnbench: error: cannot write to the output folder {locked / 'run'} "
        "(Permission denied); choose a writable one with hydra.run.dir=DIR"]


# --- 8. A bad record in a folder ----------------------------------------------------------

def test_the_report_skips_an_unreadable_record_and_names_it(run_in, tmp_path, capsys):
    """Defect 8: one invalid results.json does not cost the report."""
    folder = tmp_path / "sweep"
    run_in("train.epochs=3", out=folder / "0_good")
    (folder / "1_bad").mkdir(parents=True)
    (folder / "1_bad" / "results.json").write_text('{"status": "ok", "config": ')
    assert report_main([str(folder), "--no-wandb"]) == 0
    err = capsys.readouterr().err
    assert f"skipping invalid record {folder / '1_bad' / 'results.json'}" in err
    assert "| gcn | synthetic | eager | 1/1 ok |" in (folder / "report.md").read_text()


# --- Determinism ------------------------------------------------------------------------

def test_the_same_seed_trains_the_same_on_cpu(run_in):
    """Two runs of one seed on the CPU: the same losses and accuracies, epoch by epoch."""
    first, second = run_in("train.epochs=5"), run_in("train.epochs=5")
    for key in ("loss", "train_acc", "val_acc", "test_acc"):
        assert [getattr(r, key) for r in first.epochs] == [getattr(r, key) for r in second.epochs]
    assert first.accuracy == second.accuracy
