"""The command line as a user meets it: another working directory, a read-only mirror,
results.json on disk, and one clear line for every bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO

QUICK = ["train.epochs=3", "train.warmup_epochs=1", "train.device=cpu"]


def gnnbench(args: list[str], cwd: Path, *, script: bool = False, env: dict | None = None,
             timeout: int = 300) -> subprocess.CompletedProcess:
    if script:
        command = [str(Path(sys.executable).with_name("gnnbench")), *args]
    else:
        command = [sys.executable, "-m", "gnnbench", *args]
    full_env = {k: v for k, v in os.environ.items() if k != "GNNBENCH_DATA_MIRROR"}
    full_env.update(env or {})
    return subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def only_results(cwd: Path) -> dict:
    found = list((cwd / "outputs").rglob("results.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


def test_console_script_with_read_only_mirror(tmp_path, read_only_mirror):
    data_dir = tmp_path / "cache"
    proc = gnnbench(["dataset=citeseer", f"data_mirror={read_only_mirror}",
                     f"data_dir={data_dir}", *QUICK], tmp_path, script=True)
    assert proc.returncode == 0, proc.stderr
    assert (data_dir / "CiteSeer" / "raw" / "ind.citeseer.graph").is_file()
    result = only_results(tmp_path)
    assert result["dataset"]["num_nodes"] == 3327 and result["dataset"]["num_classes"] == 6
    assert result["dataset"]["split_sizes"] == {"train": 120, "val": 500, "test": 1000}


def test_mirror_from_environment(tmp_path, read_only_mirror):
    proc = gnnbench(["dataset=cora", f"data_dir={tmp_path / 'cache'}", *QUICK], tmp_path,
                    env={"GNNBENCH_DATA_MIRROR": str(read_only_mirror)})
    assert proc.returncode == 0, proc.stderr
    assert only_results(tmp_path)["config"]["data_mirror"] == str(read_only_mirror)


def test_default_job_runs_offline_from_another_directory_with_typed_results(tmp_path):
    """One run of the default job (a process start costs seconds on two cores): it runs
    offline from another directory, and its results.json has every field, typed."""
    proc = gnnbench(QUICK, tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = only_results(tmp_path)
    assert r["config"]["dataset"]["name"] == "synthetic"
    assert "status ok" in proc.stdout and "train step: median" in proc.stdout
    assert r["status"] == "ok" and r["reason"] is None
    assert isinstance(r["config"]["train"]["epochs"], int)
    for key in ("python", "torch", "torch_geometric", "device", "device_name", "cpu_count"):
        assert r["env"][key] is not None, key
    assert r["env"]["torch"] == torch.__version__
    t = r["timing"]
    for stats in (t["train_s"], t["eval_s"]):
        assert stats["n"] == 2
        assert 0 < stats["q1"] <= stats["median"] <= stats["q3"]
        assert stats["iqr"] == pytest.approx(stats["q3"] - stats["q1"])
    assert t["first_epoch_s"] > 0 and t["wall_s"] > t["first_epoch_s"]
    assert t["compile_overhead_s"] is None and r["compile"] is None
    assert r["memory"]["peak_bytes"] > 0 and r["memory"]["kind"] == "cpu_process_peak_rss"
    a = r["accuracy"]
    assert 0 <= a["best_val"] <= 1 and 0 <= a["test_at_best_val"] <= 1
    assert a["best_epoch"] in range(3)
    assert [e["epoch"] for e in r["epochs"]] == [0, 1, 2]
    assert all(isinstance(e["loss"], float) and e["train_s"] > 0 for e in r["epochs"])


def incomplete_mirror(tmp_path: Path, mirror: Path) -> Path:
    copy = tmp_path / "partial"
    shutil.copytree(mirror / "Cora", copy / "Cora")
    (copy / "Cora" / "raw" / "ind.cora.graph").unlink()
    return copy


BAD_INPUTS = [
    (["model=gatv2"], ["gatv2", "custom, gat, gcn, gin, pyg-edgecnn"]),
    (["model=GCN"], ["'GCN'", "did you mean gcn?"]),
    (["dataset=Cora"], ["'Cora'", "did you mean cora?"]),
    (["-m", "dataset=cora,imagenet"], ["imagenet", "citeseer"]),
    (["+train.epoch=5"], ["train.epoch", "added with +", "did you mean train.epochs?"]),
    (["train.epoch=5"], ["train.epoch", "did you mean train.epochs?"]),
    (["compile=true", "compiler.mode=fastest"], ["fastest", "reduce-overhead"]),
    # Checked whether or not compile=true, and without dynamo's internal test backends.
    (["compiler.backend=nope"], ["nope", "inductor"]),
    (["compile=maybe"], ["maybe", "false, true"]),
    (["train.epochs=0"], ["train.epochs=0", "integer >= 1"]),
    (["train.lr=abc"], ["train.lr='abc' is not a number"]),
    (["model.dropout=1.0"], ["model.dropout=1.0", ">= 0 and < 1"]),
    (["model=gcn", "model.normalize=never"], ["never", "precompute, layer"]),
    (["train.device=tpu"], ["tpu", "auto, cpu, cuda, cuda:N"]),
    (["dataset=cora", "data_mirror=/nonexistent/mirror"], ["/nonexistent/mirror"]),
    # Before the run, not as a W&B warning after it.
    (["wandb.mode=ofline"], ["ofline", "auto, online, offline, disabled"]),
    (["wandb.init_timeout_s=0"], ["wandb.init_timeout_s=0", "> 0"]),
]
if not torch.cuda.is_available():
    BAD_INPUTS.append((["train.device=cuda:1"], ["cuda:1", "auto, cpu"]))


@pytest.mark.parametrize("args,expected", BAD_INPUTS, ids=lambda v: " ".join(v)[:40])
def test_bad_input_is_one_clear_line_and_a_record(tmp_path, args, expected):
    """Every bad input alike, whether Hydra or the run's checks find it: exit 1, one
    `gnnbench: error:` line naming the value (and the choices), nothing on stdout, and a
    results.json with status error where the run would have gone, with no W&B run."""
    proc = gnnbench([*args, f"data_dir={tmp_path / 'cache'}"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gnnbench: error:")]
    assert len(errors) == 1, proc.stderr
    assert not list((tmp_path / "outputs").rglob("wandb"))
    for text in expected:
        assert text in errors[0]
    assert "TESTING_ONLY" not in errors[0]
    [record] = [json.loads(p.read_text()) for p in (tmp_path / "outputs").rglob("results.json")]
    assert record["status"] == "error" and record["reason"] == errors[0].split("error: ", 1)[1]


def test_incomplete_mirror_names_the_missing_file(tmp_path, mirror):
    partial = incomplete_mirror(tmp_path, mirror)
    proc = gnnbench(["dataset=cora", f"data_mirror={partial}",
                     f"data_dir={tmp_path / 'cache'}", *QUICK], tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "ind.cora.graph" in proc.stderr.splitlines()[-1]
    assert only_results(tmp_path)["status"] == "error"


@pytest.mark.slow
def test_regular_install_finds_its_configs(tmp_path):
    """A non-editable install ships conf/ inside the package."""
    site, source = tmp_path / "site", tmp_path / "source"
    source.mkdir()
    for part in ("pyproject.toml", "README.md", "gnnbench", "conf"):  # build outside the repo
        copy = shutil.copytree if (REPO / part).is_dir() else shutil.copy
        copy(REPO / part, source / part)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(site), str(source)],
                   check=True, capture_output=True, timeout=300)
    env = {"PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import gnnbench.config as c; print(c.CONF_DIR)"],
                           cwd=tmp_path, env={**os.environ, **env}, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert where.startswith(str(site)), where
    for group, name in (("model", "sage"), ("dataset", "ogbn-products"),
                        ("experiment", "products-sage")):
        assert (Path(where) / group / f"{name}.yaml").is_file()
    assert (site / "gnnbench" / "benchmarks" / "sampler.py").is_file()
    assert len(list(site.glob("gnnbench/data/builtin/*/raw/ind.*"))) == 16
    # Test-only helpers do not ship.
    assert not list(site.rglob("wandb_file.py")) and not list(site.rglob("ogb_layout.py"))
    proc = gnnbench(["model=sage", *QUICK], tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert only_results(tmp_path)["config"]["model"]["name"] == "sage"
