"""Sweeps run by real Hydra launchers in other processes: the GPU pool (hydra-joblib-
launcher) and submitit's local executor (hydra-submitit-launcher, the SLURM preset's code
path) give the same rows and comparisons as Hydra's basic launcher on the same overrides;
a signal to the command stops the pool's jobs with records and the same command resumes
it; one report combines folders of several hosts; the SLURM preset makes the job array a
cluster would get."""

from __future__ import annotations

import csv
import json
import shutil
import signal
from pathlib import Path

import pytest
from support.processes import run, start, wait_for_line

from gnnbench.report.cli import main as report_main

pytestmark = pytest.mark.slow

# Eager, a repeat of it (the exclusive claim skips one of the two), and two compiled
# variants (dynamo without Inductor: seconds, not a minute, on a CPU).
SWEEP = ["compile=false,true", "compiler.fullgraph=true,false", "compiler.backend=eager",
         "train.epochs=24", "train.warmup_epochs=2", "train.device=cpu", "wandb.mode=disabled"]
# What a report row says about which runs and comparisons it holds (not their timings).
SHAPE = ("model", "dataset", "variant", "distributed", "world_size", "runs", "status",
         "steady_epochs", "graph_breaks", "recompiles", "test_acc_mean")


def records(folder: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in folder.glob("*/results.json")}


def rows(folder: Path) -> list[dict]:
    return list(csv.DictReader((folder / "report.csv").open()))


def shape(folder: Path) -> list[tuple]:
    """Each row's identity and run counts, and whether a compiled row has its speedup."""
    return [(*(r[k] for k in SHAPE), bool(r["speedup"]) == (r["variant"] != "eager"))
            for r in rows(folder)]


def sweep(tmp: Path, name: str, *extra: str, env: dict | None = None):
    return run(["-m", *SWEEP, *extra, f"hydra.sweep.dir={tmp / name}"], tmp, env=env)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory, data_dir) -> dict:
    """The same sweep under the basic launcher and under submitit's local executor."""
    tmp = tmp_path_factory.mktemp("launchers")
    env = {"GNNBENCH_LEASE_DIR": str(tmp / "leases")}
    made = {}
    for name, launcher in (("basic", []), ("local", ["hydra/launcher=slurm-local"])):
        proc = sweep(tmp, name, f"data_dir={data_dir}", *launcher, env=env)
        assert proc.returncode == 0, proc.stderr
        made[name] = tmp / name
    return {"tmp": tmp, "env": env, **made}


def test_basic_sweep_claims_one_eager_job_and_compares(sweeps):
    done = records(sweeps["basic"])
    assert sorted(r["status"] for r in done.values()) == ["ok", "ok", "ok", "skipped"]
    assert [r["variant"] for r in rows(sweeps["basic"])] == [
        "eager", "compile-default backend=eager",
        "compile-default fullgraph=False backend=eager"]
    assert all(r["speedup"] for r in rows(sweeps["basic"])[1:])


def test_submitit_local_sweep_matches_the_basic_launcher(sweeps):
    """Every job in its own process started by submitit, one timed job at a time on this
    CPU-only host (the CPU lease): the same records and report rows as the basic launcher."""
    local, basic = records(sweeps["local"]), records(sweeps["basic"])
    assert sorted(local) == sorted(basic)  # the same job folders
    assert sorted(r["status"] for r in local.values()) == ["ok", "ok", "ok", "skipped"]
    assert shape(sweeps["local"]) == shape(sweeps["basic"])
    # One process per job, each started by submitit (its logs, one folder per job id).
    assert len(list((sweeps["local"] / ".submitit").glob("*/*_0_log.out"))) == 4
    # All started at once, yet never two timed at the same time: the host's one CPU slot.
    spans = sorted((r["started_at"], r["ended_at"]) for r in local.values()
                   if r["status"] == "ok")
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:], strict=False))


def test_gpu_pool_stops_on_sigterm_resumes_and_matches_the_basic_launcher(sweeps, data_dir):
    """Two jobs at once (gpus=2 on a CPU host); SIGTERM to the command reaches the jobs in
    the pool's workers through the sweep's stop file: they record `interrupted`, jobs not
    begun are not started, the report says what is missing, exit 143 and a resume command.
    The same command resumes it: kept jobs stay, the rest run, and the rows are the basic
    launcher's."""
    tmp, env = sweeps["tmp"], sweeps["env"]
    args = ["-m", *SWEEP, "hydra/launcher=gpu-pool", "gpus=2", f"data_dir={data_dir}",
            f"hydra.sweep.dir={tmp / 'pool'}"]
    proc = start(args, tmp, env=env)
    wait_for_line(proc.stderr, "epoch 1/24")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err
    assert "sweep stopped: SIGTERM" in err and "to resume, run:" in err
    stopped = records(tmp / "pool")
    assert "interrupted" in {r["status"] for r in stopped.values()}
    assert len([r for r in stopped.values() if r["status"] == "ok"]) < 3
    assert "Sweep incomplete" in (tmp / "pool" / "report.md").read_text()

    again = run(args, tmp, env=env)
    assert again.returncode == 0, again.stderr
    final = records(tmp / "pool")
    assert sorted(final) == sorted(records(sweeps["basic"]))
    assert sorted(r["status"] for r in final.values()) == ["ok", "ok", "ok", "skipped"]
    kept = [name for name, r in stopped.items() if r["status"] in ("ok", "skipped")]
    assert all(f"kept {name}" in again.stdout for name in kept)
    assert shape(tmp / "pool") == shape(sweeps["basic"])
    report = (tmp / "pool" / "report.md").read_text()
    assert "Sweep incomplete" not in report and "- **Wall clock**: " in report
    assert not (tmp / "pool" / ".gnnbench-stop").exists()


