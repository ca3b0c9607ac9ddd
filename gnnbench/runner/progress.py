"""Epoch progress: a live bar on a terminal, a few plain lines in logs and CI."""

from __future__ import annotations

import sys

from gnnbench.records.model import Epoch


class Progress:
    def __init__(self, total: int, label: str, enabled: bool = True,
                 live: bool = True) -> None:
        """`enabled=False`: nothing at all (the ranks of a DDP run other than rank 0);
        `live=False`: plain lines even on a terminal, where jobs run side by side on one
        (the GPU pool)."""
        self.total, self.label, self.enabled = total, label, enabled
        self.bar = None
        if enabled and live and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=label, unit="epoch", leave=False)
        self.every = max(1, total // 10)

    def update(self, row: Epoch) -> None:
        step_ms = row.train_s * 1e3
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{row.loss:.4f}", step=f"{step_ms:.2f} ms",
                                 val=f"{row.val_acc:.3f}", refresh=False)
            self.bar.update(1)
        elif self.enabled and ((row.epoch + 1) % self.every == 0 or row.epoch == 0):
            print(f"[{self.label}] epoch {row.epoch + 1}/{self.total}  loss {row.loss:.4f}  "
                  f"step {step_ms:.2f} ms  val acc {row.val_acc:.3f}", file=sys.stderr,
                  flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
