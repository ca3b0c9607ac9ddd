"""A run folder that already holds a finished run keeps it only for the same run: the
same command again is a resume ("kept"), another command aimed at the folder (other
epochs, a fixed typo) runs. Real commands in real processes."""

from __future__ import annotations

import json

import pytest
from support.processes import run

SHORT = ["train.epochs=3", "train.warmup_epochs=1", "wandb.mode=disabled"]


def epochs_of(folder) -> tuple[str, int]:
    record = json.loads((folder / "results.json").read_text())
    return record["status"], len(record["epochs"])


@pytest.mark.slow  # several gnnbench processes or a sweep of jobs: the tier rule
def test_the_same_run_is_kept_and_another_one_runs(tmp_path):
    first = run([*SHORT, "hydra.run.dir=R/a"], tmp_path)
    assert first.returncode == 0, first.stderr
    again = run([*SHORT, "hydra.run.dir=R/a"], tmp_path)
    assert again.returncode == 0 and "gnnbench: kept a: already ok" in again.stdout
    longer = run([*SHORT, "train.epochs=4", "hydra.run.dir=R/a"], tmp_path)
    assert longer.returncode == 0, longer.stderr
    assert "gnnbench: kept" not in longer.stdout
    assert epochs_of(tmp_path / "R/a") == ("ok", 4)


def test_a_fixed_typo_runs_where_its_error_was_recorded(tmp_path):
    typo = run([*SHORT, "train.lr=abc", "hydra.run.dir=R/b"], tmp_path)
    assert typo.returncode == 1 and "train.lr" in typo.stderr
    assert epochs_of(tmp_path / "R/b") == ("error", 0)
    fixed = run([*SHORT, "hydra.run.dir=R/b"], tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert "gnnbench: kept" not in fixed.stdout
    assert epochs_of(tmp_path / "R/b") == ("ok", 3)
