"""What a run ran on: enough to tell two hosts, two GPUs and two software stacks apart."""

from __future__ import annotations

import os
import platform

import torch


def environment(device: torch.device | None) -> dict:
    import torch_geometric

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_geometric": torch_geometric.__version__,
        "platform": platform.platform(),
        "host": platform.node(),
        "cpu_count": os.cpu_count(),
        "device": str(device) if device is not None else None,
        "device_index": None,
        "device_name": platform.processor() or platform.machine(),
        "cuda": torch.version.cuda,
    }
    if device is not None and device.type == "cuda":
        env["device_index"] = device.index
        env["device_name"] = torch.cuda.get_device_name(device)
    return env
