"""Sweeps and reports that scale: a sweep composes one job of each kind before it starts
(not every job: 3,000 seeds were minutes of silence), and a report finds each planned job's
folder through an index (not by comparing every planned job with every folder). The times
themselves are measured by gnnbench/benchmarks/scale.py (results/cpu-scale/)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from support.processes import run

from gnnbench.benchmarks import scale
from gnnbench.cli import sweep_check
from gnnbench.records import store, sweep
from gnnbench.report import cli as report_cli


class _Loader:
    def __init__(self) -> None:
        self.composed: list[list[str]] = []

    def load_sweep_config(self, master_config: object, sweep_overrides: list[str]) -> None:
        self.composed.append(sweep_overrides)


def test_a_sweep_composes_one_job_of_each_kind_before_it_starts(monkeypatch):
    from hydra.plugins.sweeper import Sweeper

    batch = [[f"model={m}", f"train.seed={s}", "train.lr=0.01"]
             for m in ("gcn", "sage") for s in range(1500)]
    loader = _Loader()
    sweeper = SimpleNamespace(hydra_context=SimpleNamespace(config_loader=loader), config=None)
    monkeypatch.setattr(Sweeper, "validate_batch_is_legal", Sweeper.validate_batch_is_legal)
    sweep_check.install()
    Sweeper.validate_batch_is_legal(sweeper, batch)
    assert loader.composed == [batch[0], batch[1500]]


@pytest.mark.parametrize("one, other", [
    ("train.seed=0", "train.seed=2999"), ("train.lr=0.01", "train.lr=1e-3"),
    ("+train.extra=1", "+train.extra=-2"), ("train.paired=true", "train.paired=False")])
def test_literals_of_one_type_for_a_gnnbench_key_are_one_kind(one, other):
    assert sweep_check.job_kind([one, "model=gcn"]) == sweep_check.job_kind([other, "model=gcn"])


@pytest.mark.parametrize("one, other", [
    ("model=gcn", "model=sage"), ("train.device=cpu", "train.device=cuda"),
    ("train.lr=1", "train.lr=0.5"), ("train.fanouts=[1]", "train.fanouts=[2]"),
    ("~train.lr", "~train.seed"), ("hydra.launcher.n_jobs=1", "hydra.launcher.n_jobs=2"),
    ("hydra/launcher=basic", "hydra/launcher=joblib"), ("gpus=1", "gpus=2")])
def test_values_that_may_compose_differently_are_each_composed(one, other):
    assert sweep_check.job_kind([one]) != sweep_check.job_kind([other])


def test_a_sweep_with_a_value_that_cannot_compose_fails_before_its_first_job(tmp_path):
    """The guarantee the up-front check gives, kept: the bad value is in the second job of
    a kind that is composed for each value (a typed Hydra key)."""
    proc = run(["-m", "train.seed=range(200)", "hydra.job.chdir=false,maybe",
                f"hydra.sweep.dir={tmp_path / 'sweep'}"], tmp_path, timeout=300)
    assert proc.returncode != 0
    assert "maybe" in proc.stderr and "#0 : " not in proc.stdout + proc.stderr
    assert not list((tmp_path / "sweep").glob("*/results.json"))


def test_a_report_finds_each_planned_job_among_few_folders(tmp_path, monkeypatch):
    """A sweep's completeness check looks each planned job up in an index: the override
    sets it compares grow with the jobs, not with jobs x folders (2,000 records: 4 million
    comparisons before)."""
    root = tmp_path / "sweep"
    planned = scale.make_records(root, 120, models=["gcn"])
    gone = sorted(root.glob("7_*")) + sorted(root.glob("100_*"))
    for job in gone:
        (job / store.RESULTS_FILE).unlink()
    compared = []
    measured = sweep._measured

    class Counted(frozenset):
        def __le__(self, other: frozenset) -> bool:
            compared.append(1)
            return frozenset.__le__(self, other)

    monkeypatch.setattr(sweep, "_measured", lambda overrides: Counted(measured(overrides)))
    text = report_cli.completeness([root], store.find([root]))
    assert planned == 120 and f"({planned} jobs planned; 2 without a record, 0 interrupted)" \
        in text
    assert [":".join(line.split(":")[:2]) for line in text.splitlines()
            if line.startswith("- ")] == [
        "- no record: job 7", "- no record: job 100"]
    assert len(compared) <= 2 * planned


def test_generated_records_are_the_source_sweep_with_more_seeds(tmp_path):
    root = tmp_path / "sweep"
    assert scale.make_records(root, 5, models=["gcn"]) == 6  # rounded up to whole seeds
    assert len(store.find([root])) == 6
    assert sorted(p.parent.name for p in root.glob("*/results.json")) == [
        "0_gcn-cora-eager-s0", "1_gcn-cora-eager-s1", "2_gcn-cora-eager-s2",
        "3_gcn-cora-compile-reduce-overhead-step-s0",
        "4_gcn-cora-compile-reduce-overhead-step-s1",
        "5_gcn-cora-compile-reduce-overhead-step-s2"]
    assert report_cli.completeness([root], store.find([root])) == ""
    record = json.loads((root / "4_gcn-cora-compile-reduce-overhead-step-s1"
                         / store.RESULTS_FILE).read_text())
    assert record["config"]["train"]["seed"] == 1