def test_one_report_over_folders_of_two_hosts(sweeps, tmp_path):
    """Eager runs from one folder, compiled runs from another (as copied back from two
    hosts): the compiled rows find their eager reference across the folders, and the report
    shows where each run ran."""
    host_a, host_b = tmp_path / "host-a", tmp_path / "host-b"
    for job, record in records(sweeps["basic"]).items():
        if record["status"] == "ok" and not record["config"]["compile"]:
            shutil.copytree(sweeps["basic"] / job, host_a / job)
    for job, record in records(sweeps["local"]).items():
        if record["config"]["compile"]:
            shutil.copytree(sweeps["local"] / job, host_b / job)
    out = tmp_path / "combined"
    assert report_main([str(host_a), str(host_b), "--out", str(out), "--no-wandb"]) == 0
    combined = rows(out)
    assert [r["variant"] for r in combined] == [
        "eager", "compile-default backend=eager",
        "compile-default fullgraph=False backend=eager"]
    for row in combined[1:]:
        assert row["runs"] == "1/1 ok" and float(row["speedup"]) > 0
        assert float(row["speedup_ci_low"]) <= float(row["speedup"])
    report = (out / "report.md").read_text()
    host = records(sweeps["basic"])["0_gcn-synthetic-eager-s0"]["env"]["host"]
    for job in (*[p.name for p in host_a.iterdir()], *[p.name for p in host_b.iterdir()]):
        assert f"| {host} | " in report and job in report


def test_slurm_preset_makes_a_job_array_with_one_gpu_per_task(monkeypatch, tmp_path):
    """The `slurm` preset's keys are submitit's: composed as the launcher composes them, the
    sbatch script of a 120-job sweep is an array of at most array_parallelism jobs at once,
    one task and one GPU each, on the partition and account given on the command line."""
    import submitit
    from hydra import compose, initialize_config_dir
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    from omegaconf import OmegaConf, open_dict
    from submitit.slurm.slurm import SlurmExecutor

    from gnnbench import config

    config.register_resolvers()
    with initialize_config_dir(config_dir=str(config.CONF_DIR), version_base=None):
        cfg = compose(config_name="config", return_hydra_config=True, overrides=[
            "hydra/launcher=slurm", "hydra.launcher.partition=gpu-h200",
            "hydra.launcher.account=my-project", f"hydra.sweep.dir={tmp_path}"])
    with open_dict(cfg):
        cfg.hydra.job.name = "gnnbench"
    params = OmegaConf.to_container(cfg.hydra.launcher, resolve=True)
    assert params.pop("_target_").endswith("submitit_launcher.SlurmLauncher")
    # What hydra-submitit-launcher's launch() does with them, then submitit's own checks.
    folder = params.pop("submitit_folder")
    generic = set(OmegaConf.structured(BaseQueueConf).keys())
    monkeypatch.setattr(SlurmExecutor, "affinity", classmethod(lambda cls: 1))  # no srun here
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm",
                                     slurm_max_num_timeout=params.pop("max_num_timeout"))
    executor.update_parameters(**{k if k in generic else f"slurm_{k}": v
                                  for k, v in params.items()})
    executor._executor.parameters["map_count"] = 120
    script = executor._executor._make_submission_file_text("python -m submitit", "uid")
    for line in ("#SBATCH --array=0-119%16", "#SBATCH --gpus-per-task=1",
                 "#SBATCH --ntasks-per-node=1", "#SBATCH --partition=gpu-h200",
                 "#SBATCH --account=my-project", "#SBATCH --time=240",
                 "#SBATCH --cpus-per-task=8"):
        assert line in script, script


@pytest.mark.gpu
def test_gpu_pool_runs_each_job_alone_on_a_gpu(tmp_path, data_dir):
    """On a host with several GPUs: as many jobs at once as GPUs, and two jobs that ran at
    the same time never on the same GPU (records name it by host index and UUID)."""
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    proc = run(["-m", "hydra/launcher=gpu-pool", "train.seed=0,1,2,3", "train.epochs=300",
                "train.warmup_epochs=5", "wandb.mode=disabled", f"data_dir={data_dir}",
                f"hydra.sweep.dir={tmp_path / 'pool'}"], tmp_path,
               env={"GNNBENCH_LEASE_DIR": str(tmp_path / "leases")})
    assert proc.returncode == 0, proc.stderr
    done = list(records(tmp_path / "pool").values())
    assert len(done) == 4 and all(r["status"] == "ok" for r in done)
    assert all(r["env"]["device_uuid"] and r["env"]["device_index"] is not None for r in done)
    assert len({r["env"]["device_uuid"] for r in done}) >= 2
    for a in done:
        for b in done:
            if a is not b and a["started_at"] < b["ended_at"] and b["started_at"] < a["ended_at"]:
                assert a["env"]["device_uuid"] != b["env"]["device_uuid"]
