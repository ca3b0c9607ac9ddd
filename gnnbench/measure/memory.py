"""Peak memory of a run: what the allocator held on CUDA, the process's peak RSS on CPU."""

from __future__ import annotations

import resource
import sys

import torch


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak(device: torch.device) -> dict:
    """On CPU the OS keeps one high-water mark per process and it cannot be reset, so in a
    sweep run in one process it covers the runs before this one too (`kind` says so)."""
    if device.type == "cuda":
        return {"kind": "cuda_max_allocated",
                "peak_bytes": int(torch.cuda.max_memory_allocated(device))}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024  # Linux reports KiB
    return {"kind": "cpu_process_peak_rss", "peak_bytes": int(rss * scale)}
