"""`train.device`: what a multi-GPU user types (cuda:N) is accepted, and a device that is not
there is an error naming what exists, never a silent fallback."""

from __future__ import annotations

import pytest
import torch

from gnnbench.config import ConfigError, resolve_device


def test_cpu_and_auto():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "cuda:-1", "tpu", 3, "CUDA"])
def test_malformed_devices_list_the_forms(bad):
    with pytest.raises(ConfigError, match=r"auto, cpu, cuda, cuda:N") as exc:
        resolve_device(bad)
    assert repr(bad) in str(exc.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_without_cuda_is_an_error(name):
    with pytest.raises(ConfigError, match="CUDA is not available.*choose one of: auto, cpu"):
        resolve_device(name)


@pytest.mark.gpu
def test_each_gpu_by_index_and_one_too_many():
    count = torch.cuda.device_count()
    for i in range(count):
        assert resolve_device(f"cuda:{i}") == torch.device("cuda", i)
    with pytest.raises(ConfigError, match=f"has {count} CUDA device") as exc:
        resolve_device(f"cuda:{count}")
    assert f"cuda:{count - 1}" in str(exc.value)


@pytest.mark.gpu
def test_a_run_on_a_named_gpu_records_its_index(run):
    index = torch.cuda.device_count() - 1
    result = run("train.epochs=3", "train.warmup_epochs=1", f"train.device=cuda:{index}")
    assert result.status == "ok", result.reason
    assert result.env.device == f"cuda:{index}" and result.env.device_index == index


@pytest.mark.parametrize(("visible", "logical", "host_index"), [
    (None, 0, 0), (None, 3, 3),          # every GPU visible: cuda:N is the host's GPU N
    ("2,3", 0, 2), ("2,3", 1, 3),        # a pool or SLURM gave this process GPUs 2 and 3
    ("GPU-8d5f0c1e", 0, None),           # listed by UUID: env.device_uuid names it
    ("2,3", 2, None),
])
def test_records_name_the_hosts_gpu_index_under_cuda_visible_devices(
        monkeypatch, visible, logical, host_index):
    from gnnbench.measure.environment import physical_gpu_index

    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert physical_gpu_index(logical) == host_index
