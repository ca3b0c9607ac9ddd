"""What a run ran on: enough to tell two hosts, two GPUs and two software stacks apart."""

from __future__ import annotations

import os
import platform

import torch


def physical_gpu_index(logical: int, visible: str | None = None) -> int | None:
    """The index the host (nvidia-smi, CUDA_VISIBLE_DEVICES) gives the GPU that this process
    calls cuda:`logical`: CUDA_VISIBLE_DEVICES=2,3 makes cuda:0 the host's GPU 2. None where
    the mapping cannot be read (the variable lists UUIDs, or fewer devices)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    if visible is None or not visible.strip():
        return logical if visible is None else None
    entries = [e.strip() for e in visible.split(",")]
    if logical >= len(entries) or not entries[logical].isdigit():
        return None
    return int(entries[logical])


def gpu_uuid(device: torch.device) -> str | None:
    """The GPU's UUID: the same GPU under any CUDA_VISIBLE_DEVICES (SLURM's cgroups, a pool)."""
    try:
        return f"GPU-{torch.cuda.get_device_properties(device).uuid}"
    except (AttributeError, RuntimeError):
        return None


def cpu_model() -> str:
    """The CPU's model name ("Intel(R) Xeon(R) Platinum 8480+"), from /proc/cpuinfo on Linux;
    elsewhere, or where it names none (many ARM hosts), what `platform` knows (often only
    the architecture, x86_64)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device: torch.device | None) -> dict:
    import torch_geometric

    cpu = cpu_model()
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_geometric": torch_geometric.__version__,
        "platform": platform.platform(),
        "host": platform.node(),
        "cpu_count": os.cpu_count(),
        "device": str(device) if device is not None else None,
        "device_index": None,
        # The CPU for a CPU run (the GPU's name below for a CUDA run); `cpu_model` is the
        # host's CPU either way (a launch-bound GPU run depends on it too).
        "device_name": cpu,
        "cpu_model": cpu,
        "cuda": torch.version.cuda,
    }
    if device is not None and device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        # The host's index of the GPU (not cuda:N of this process, which CUDA_VISIBLE_DEVICES
        # renumbers from 0), its UUID, and what the process was allowed to see.
        env.update(device_index=physical_gpu_index(index),
                   device_uuid=gpu_uuid(torch.device("cuda", index)),
                   cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
                   device_name=torch.cuda.get_device_name(device))
        if os.environ.get("SLURM_JOB_ID"):
            env.update(slurm={k: os.environ.get(f"SLURM_{k.upper()}") for k in
                              ("job_id", "array_job_id", "array_task_id", "job_gpus",
                               "step_gpus", "nodelist")})
    return env
