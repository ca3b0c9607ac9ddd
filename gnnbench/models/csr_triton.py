"""graph.layout=csr-triton: csr-op's CSR aggregation with a Triton kernel of gnnbench's own.

csr-op's cuSPARSE product is fast in fp32 but had no bf16 kernel on the H200 ("type
combination not supported"), and how it shares a power-law graph's hubs among threads is
not ours to change. Here it is: each row becomes work items of at most `chunk` entries (a
hub's chunks run as separate programs and are added with atomics), ordered longest first
so that no long item starts last and trails behind the rest.

`gnnbench::triton_spmm` is a custom op like csr-op's `gnnbench::csr_spmm`: dynamo sees its
fake and keeps it in one graph with dynamic shapes; its backward is the same kernel on Aᵀ,
whose structure and work items `TritonAdjacency` builds once per graph. Edge values carry
GCN's normalisation or mean's 1/in-degree, folded in once; without weights (a plain sum)
none are read. Storage may be fp32, bf16, fp16 or fp64; sums are fp32 (fp64 for fp64).
`train.precision=tf32` changes the dense matmuls only: a gather-sum has no matrix-unit
work, so for this op tf32 is fp32.

Where the kernel cannot run (no CUDA, or triton not importable) the op computes the same
sum with torch.sparse, as csr-op does (MKL on the CPU, half types summed in fp32), so one
command runs everywhere at csr-op's speed; with TRITON_INTERPRET=1 set before triton is
imported, the real kernel runs on CPU tensors through triton's interpreter (slow: for
tests). `backend` says which one runs. `reference_mm` (gather, weigh, index_add) is the
independent answer that tests and the benchmark hold the kernel to.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from gnnbench.models.csr import CSRAdjacency, csr_mm, entry_grad, entry_rows

CHUNK = 128  # entries per work item: a row with more is split and combined by atomics


@functools.cache
def triton_available() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def backend(device: torch.device) -> str:
    """"triton" (compiled, CUDA), "triton-interpreter" (TRITON_INTERPRET=1) or
    "torch-sparse" (the fallback)."""
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    if not (device.type == "cuda" or interpret) or not triton_available():
        return "torch-sparse"
    from gnnbench.models import spmm_kernel

    if spmm_kernel.INTERPRETED:
        return "triton-interpreter"
    if device.type != "cuda":
        raise RuntimeError("TRITON_INTERPRET=1 was set after triton was imported; set it "
                           "before the process starts to run the kernel on the CPU")
    return "triton"


def _accumulator(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def reference_mm(rowptr: Tensor, col: Tensor, values: Tensor | None, x: Tensor) -> Tensor:
    """A @ x in plain torch, summed in fp32 (fp64 for fp64) like the kernel: the answer
    tests and the benchmark check against. Holds one message per entry (E x F memory)."""
    acc = _accumulator(x.dtype)
    messages = x.index_select(0, col).to(acc)
    if values is not None:
        messages = messages * values.to(acc).unsqueeze(-1)
    out = torch.zeros(rowptr.numel() - 1, x.size(1), dtype=acc, device=x.device)
    return out.index_add_(0, entry_rows(rowptr, col.numel()), messages).to(x.dtype)


@torch.library.custom_op("gnnbench::triton_mm", mutates_args=())
def triton_mm(rowptr: Tensor, col: Tensor, values: Tensor | None, x: Tensor,
              work: Tensor) -> Tensor:
    """A @ x for A given by (rowptr, col, values or all ones) and its work items. No
    autograd of its own: triton_spmm's backward calls it for Aᵀ @ grad."""
    if backend(x.device) == "torch-sparse":
        ones = values if values is not None else col.new_ones(col.shape, dtype=torch.float32)
        return csr_mm(rowptr, col, ones, x)
    from gnnbench.models import spmm_kernel

    out = torch.zeros(rowptr.numel() - 1, x.size(1), dtype=_accumulator(x.dtype),
                      device=x.device)
    spmm_kernel.launch(work, col, values, x.contiguous(), out)
    return out.to(x.dtype)


@triton_mm.register_fake
def _(rowptr: Tensor, col: Tensor, values: Tensor | None, x: Tensor, work: Tensor) -> Tensor:
    torch._check(x.dim() == 2, lambda: f"triton_mm takes 2-D features, got {x.dim()}-D")
    return x.new_empty(rowptr.shape[0] - 1, x.shape[1])


