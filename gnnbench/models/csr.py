"""Neighbour aggregation as one sparse-dense product that torch.compile can keep in its graph.

Eager cuSPARSE CSR aggregation is about as fast as a compiled scatter, but dynamo refuses
sparse tensors ("Attempted to wrap sparse Tensor"), so a compiled model could not use it.
Here the CSR adjacency travels as plain tensors, and the product is a custom op,
`gnnbench::csr_mm`, that builds the sparse view inside its own kernel: dynamo sees an
opaque op with a fake (meta) implementation and traces through it with dynamic shapes and
no graph break. `gnnbench::csr_spmm` adds autograd: grad x = Aᵀ @ grad out, with the
transpose's structure built once per graph (`CSRAdjacency`) and passed in, so no step ever
rebuilds it; grad values (for learned edge weights) is the per-edge dot product.

Message direction is PyG's: messages flow source -> target, out[target] += w * x[source],
so A has a row per target and a column per source. torch.sparse.mm runs cuSPARSE on CUDA
(float32, float64, and half/bfloat16 where cuSPARSE supports them) and MKL on CPU, which has
no half or bfloat16 kernel: there those are computed in float32 and cast back.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

_CPU_DTYPES = (torch.float32, torch.float64)


@torch.library.custom_op("gnnbench::csr_mm", mutates_args=())
def csr_mm(rowptr: Tensor, col: Tensor, values: Tensor, x: Tensor) -> Tensor:
    """A @ x for A given by (rowptr, col, values), A of shape [rowptr.numel() - 1, x.size(0)].
    No autograd of its own: csr_spmm's backward calls it for Aᵀ @ grad."""
    dtype = x.dtype
    if x.device.type == "cpu" and dtype not in _CPU_DTYPES:
        x = x.float()
    adjacency = torch.sparse_csr_tensor(rowptr, col, values.to(x.dtype),
                                        size=(rowptr.numel() - 1, x.size(0)),
                                        check_invariants=False)  # checking would sync
    return torch.sparse.mm(adjacency, x).to(dtype)


@csr_mm.register_fake
def _(rowptr: Tensor, col: Tensor, values: Tensor, x: Tensor) -> Tensor:
    torch._check(x.dim() == 2, lambda: f"csr_mm takes 2-D features, got {x.dim()}-D")
    return x.new_empty(rowptr.shape[0] - 1, x.shape[1])


@torch.library.custom_op("gnnbench::csr_spmm", mutates_args=())
def csr_spmm(rowptr: Tensor, col: Tensor, values: Tensor, x: Tensor, t_rowptr: Tensor,
             t_col: Tensor, t_perm: Tensor) -> Tensor:
    """A @ x, differentiable in x and values. (t_rowptr, t_col) is Aᵀ's structure and
    t_perm maps Aᵀ's entries to A's, so that Aᵀ's values are values[t_perm]."""
    return csr_mm(rowptr, col, values, x)


@csr_spmm.register_fake
def _(rowptr: Tensor, col: Tensor, values: Tensor, x: Tensor, t_rowptr: Tensor,
      t_col: Tensor, t_perm: Tensor) -> Tensor:
    return x.new_empty(rowptr.shape[0] - 1, x.shape[1])


def _setup_context(ctx, inputs: tuple, output: Tensor) -> None:  # noqa: ARG001 - library API
    rowptr, col, values, x, t_rowptr, t_col, t_perm = inputs
    # x is kept only for the gradient of the values: GCN's weights are constants.
    ctx.save_for_backward(rowptr, col, values, x if values.requires_grad else None,
                          t_rowptr, t_col, t_perm)


def _backward(ctx, grad: Tensor) -> tuple:
    rowptr, col, values, x, t_rowptr, t_col, t_perm = ctx.saved_tensors
    grad_values = grad_x = None
    if ctx.needs_input_grad[3]:
        grad_x = csr_mm(t_rowptr, t_col, values.index_select(0, t_perm), grad)
    if ctx.needs_input_grad[2]:
        grad_values = entry_grad(rowptr, col, grad, x).to(values.dtype)
    return None, None, grad_values, grad_x, None, None, None


def entry_grad(rowptr: Tensor, col: Tensor, grad: Tensor, x: Tensor) -> Tensor:
    """The gradient of each entry's value: d out[r] / d A[r, c] = x[c], one dot product of
    grad[r] and x[c] per entry."""
    row = entry_rows(rowptr, col.shape[0])
    return (grad.index_select(0, row) * x.index_select(0, col)).sum(-1)


