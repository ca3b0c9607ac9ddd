"""The Triton kernel behind graph.layout=csr-triton: out[row] = sum of w_e * x[col_e] over
one work item's entries of a CSR row (csr_triton.py builds the work items and the op).

A program takes one work item (a row, or a chunk of at most `chunk` entries of a long row)
and one BLOCK_F-wide slice of the features. It gathers BLOCK_E neighbour rows at a time as
a [BLOCK_E, BLOCK_F] tile, weighs them, and accumulates in float32 (float64 for float64
input) whatever the storage dtype, so bf16 storage reads half the bytes but sums like fp32.
A row held by one work item is stored; the chunks of a split row are added with atomics
into the zeroed float32 output, so their order of summation (and the last bits) may vary.

This module imports triton: import it only where triton is importable (csr_triton.py does).
Whether the kernel is compiled (CUDA) or interpreted (numpy, on CPU tensors) is triton's
process-wide choice, made when triton is first imported: TRITON_INTERPRET=1 interprets.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor
from triton.runtime.interpreter import InterpretedFunction

# A work item is 4 int64s: row, first entry, end entry, split (1: combined by atomics).


@triton.jit
def _spmm(work_ptr, col_ptr, val_ptr, x_ptr, out_ptr, num_features, stride_x, stride_out,
          HAS_VALUES: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_F: tl.constexpr,
          ACC: tl.constexpr):
    item = tl.program_id(0).to(tl.int64) * 4
    row = tl.load(work_ptr + item)
    start = tl.load(work_ptr + item + 1)
    end = tl.load(work_ptr + item + 2)
    split = tl.load(work_ptr + item + 3)
    f = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)
    f_mask = f < num_features
    acc = tl.zeros([BLOCK_E, BLOCK_F], dtype=ACC)
    first = start
    while first < end:  # not `range(start, end)`: triton 3.6's interpreter fails on it
        e = first + tl.arange(0, BLOCK_E)  # with numpy >= 2.4 (triton-lang/triton#9171)
        e_mask = e < end
        col = tl.load(col_ptr + e, mask=e_mask, other=0).to(tl.int64)
        tile = tl.load(x_ptr + col[:, None] * stride_x + f[None, :],
                       mask=e_mask[:, None] & f_mask[None, :], other=0.0).to(ACC)
        if HAS_VALUES:
            tile *= tl.load(val_ptr + e, mask=e_mask, other=0.0).to(ACC)[:, None]
        acc += tile
        first += BLOCK_E
    total = tl.sum(acc, axis=0)
    out = out_ptr + row * stride_out + f
    if split != 0:
        tl.atomic_add(out, total, mask=f_mask)
    else:
        tl.store(out, total, mask=f_mask)


INTERPRETED = isinstance(_spmm, InterpretedFunction)


# Feature-slice widths by element size, from the kernel sweep on an H200 (arxiv-size graph,
# 256 features; results/h200-floor/spmm-sweep.json): fp32 fastest at 256 wide (0.48 ms,
# against 1.41 ms at the 128 wide, 32-neighbour tiles first guessed), bf16 at 64 (1.16 ms
# against 2.10 ms): more slices of a row in flight pay where each load is narrow.
WIDTH = {8: 128, 4: 256, 2: 64}
NEIGHBOURS = 8  # neighbour rows gathered per tile: 8 beat 16 and 32 at every width


def blocks(num_features: int, dtype: torch.dtype) -> tuple[int, int]:
    """(BLOCK_E, BLOCK_F): the swept tile for the dtype, never wider than the features."""
    width = WIDTH.get(dtype.itemsize, 256)
    return NEIGHBOURS, max(16, min(width, triton.next_power_of_2(num_features)))


def launch(work: Tensor, col: Tensor, values: Tensor | None, x: Tensor, out: Tensor,
           block_e: int | None = None, block_f: int | None = None,
           num_warps: int = 4) -> None:
    """Adds A @ x into `out` (zeroed, float32 or float64, contiguous) for the work items."""
    if work.size(0) == 0 or x.size(1) == 0:
        return
    default_e, default_f = blocks(x.size(1), x.dtype)
    block_e, block_f = block_e or default_e, block_f or default_f
    grid = (work.size(0), triton.cdiv(x.size(1), block_f))
    acc = tl.float64 if out.dtype == torch.float64 else tl.float32
    _spmm[grid](
        work, col, values if values is not None else col, x, out, x.size(1), x.stride(0),
        out.stride(0), HAS_VALUES=values is not None, BLOCK_E=block_e, BLOCK_F=block_f,
        ACC=acc, num_warps=num_warps)
