"""What a run ran on: enough to tell two hosts, two GPUs and two software stacks apart."""

from __future__ import annotations

import ast
import importlib.util
import os
import platform
import sys
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    import torch

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


def _torch_version_file() -> dict:
    """The assignments of torch/version.py (`__version__`, `cuda`), read without importing
    torch: a command refused before anything loads is answered in a second, not in the
    seconds torch's import takes."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = os.path.join(next(iter(spec.submodule_search_locations)), "version.py")
    try:
        with open(path) as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError):
        return {}
    found = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and node.value is not None:
            try:
                found[target.id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return found


def software() -> dict:
    """torch's and PyG's versions and the CUDA torch was built for: from the modules where
    they are imported (a run), else from their files (a refused command)."""
    if "torch" in sys.modules:
        import torch
        import torch_geometric

        return {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
                "cuda": torch.version.cuda}
    version = _torch_version_file()
    try:
        pyg = metadata.version("torch_geometric")
    except metadata.PackageNotFoundError:
        pyg = None
    return {"torch": version.get("__version__"), "torch_geometric": pyg,
            "cuda": version.get("cuda")}


def environment(device: torch.device | None) -> dict:
    cpu = cpu_model()
    versions = software()
    env = {
        "python": platform.python_version(),
        "torch": versions["torch"],
        "torch_geometric": versions["torch_geometric"],
        "platform": platform.platform(),
        "host": platform.node(),
        "cpu_count": os.cpu_count(),
        "device": str(device) if device is not None else None,
        "device_index": None,
        # The CPU for a CPU run (the GPU's name below for a CUDA run); `cpu_model` is the
        # host's CPU either way (a launch-bound GPU run depends on it too).
        "device_name": cpu,
        "cpu_model": cpu,
        "cuda": versions["cuda"],
    }
    if device is not None and device.type == "cuda":
        import torch

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
