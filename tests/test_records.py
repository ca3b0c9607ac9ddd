"""Records are the only memory between runs: what identifies a setting, how an eager
reference is found on disk, and how comparisons come out the same from any process, folder
order or host."""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from gnnbench import config
from gnnbench.records import compare, identity, model, schema, store
from gnnbench.report.rows import build_rows


def composed(*overrides: str) -> dict:
    return OmegaConf.to_container(config.compose_config(list(overrides)), resolve=True)


def test_setting_ignores_where_things_are_and_how_they_are_reported():
    base = composed("dataset=cora")
    same = composed("dataset=cora", "data_dir=/elsewhere", "data_mirror=/mnt/m",
                    "wandb.mode=offline", "wandb.group=g", "reference_dirs=[/tmp]",
                    "train.device=cuda:1", "compile=true", "compiler.mode=reduce-overhead")
    assert identity.setting_key(base, "cuda") == identity.setting_key(same, "cuda")


@pytest.mark.parametrize("change", ["train.lr=0.02", "model.hidden=32", "dataset=citeseer",
                                    "model=sage", "train.epochs=100", "dataset.seed=3"])
def test_setting_changes_with_what_is_measured(change):
    assert identity.setting_key(composed(), "cpu") != identity.setting_key(composed(change),
                                                                           "cpu")


def test_device_type_is_part_of_the_setting_and_seed_of_the_run():
    cfg = composed()
    assert identity.setting_key(cfg, "cpu") != identity.setting_key(cfg, "cuda")
    other_seed = composed("train.seed=1")
    assert identity.setting_key(cfg, "cpu") == identity.setting_key(other_seed, "cpu")
    assert identity.run_key(cfg, "cpu") != identity.run_key(other_seed, "cpu")


def test_records_of_older_versions_are_upgraded_on_read(tmp_path):
    old = {**fake_run("old", False, [1.0, 1.1]), "env": {"device": "cuda"},
           "cuda_graphs": "cudagraph trees"}
    del old["cuda_graph_audit"]
    (tmp_path / "results.json").write_text(json.dumps(old))
    record = store.read(tmp_path)
    assert record.schema_version == 1 and record.cuda_graph_audit is None
    fresh = model.new_record(config.compose_config([]), "fresh")
    assert fresh.schema_version == schema.SCHEMA_VERSION >= 2


def test_unreadable_records_are_skipped_with_their_name(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text('{"status": "ok", "conf')
    assert store.find([tmp_path]) == []
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"gnnbench: warning: skipping invalid record "
                           f"{tmp_path / 'a' / 'results.json'} (not JSON: Unterminated string")


def test_claims_let_one_job_of_a_setting_run(tmp_path):
    assert store.claim(tmp_path, "k-s0", tmp_path / "job0") is None
    assert store.claim(tmp_path, "k-s0", tmp_path / "job3") == str(tmp_path / "job0")
    assert store.claim(tmp_path, "k-s0", tmp_path / "job0") is None  # a re-run of job0
    assert store.claim(tmp_path, "k-s1", tmp_path / "job1") is None


