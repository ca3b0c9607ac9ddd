"""DDP training on the CPU with gloo, in real processes: ranks spawned by gnnbench (in a
GPU-pool sweep) or started by torchrun train their shares of the seeds and learn; rank 0
records the run with every rank's timings and its scaling against one rank; a rank that
dies fails the run with a record, at once; the device lease keeps two timed jobs off one
device."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from support.processes import run as run_command
from support.processes import start, wait_for_line

pytestmark = pytest.mark.slow

# 700 training nodes, 350 a rank, in batches of 128: three batches a rank and epoch.
DDP = ("model=sage", "dataset.train_per_class=100", "train.batching=neighbor",
       "train.fanouts=[10,5]", "train.batch_size=128", "train.sampler=gnnbench",
       "train.distributed=ddp", "train.device=cpu", "wandb.mode=disabled")


@pytest.fixture(scope="module")
def scaled(tmp_path_factory, data_dir) -> Path:
    """The same eager setting on one rank and on two: a sweep through the GPU pool, one job
    at a time on this CPU-only host, each spawning its ranks (on the CPU slot it leased)."""
    root = tmp_path_factory.mktemp("ddp")
    proc = run_command(["-m", "hydra/launcher=gpu-pool", *DDP, "train.world_size=1,2",
                        "train.epochs=10", "train.warmup_epochs=2", f"data_dir={data_dir}",
                        f"hydra.sweep.dir={root / 'sweep'}"], root,
                       env={"GNNBENCH_LEASE_DIR": str(root / "leases")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "scaling efficiency" in proc.stdout  # the 2-rank run's line against 1 rank
    return root / "sweep"


def on_ranks(folder: Path, world_size: int) -> dict:
    [record] = [json.loads(p.read_text()) for p in folder.glob("*/results.json")
                if json.loads(p.read_text())["config"]["train"]["world_size"] == world_size]
    return record


def test_two_ranks_train_their_shares_and_learn(scaled):
    record = on_ranks(scaled, 2)
    d = record["distributed"]
    assert (d["world_size"], d["backend"], d["launcher"]) == (2, "gloo", "gnnbench")
    assert [r["rank"] for r in d["ranks"]] == [0, 1] and len({r["pid"] for r in d["ranks"]}) == 2
    assert record["batching"]["seeds_per_rank"] == 350 and record["batching"]["world_size"] == 2
    assert record["batching"]["batches_per_epoch"] == 3
    for row in record["epochs"]:  # the epoch is its slowest rank's
        assert row["train_s"] == max(row["rank_train_s"]) and len(row["rank_compute_s"]) == 2
    ranks = record["timing"]["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    assert all(r[k]["median"] > 0 for r in ranks for k in ("sample_s", "transfer_s",
                                                             "compute_s"))
    assert record["timing"]["throughput_nodes_per_s"] == pytest.approx(
        700 / record["timing"]["train_s"]["median"])
    first, last = record["epochs"][0], record["epochs"][-1]
    assert last["loss"] < first["loss"]
    assert 0.6 <= record["accuracy"]["test_at_best_val"] <= 1.0  # chance is 1/7


def test_two_ranks_scale_against_one_in_record_and_report(scaled):
    one, two = on_ranks(scaled, 1), on_ranks(scaled, 2)
    assert one["scaling"] is None and one["distributed"]["world_size"] == 1
    s = two["scaling"]
    assert s["reference"] == one["name"] and s["reference_world_size"] == 1
    assert s["efficiency"] == pytest.approx(s["speedup"] / 2)
    assert s["speedup"] == pytest.approx(one["timing"]["train_s"]["median"]
                                         / two["timing"]["train_s"]["median"])
    rows = list(csv.DictReader((scaled / "report.csv").open()))  # the sweep's own report
    assert [(r["variant"], r["world_size"]) for r in rows] == [("eager", "1"), ("eager", "2")]
    assert not rows[0]["scaling_efficiency"] and float(rows[1]["scaling_efficiency"]) > 0
    assert float(rows[1]["scaling_efficiency"]) == pytest.approx(s["efficiency"])
    report = (scaled / "report.md").read_text()
    assert "## Scaling (DDP)" in report and "| eager, DDP ×2 |" in report


@pytest.mark.gpu
def test_two_ranks_on_two_gpus_with_nccl(run):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    record = run(*DDP, "train.device=cuda", "train.world_size=2", "train.epochs=6",
                 "train.warmup_epochs=2")
    assert record.status == "ok", record.reason
    assert record.distributed.backend == "nccl"
    ranks = record.distributed.ranks
    assert sorted(r["device"] for r in ranks) == ["cuda:0", "cuda:1"]
    assert len({r["device_uuid"] for r in ranks}) == 2
    assert record.accuracy.test_at_best_val >= 0.6


def test_compiled_ddp_needs_fullgraph_false(run):
    record = run(*DDP, "compile=true", "train.world_size=2")
    assert record.status == "error" and "compiler.fullgraph=false" in record.reason


def test_compiled_ddp_under_torchrun_records_once_with_its_graphs(tmp_path, data_dir):
    """torchrun starts both ranks, each running the command: rank 0 alone records the run
    (one run folder); dynamo's DDP optimizer's graphs and DDP's own graph breaks are in the
    record, the breaks named as expected."""
    proc = run_command(["--standalone", "--nproc-per-node=2", "-m", "gnnbench", *DDP,
                "train.world_size=2", "train.epochs=4", "train.warmup_epochs=1",
                "compile=true", "compiler.fullgraph=false", "compiler.backend=eager",
                f"data_dir={data_dir}"], tmp_path, module="torch.distributed.run",
               timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [path] = list((tmp_path / "outputs").rglob("results.json"))
    assert len(list((tmp_path / "outputs" / "runs").iterdir())) == 1
    record = json.loads(path.read_text())
    assert record["status"] == "ok", record["reason"]
    assert record["distributed"]["launcher"] == "torchrun"
    assert len(record["distributed"]["ranks"]) == 2
    dyn = record["compile"]
    assert dyn["ddp_split"]["subgraphs_per_graph"] and dyn["graphs"] >= 1
    assert dyn["graph_breaks"] == dyn["expected_graph_breaks"] > 0
    assert "DistributedDataParallel" in dyn["expected_why"]
    assert "DDP: 2 rank(s), gloo, started by torchrun" in proc.stdout


def test_a_killed_rank_fails_the_run_with_a_record_at_once(tmp_path, data_dir):
    proc = start([*DDP, "train.world_size=2", "train.epochs=500", "train.warmup_epochs=1",
                  f"data_dir={data_dir}"], tmp_path)
    wait_for_line(proc.stderr, "epoch 1/500")
    ranks = [p for p in psutil.Process(proc.pid).children()
             if "spawn_main" in " ".join(p.cmdline())]
    assert len(ranks) == 2
    victim = max(ranks, key=lambda p: p.create_time())
    victim.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    _, err = proc.communicate(timeout=120)
    assert time.monotonic() - killed < 60  # not the collective timeout (300 s)
    assert proc.returncode == 1, err
    [path] = list((tmp_path / "outputs").rglob("results.json"))
    record = json.loads(path.read_text())
    [rank] = [r["rank"] for r in record["distributed"]["ranks"] if r["pid"] == victim.pid]
    assert record["status"] == "error"
    assert record["reason"].startswith(f"rank {rank} of 2 was killed by SIGKILL")
    assert record["reason"] in err
    assert not (path.parent / ".gnnbench-ddp").exists()


# The fault gloo injects at random: a rank's process that aborts in the interpreter's
# teardown, after its run is complete. Here every rank but 0 does, every time (ranks that
# gnnbench spawned are multiprocessing children; torchrun's say RANK).
ABORT_IN_TEARDOWN = textwrap.dedent("""
    import atexit, multiprocessing, os

    def abort_like_gloo():
        if multiprocessing.parent_process() is not None or os.environ.get("RANK", "0") != "0":
            os.abort()

    atexit.register(abort_like_gloo)
