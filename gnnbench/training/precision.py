"""Numerical precision of a run: fp32; TF32 matmuls (fp32 storage, 10-bit mantissa products
on tensor cores: an opt-in that changes results slightly); bf16 autocast of the forward
passes with fp32 master weights, fp32 loss and fp32 optimizer state."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

import torch


@contextlib.contextmanager
def matmul_precision(precision: str) -> Iterator[None]:
    """TF32 for tf32 runs, full fp32 otherwise, for the run only (Inductor reads the same
    switches when it generates matmuls)."""
    saved = torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved[0])
        torch.backends.cudnn.allow_tf32 = saved[1]


def autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    if precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def forward_in(precision: str, device: torch.device, fn: Callable) -> Callable:
    """`fn` (a forward, or forward + loss) run under the run's autocast; backward and the
    optimizer step stay outside it, as PyTorch's AMP recipe has them."""
    if precision != "bf16":
        return fn

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with autocast(precision, device):
            return fn(*args, **kwargs)

    return wrapped