def run_cli(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GNNBENCH_DATA_MIRROR"}
    return subprocess.run([sys.executable, "-m", "gnnbench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_eager_and_compiled_from_two_processes_and_caches_compare(tmp_path):
    """Two processes, two data_dir values, one folder: the compiled run finds its eager
    reference on disk, and the report over the folder shows the same speedup."""
    folder = tmp_path / "runs"
    common = ["model=sage", "train.epochs=8", "train.warmup_epochs=2", "wandb.mode=disabled"]
    eager = run_cli([*common, f"data_dir={tmp_path / 'cache-a'}",
                     f"hydra.run.dir={folder / 'eager'}"], tmp_path)
    assert eager.returncode == 0, eager.stderr
    compiled = run_cli([*common, "compile=true", f"data_dir={tmp_path / 'cache-b'}",
                        f"hydra.run.dir={folder / 'compiled'}"], tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    record = json.loads((folder / "compiled" / "results.json").read_text())
    assert record["comparison"]["reference"] == "sage-synthetic-eager-s0"
    assert record["comparison"]["reference_dirs"] == [str(folder / "eager")]

    report = subprocess.run([sys.executable, "-m", "gnnbench.report", str(folder),
                             "--no-wandb"], capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    rows = list(csv.DictReader((folder / "report.csv").open()))
    assert [r["variant"] for r in rows] == ["eager", "compile-default"]
    assert float(rows[1]["speedup"]) == pytest.approx(record["comparison"]["speedup"])
    assert float(rows[1]["speedup_ci_low"]) == pytest.approx(
        record["comparison"]["speedup_ci95"][0])


def fake_run(name: str, compiled: bool, steps: list[float], seed: int = 0,
             acc: float = 0.8) -> dict:
    cfg = composed(f"train.seed={seed}", f"compile={str(compiled).lower()}")
    return {"name": name, "status": "ok", "config": cfg, "env": {"device": "cpu"},
            "timing": {"warmup_epochs": 1, "compile_overhead_s": 2.0 if compiled else None,
                       "train_step_s": {"median": sorted(steps)[len(steps) // 2]}},
            "epochs": [{"train_s": 9.0}] + [{"train_s": s} for s in steps],
            "accuracy": {"test_at_best_val": acc}, "memory": {"peak_bytes": 100},
            "compile": {"graph_breaks": 0, "recompiles": 1} if compiled else None,
            "cuda_graphs": "none", "cuda_graph_audit": None}


def test_report_rows_do_not_depend_on_record_order():
    runs = [model.parse(fake_run(f"e{s}", False, [2.0 + 0.01 * i for i in range(6)], seed=s))
            for s in range(3)]
    runs += [model.parse(fake_run(f"c{s}", True, [1.0 + 0.01 * i for i in range(6)], seed=s,
                                  acc=0.79))
             for s in range(3)]
    expected = build_rows(runs)
    for seed in range(5):
        shuffled = runs[:]
        random.Random(seed).shuffle(shuffled)
        assert build_rows(shuffled) == expected
    [_, row] = expected
    assert row.speedup == pytest.approx(2.025 / 1.025)
    assert row.test_acc_delta == pytest.approx(-0.01)
    # The same function gives one run's own comparison.
    one = compare.compare([runs[0]], [runs[3]])
    assert one.speedup == pytest.approx(row.speedup)


def test_world_size_is_part_of_the_setting_and_not_of_its_scaling_reference():
    """A DDP run on 2 ranks and on 1 are different settings (one is the other's scaling
    reference, matched by `scaling_key`); where the pool or a launcher ran them is not."""
    one = composed("train.distributed=ddp", "train.world_size=1", "train.batching=neighbor")
    two = composed("train.distributed=ddp", "train.world_size=2", "train.batching=neighbor",
                   "gpus=2", "train.dist_timeout_s=30")
    plain = composed("train.batching=neighbor")
    assert identity.setting_key(one, "cuda") != identity.setting_key(two, "cuda")
    assert identity.setting_key(one, "cuda") != identity.setting_key(plain, "cuda")
    assert identity.scaling_key(one, "cuda") == identity.scaling_key(two, "cuda") == \
        identity.scaling_key(plain, "cuda")
    assert [identity.world_size(c) for c in (one, two, plain)] == [1, 2, 1]
    assert identity.setting_key(two, "cuda") == identity.setting_key(
        composed("train.distributed=ddp", "train.world_size=2", "train.batching=neighbor"),
        "cuda")


def test_records_before_ddp_read_as_one_process_runs(tmp_path):
    """Schema 4 added the DDP keys with the defaults that keep what older records measured:
    an old eager record still matches a compiled run composed today."""
    old = composed()
    for key in ("distributed", "world_size", "dist_backend", "dist_timeout_s"):
        del old["train"][key]
    del old["gpus"]
    (tmp_path / "results.json").write_text(json.dumps(
        {**fake_run("old", False, [1.0, 1.1]), "schema_version": 3, "config": old}))
    record = store.read(tmp_path)
    assert record.config.train.distributed == "none"
    assert record.config.train.world_size == 1 and record.distributed is None
    assert identity.record_setting_key(record) == identity.setting_key(
        composed("compile=true"), "cpu")
