"""compiler.capture_epochs=K: K epochs of a whole-epoch run (each its step, its eval forward
and its metrics) as one unit that never waits for the host. Each epoch's numbers and the
best-validation bookkeeping stay on the device as tensors; the host reads them all with one
copy per group. On CUDA the unit is captured as one CUDA graph (`CapturedStep`), so K epochs
cost one launch; elsewhere the same loop runs as it is, so the same command works on a CPU.

A captured graph replays fixed tensors with fixed constants, so nothing here may depend on
a Python value that changes between groups: the epoch number is a device counter."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

# [best validation, test at it, its epoch] before any epoch: a first epoch always beats it.
_NO_BEST = (-math.inf, math.nan, -1.0)


def best_update(best: Tensor, val: Tensor, test: Tensor, epoch: Tensor) -> Tensor:
    """The bookkeeping `best` ([best val, test at it, its epoch]) after one more epoch, as
    tensors, with no host sync. Only a strictly higher validation score replaces the best,
    so of equal scores the first is kept, as the host's `max()` over epochs keeps the first
    maximum (measure/summary.accuracy_summary). NaN never replaces it (a comparison with NaN
    is false); the host's `max()` would keep a NaN only as the very first epoch, and a
    count of correct nodes is never NaN."""
    candidate = torch.stack([v.to(best.dtype) for v in (val, test, epoch)])
    return torch.where(val.to(best.dtype) > best[0], candidate, best)


class EpochGroup:
    """`epochs` epochs of `step` (one training step, returning its loss) each followed by
    `metrics(loss)` ([loss, correct in each split], steps.epoch_metrics), into one float64
    tensor: `epochs` rows of the metrics, then [best val, test at it, best epoch] over every
    epoch so far. `val_at`, `test_at`: where the validation and test counts are in a row."""

    def __init__(self, step: Callable[[], Tensor], metrics: Callable[[Tensor], Tensor],
                 epochs: int, val_at: int, test_at: int, width: int,
                 device: torch.device) -> None:
        self.step, self.metrics, self.epochs = step, metrics, epochs
        self.val_at, self.test_at, self.width = val_at, test_at, width
        self.packed = torch.zeros(epochs * width + 3, dtype=torch.float64, device=device)
        self.best = torch.tensor(_NO_BEST, dtype=torch.float64, device=device)
        self.next_epoch = torch.zeros((), dtype=torch.float64, device=device)

    def __call__(self) -> Tensor:
        """One group: every op is on the device and in place, so it can be captured."""
        w = self.width
        for i in range(self.epochs):
            row = self.metrics(self.step())
            self.packed[i * w:(i + 1) * w].copy_(row)
            self.best.copy_(best_update(self.best, row[self.val_at], row[self.test_at],
                                        self.next_epoch))
            self.next_epoch.add_(1)
        self.packed[self.epochs * w:].copy_(self.best)
        return self.packed


def unpack(values: list[float], first: int, epochs: int, splits: list[str],
           sizes: list[int]) -> tuple[list[dict], dict]:
    """The host's copy of a group (`EpochGroup.packed`, as a list) as the epochs' figures
    (loss and each split's accuracy, epoch numbers from `first`) and the device's own
    best-validation bookkeeping, as accuracies."""
    width = 1 + len(splits)
    rows = []
    for i in range(epochs):
        loss, *correct = values[i * width:(i + 1) * width]
        row = {"epoch": first + i, "loss": loss}
        row.update({f"{name}_acc": c / n for name, c, n in zip(splits, correct, sizes,
                                                                strict=True)})
        rows.append(row)
    val, test, epoch = values[epochs * width:]
    size = dict(zip(splits, sizes, strict=True))
    found = epoch >= 0
    best = {"best_val": val / size["val"] if found else None,
            "test_at_best_val": test / size["test"] if found else None,
            "best_epoch": int(epoch) if found else None}
    return rows, best