@torch.library.custom_op("gnnbench::triton_spmm", mutates_args=())
def triton_spmm(rowptr: Tensor, col: Tensor, values: Tensor | None, x: Tensor, work: Tensor,
                t_rowptr: Tensor, t_col: Tensor, t_perm: Tensor, t_work: Tensor) -> Tensor:
    """A @ x, differentiable in x and values; (t_rowptr, t_col, t_work) is Aᵀ's structure
    and schedule, t_perm maps Aᵀ's entries to A's."""
    return triton_mm(rowptr, col, values, x, work)


@triton_spmm.register_fake
def _(rowptr: Tensor, col: Tensor, values: Tensor | None, x: Tensor, work: Tensor,
      t_rowptr: Tensor, t_col: Tensor, t_perm: Tensor, t_work: Tensor) -> Tensor:
    return x.new_empty(rowptr.shape[0] - 1, x.shape[1])


def _setup_context(ctx, inputs: tuple, output: Tensor) -> None:  # noqa: ARG001 - library API
    rowptr, col, values, x, _, t_rowptr, t_col, t_perm, t_work = inputs
    keep_x = values is not None and values.requires_grad  # only the values' gradient reads x
    ctx.save_for_backward(rowptr, col, values, x if keep_x else None, t_rowptr, t_col, t_perm,
                          t_work)


def _backward(ctx, grad: Tensor) -> tuple:
    rowptr, col, values, x, t_rowptr, t_col, t_perm, t_work = ctx.saved_tensors
    grad_values = grad_x = None
    if ctx.needs_input_grad[3]:  # Aᵀ's values: one gather of E numbers, 1/F of the product
        t_values = values.index_select(0, t_perm) if values is not None else None
        grad_x = triton_mm(t_rowptr, t_col, t_values, grad, t_work)
    if ctx.needs_input_grad[2]:
        grad_values = entry_grad(rowptr, col, grad, x).to(values.dtype)
    return None, None, grad_values, grad_x, None, None, None, None, None


triton_spmm.register_autograd(_backward, setup_context=_setup_context)


def schedule(rowptr: Tensor, chunk: int = CHUNK) -> Tensor:
    """Work items [W, 4] int64 (row, first entry, end entry, split): every non-empty row in
    pieces of at most `chunk` entries, longest first (ties in row order). Reads the item
    count back once: built once per graph, before training."""
    pieces = (rowptr[1:] - rowptr[:-1] + chunk - 1) // chunk
    total = int(pieces.sum())
    rows = torch.repeat_interleave(torch.arange(pieces.numel(), device=rowptr.device), pieces,
                                   output_size=total)
    nth = torch.arange(total, device=rowptr.device) - (pieces.cumsum(0) - pieces)[rows]
    start = rowptr[rows] + nth * chunk
    end = torch.minimum(start + chunk, rowptr[rows + 1])
    split = (pieces[rows] > 1).long()
    order = torch.argsort(end - start, descending=True, stable=True)
    return torch.stack([rows, start, end, split], 1).index_select(0, order).contiguous()


@dataclass
class TritonAdjacency(CSRAdjacency):
    """CSRAdjacency plus both directions' work items; `weighted`=False: a plain sum."""

    work: Tensor  # [W, 4] schedule of A
    t_work: Tensor  # [W', 4] schedule of Aᵀ
    weighted: bool = True

    @classmethod
    def from_edge_index(cls, edge_index: Tensor, num_nodes: int,
                        edge_weight: Tensor | None = None, aggr: str = "sum",
                        num_targets: int | None = None,
                        chunk: int = CHUNK) -> TritonAdjacency:
        """As CSRAdjacency.from_edge_index, with the work items of A and Aᵀ."""
        base = CSRAdjacency.from_edge_index(edge_index, num_nodes, edge_weight, aggr,
                                            num_targets)
        parts = {f.name: getattr(base, f.name) for f in fields(CSRAdjacency)}
        return cls(**parts, work=schedule(base.rowptr, chunk),
                   t_work=schedule(base.t_rowptr, chunk),
                   weighted=edge_weight is not None or aggr == "mean")

    def to(self, device: torch.device | str) -> TritonAdjacency:
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return TritonAdjacency(**{k: v.to(device) if isinstance(v, Tensor) else v
                                  for k, v in moved.items()})

    def matmul(self, x: Tensor) -> Tensor:
        return triton_spmm(self.rowptr, self.col, self.values if self.weighted else None, x,
                           self.work, self.t_rowptr, self.t_col, self.t_perm, self.t_work)
