"""Files as a user on a shared machine meets them: written with the user's umask (a
colleague's report reads the records), and a full disk is one clear line that leaves no
half-written or temporary file behind. Full disks are real: a tiny tmpfs, mounted by root;
where mounting is not allowed the disk tests skip, saying so."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.processes import clean_env

from gnnbench.records import store
from gnnbench.records.model import CommandRecord


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_records_caches_and_reports_follow_the_umask(run_in, tmp_path, umask_022):
    from gnnbench.report.cli import write_report

    record = run_in("train.epochs=2", out=tmp_path / "runs" / "one")
    assert record.status == "ok", record.reason
    write_report([tmp_path / "runs"], log_to_wandb=False)
    made = [tmp_path / "runs" / "one" / "results.json",
            *[tmp_path / "runs" / f for f in ("report.md", "report.csv", "speedup.png")],
            *(tmp_path / "data").rglob("*.pt")]
    assert len(made) >= 5
    assert {p.name: mode(p) for p in made} == {p.name: 0o644 for p in made}


@pytest.fixture
def tiny_disk(tmp_path):
    """A 256 KiB tmpfs: room for a record, not for a dataset."""
    mount = tmp_path / "disk"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here to fill it ({proc.stderr.strip()})")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def leftovers(folder: Path) -> list[Path]:
    """Temporary or empty files: what a failed write must not leave."""
    return [p for p in folder.rglob("*") if p.is_file()
            and (p.name.endswith(".tmp") or p.stat().st_size == 0 and p.suffix != ".lock")]


def test_a_record_that_does_not_fit_keeps_the_previous_one_and_no_temp_file(tiny_disk):
    folder = tiny_disk / "run"
    store.write(CommandRecord(name="first", reason="a bad value", command=["gnnbench"]), folder)
    with pytest.raises(store.WriteError, match="No space left on device"):
        store.write(CommandRecord(name="second", reason="a bad value", command=["gnnbench"],
                                  padding="x" * 400_000), folder)
    assert json.loads((folder / "results.json").read_text())["name"] == "first"
    assert leftovers(tiny_disk) == []


def test_a_full_data_dir_is_one_line_and_no_partial_cache(tiny_disk, tmp_path):
    """The synthetic graph's cache file (about 1 MB) cannot be written: torch.save's own
    message would be 'enforce fail at inline_container.cc'."""
    proc = subprocess.run(
        [sys.executable, "-m", "gnnbench", "train.epochs=2", "train.warmup_epochs=1",
         f"data_dir={tiny_disk}", "wandb.mode=disabled"],
        cwd=tmp_path, env=clean_env(tmp_path), capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert f"data_dir='{tiny_disk}' is not writable (No space left on device)" in line
    assert proc.stdout == ""
    assert leftovers(tiny_disk) == []


def fill(disk: Path) -> None:
    """Write until the disk says it is full (what the user did on purpose)."""
    with open(disk / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as exc:
            assert exc.errno == 28, exc


@pytest.mark.parametrize(("mode", "key"), [([], "hydra.run.dir"),
                                           (["-m", "train.seed=0,1"], "hydra.sweep.dir")])
def test_a_full_output_disk_is_one_line_before_hydra_writes(tiny_disk, tmp_path, mode, key):
    """Hydra would write `.hydra/config.yaml` (or `multirun.yaml`) empty and print a
    traceback: the command says which folder and why, and leaves nothing in it."""
    fill(tiny_disk)
    folder = tiny_disk / "outputs" / "here"
    proc = subprocess.run(
        [sys.executable, "-m", "gnnbench", *mode, "train.epochs=2", "wandb.mode=disabled",
         f"{key}={folder}"],
        cwd=tmp_path, env=clean_env(tmp_path), capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"gnnbench: error: cannot write to the output folder {folder} "
                           "(no space left on device")
    assert line.endswith(f"choose a writable one with {key}=DIR")
    assert sorted(p.name for p in tiny_disk.rglob("*")) == ["filler"]


@pytest.mark.parametrize("free_kib", [36, 44])
def test_a_disk_that_fills_between_jobs_stops_the_sweep_in_one_line(tiny_disk, tmp_path,
                                                                     free_kib):
    """Room to start and for the first job, not for the next: whichever of its files meets
    the full disk first (Hydra's `.hydra/*.yaml`, its claim to its eager run, its record),
    one error line, the sweep's stop with what finished and how to resume, and no empty or
    temporary file."""
    with open(tiny_disk / "filler", "wb") as f:
        f.write(b"\0" * (256 - free_kib) * 1024)
    sweep = tiny_disk / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "gnnbench", "-m", "train.seed=0,1,2", "train.epochs=2",
         "train.warmup_epochs=1", "train.device=cpu", "wandb.mode=disabled",
         f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, env=clean_env(tmp_path), capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    [error] = [line for line in proc.stderr.splitlines() if "error" in line]
    assert error.startswith("gnnbench: error: cannot write ") and \
        error.lower().endswith("(no space left on device)"), error
    assert "gnnbench: sweep stopped: " in proc.stderr
    assert f"  ok           {sweep / '0_gcn-synthetic-eager-s0'}" in proc.stderr
    assert f"hydra.sweep.dir={sweep}" in proc.stderr.splitlines()[-1]
    assert leftovers(tiny_disk) == []


@pytest.mark.parametrize("free_kib", [0, 8])
def test_wandb_on_a_full_disk_never_says_saved(tiny_disk, tmp_path, free_kib):
    """The run's folder has room for its record; W&B's folder (`<run>/wandb`, here on the
    full disk) does not: W&B's own `finish()` returns as if it saved the run (8 KiB free: an
    empty run-<id>.wandb, or, when its service gets less far, an error as it starts). One
    line says it was not saved and why; no logging tracebacks."""
    with open(tiny_disk / "filler", "wb") as f:
        f.write(b"\0" * (256 - free_kib) * 1024)
    run = tmp_path / "run"
    run.mkdir()
    (tiny_disk / "wandb").mkdir()
    (run / "wandb").symlink_to(tiny_disk / "wandb")
    proc = subprocess.run(
        [sys.executable, "-m", "gnnbench", "train.epochs=2", "train.warmup_epochs=1",
         "wandb.mode=offline", f"hydra.run.dir={run}"],
        cwd=tmp_path, env=clean_env(tmp_path), capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]  # the run itself is measured and kept
    assert "saved in" not in proc.stdout
    assert "Logging error" not in proc.stderr and "Traceback" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if "W&B" in x]
    assert line.endswith(f"results.json in {run} is complete")
    # With 8 KiB free, W&B may start and leave an empty log, or fail while it starts,
    # depending on how far its service gets before the disk is full: either way one line
    # says the run was not saved, and why.
    assert "no space left on device" in line.lower(), line
    ways = ("W&B offline run not saved in", "W&B logging failed") if free_kib else \
        ("W&B logging failed",)
    assert any(way in line for way in ways), line
    assert json.loads((run / "results.json").read_text())["wandb_dir"] is None
