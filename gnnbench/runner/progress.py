"""Epoch progress: a live bar on a terminal, a few plain lines in logs and CI."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any


class Progress:
    def __init__(self, total: int, label: str, enabled: bool = True,
                 live: bool = True) -> None:
        """`enabled=False`: nothing at all (the ranks of a DDP run other than rank 0);
        `live=False`: plain lines even on a terminal, where jobs run side by side on one
        (the GPU pool)."""
        self.total, self.label, self.enabled = total, label, enabled
        self.bar = None
        self.postfix_at = 0.0  # when the bar's loss and accuracy were last set
        if enabled and live and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=label, unit="epoch", leave=False)
        self.every = max(1, total // 10)

    def update(self, row: Mapping[str, Any]) -> None:
        """`row`: an epoch's record as the trainer made it. Called between epochs, so it
        formats only what is shown: a plain line every tenth of the run, the bar's figures
        as often as the bar redraws (tqdm's `mininterval`)."""
        epoch = row.get("epoch")
        if self.bar is not None:
            now = time.monotonic()
            if now - self.postfix_at >= self.bar.mininterval:
                self.postfix_at = now
                self.bar.set_postfix(loss=f"{row.get('loss'):.4f}",
                                     step=f"{row.get('train_s') * 1e3:.2f} ms",
                                     val=f"{row.get('val_acc'):.3f}", refresh=False)
            self.bar.update(1)
        elif self.enabled and ((epoch + 1) % self.every == 0 or epoch == 0):
            print(f"[{self.label}] epoch {epoch + 1}/{self.total}  loss {row.get('loss'):.4f}  "
                  f"step {row.get('train_s') * 1e3:.2f} ms  val acc {row.get('val_acc'):.3f}",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