def entry_rows(rowptr: Tensor, num_entries: int) -> Tensor:
    """The row of each entry, by binary search in the row pointers."""
    entries = torch.arange(num_entries, device=rowptr.device)
    return torch.searchsorted(rowptr, entries, right=True) - 1


csr_spmm.register_autograd(_backward, setup_context=_setup_context)


@dataclass
class CSRAdjacency:
    """A (targets x sources) and the structure of Aᵀ, built once per graph (per sampled batch
    in mini-batch training: every layer, forward and backward, then shares it)."""

    rowptr: Tensor  # [num_targets + 1]
    col: Tensor  # [E] source of each entry, entries grouped by target, sources ascending
    values: Tensor  # [E] weight of each entry
    perm: Tensor  # [E] entry -> column of the edge_index it came from
    t_rowptr: Tensor  # [num_sources + 1]
    t_col: Tensor  # [E] target of each entry of Aᵀ, grouped by source
    t_perm: Tensor  # [E] entry of Aᵀ -> entry of A

    @classmethod
    def from_edge_index(cls, edge_index: Tensor, num_nodes: int,
                        edge_weight: Tensor | None = None, aggr: str = "sum",
                        num_targets: int | None = None) -> CSRAdjacency:
        """aggr="sum" weighs each edge by edge_weight (1 without); "mean" divides by the
        target's in-degree (multi-edges counted, as PyG's scatter mean counts messages), so
        that A @ x is SAGEConv's mean aggregation. `num_targets` defaults to num_nodes."""
        if aggr not in ("sum", "mean"):
            raise ValueError(f"aggr must be 'sum' or 'mean', got {aggr!r}")
        if aggr == "mean" and edge_weight is not None:
            raise ValueError("aggr='mean' weighs every edge by 1/in-degree; pass no edge_weight")
        num_targets = num_nodes if num_targets is None else num_targets
        src, dst = edge_index[0], edge_index[1]
        perm = _lexsort(dst, src, num_nodes)  # by target, then source: sorted columns
        row, col = dst.index_select(0, perm), src.index_select(0, perm)
        rowptr = _rowptr(row, num_targets)
        if edge_weight is not None:
            values = edge_weight.index_select(0, perm)
        elif aggr == "mean":
            deg = (rowptr[1:] - rowptr[:-1]).clamp(min=1)
            values = deg.reciprocal().index_select(0, row)  # float32, the default dtype
        else:
            values = torch.ones(perm.numel(), device=perm.device)
        t_rowptr, t_col, t_perm = _transpose(row, col, num_targets, num_nodes)
        return cls(rowptr, col, values, perm, t_rowptr, t_col, t_perm)

    @property
    def num_targets(self) -> int:
        return self.rowptr.numel() - 1

    def to(self, device: torch.device | str) -> CSRAdjacency:
        return CSRAdjacency(*(t.to(device) for t in (self.rowptr, self.col, self.values,
                                                     self.perm, self.t_rowptr, self.t_col,
                                                     self.t_perm)))

    def matmul(self, x: Tensor) -> Tensor:
        """A @ x by this adjacency's op: cuSPARSE / MKL here, a subclass may bring its own
        kernel (csr_triton.TritonAdjacency) without the layers knowing."""
        return csr_spmm(self.rowptr, self.col, self.values, x, self.t_rowptr, self.t_col,
                        self.t_perm)


def _lexsort(major: Tensor, minor: Tensor, minor_size: int) -> Tensor:
    """Positions ordering entries by `major`, ties by `minor` (< minor_size), remaining ties
    by position: one sort of a combined key (exact while nodes² < 2⁶³, 3·10⁹ nodes)."""
    return torch.argsort(major * minor_size + minor, stable=True)


def _rowptr(sorted_rows: Tensor, num_rows: int) -> Tensor:
    """Row pointers of sorted row ids, by binary search: torch.bincount on CUDA reads its
    input's maximum back to the host, this reads nothing."""
    bounds = torch.arange(num_rows + 1, device=sorted_rows.device)
    return torch.searchsorted(sorted_rows, bounds)


def _transpose(row: Tensor, col: Tensor, num_targets: int,
               num_sources: int) -> tuple[Tensor, Tensor, Tensor]:
    """Aᵀ's (rowptr, col) and the entry of A behind each of its entries."""
    t_perm = _lexsort(col, row, num_targets)
    return _rowptr(col.index_select(0, t_perm), num_sources), row.index_select(0, t_perm), t_perm


def spmm(adj: CSRAdjacency, x: Tensor) -> Tensor:
    """A @ x: out[target] = sum over its incoming edges of value * x[source]."""
    return adj.matmul(x)