""")


@pytest.mark.parametrize("launcher", ["gnnbench", "torchrun"])
def test_a_rank_that_aborts_in_teardown_loses_nothing(tmp_path, data_dir, launcher):
    """A rank whose run is recorded ends without the interpreter's teardown, so an abort
    there (SIGABRT, "terminate called without an active exception") fails nothing."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(ABORT_IN_TEARDOWN)
    args = [*DDP, "train.world_size=2", "train.epochs=3", "train.warmup_epochs=1",
            f"data_dir={data_dir}"]
    if launcher == "torchrun":
        args = ["--standalone", "--nproc-per-node=2", "-m", "gnnbench", *args]
    proc = run_command(args, tmp_path, env={"PYTHONPATH": str(site)}, timeout=300,
                       module="torch.distributed.run" if launcher == "torchrun" else "gnnbench")
    assert proc.returncode == 0, proc.stderr[-3000:]
    [path] = list((tmp_path / "outputs").rglob("results.json"))
    record = json.loads(path.read_text())
    assert record["status"] == "ok", record["reason"]
    assert len(record["epochs"]) == 3 and record["distributed"]["world_size"] == 2


LEASE = textwrap.dedent("""
    import sys, time, torch
    from gnnbench.runner import devices
    deadline = time.monotonic() + float(sys.argv[1])
    held = devices.lease(torch.device("cpu"), 1, "second job",
                         should_stop=lambda: time.monotonic() > deadline, poll_s=0.1)
    print("got" if held else "gave up", flush=True)
""")


def test_a_leased_device_is_not_given_to_a_second_job(tmp_path, monkeypatch):
    """A job waits while another process holds the device (and says who holds it), and gets
    it as soon as that process lets go: the kernel drops the lock of a process that ends."""
    from gnnbench.runner import devices

    monkeypatch.setenv(devices.LEASE_DIR_ENV, str(tmp_path))
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, torch
        from gnnbench.runner import devices
        held = devices.lease(torch.device("cpu"), 1, "first job")
        print("held", flush=True)
        sys.stdin.readline()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    second = subprocess.run([sys.executable, "-c", LEASE, "1.5"], capture_output=True,
                            text=True, timeout=120)
    assert second.stdout.strip().endswith("gave up")
    assert "second job waits for 1 free CPU slot(s) (cpu: first job (pid" in second.stdout
    holder.communicate("\n", timeout=60)  # the first job ends
    second = subprocess.run([sys.executable, "-c", LEASE, "30"], capture_output=True,
                            text=True, timeout=120)
    assert second.stdout.strip() == "got"
