"""De-duplicating the nodes a hop reaches: which are new, in what order, and their local ids.

Two ways to the same answer. `extend_sorted` sorts everything found so far (torch.unique)
and needs no memory beyond the batch, but a sort per hop and reads of its output sizes.
`NodeMarks` keeps a node-sized global -> local id array, allocated once per sampler and
reset only where a batch wrote, so that a hop costs a few scatters and gathers over its own
edges and no read at all: what the sampler reads back is only the hop's counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor


def compact(values: Tensor, keep: Tensor, rank: Tensor, size: int) -> Tensor:
    """values[keep] when `size` = keep.sum() and `rank` = cumsum(keep) - 1 are known: one
    scatter (dropped entries go to a trash slot), where boolean indexing would read the
    count back from the device once more."""
    out = values.new_empty(size + 1)
    out.scatter_(0, torch.where(keep, rank, size), values)
    return out[:size]


def extend_sorted(n_id: Tensor, found: Tensor) -> tuple[Tensor, Tensor]:
    """Append the nodes of `found` not yet in `n_id` in order of first appearance; return
    the new n_id and the local id of every entry of `found`. Sort-based, no N-sized buffer."""
    n_old = n_id.numel()
    uniq, inv = torch.unique(torch.cat([n_id, found]), return_inverse=True)
    order = torch.arange(inv.numel(), device=inv.device)
    first = torch.full_like(uniq, inv.numel()).scatter_reduce_(0, inv, order, reduce="amin")
    new = (first >= n_old).nonzero().view(-1)
    new = new[torch.argsort(first[new])]  # torch.unique sorted by id; restore discovery order
    local = first  # a node already in n_id keeps its position there
    local[new] = torch.arange(n_old, n_old + new.numel(), device=inv.device)
    return torch.cat([n_id, uniq[new]]), local.index_select(0, inv[n_old:])


NOT_REACHED = torch.iinfo(torch.long).max


class NodeMarks:
    """Global node id -> local id in the batch being sampled (NOT_REACHED if not reached).
    Slot `num_nodes` is a trash slot for masked-out entries, so masks never need compacting
    (a host read) before a scatter.

    Serves one sampling at a time: two iterators of one sampler interleaved would corrupt
    each other, so that raises instead. A sampling that fails half-way leaves it dirty; the
    next one then clears all of it."""

    def __init__(self, num_nodes: int, device: torch.device | str) -> None:
        self.ids = torch.full((num_nodes + 1,), NOT_REACHED, dtype=torch.long, device=device)
        self.trash = num_nodes
        self._busy = self._dirty = False

    @contextmanager
    def claim(self) -> Iterator[Tensor]:
        if self._busy:
            raise RuntimeError("this NodeMarks is in use by another sampling; give each "
                               "concurrent iteration its own sampler")
        self._busy = True
        try:
            if self._dirty:
                self.ids.fill_(NOT_REACHED)
            self._dirty = True
            yield self.ids
        finally:
            self._busy = False

    def reset(self, touched: Tensor) -> None:
        """Clean again after a batch whose nodes are `touched`: O(batch), not O(graph)."""
        self.ids.index_fill_(0, touched, NOT_REACHED)
        self.ids[self.trash:].fill_(NOT_REACHED)
        self._dirty = False

    def number(self, found: Tensor, valid: Tensor | None,
               n_old: int) -> tuple[Tensor, Tensor, Tensor]:
        """Number the nodes of `found` (real entries only) reached for the first time n_old,
        n_old + 1, ... in order of first appearance, as torch.unique + first-index would; return
        every entry's local id, and which entries first reached a new node with their rank."""
        # Padding entries may read any node (their results are dropped) but never write one.
        order = torch.arange(found.numel(), device=found.device)
        is_new = self.ids.index_select(0, found) == NOT_REACHED
        if valid is not None:
            is_new &= valid
        self.ids.scatter_reduce_(0, torch.where(is_new, found, self.trash), order, reduce="amin")
        is_first = is_new & (self.ids.index_select(0, found) == order)  # a new node's first entry
        rank = torch.cumsum(is_first, 0) - 1
        self.ids.scatter_(0, torch.where(is_first, found, self.trash), rank + n_old)
        return self.ids.index_select(0, found), is_first, rank
