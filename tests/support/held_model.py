"""Test-only: a GCN whose forward can be held at a gate, so a signal test knows for certain
that the run is inside an epoch (not between two) when it sends its signals, however fast
or slow the machine's epochs are.

The gate is two files named by the environment: while `HELD_MODEL_GATE` exists, every forward
waits; on entering the wait it writes `HELD_MODEL_GATE.held`, which the test watches for."""

from __future__ import annotations

import os
import time
from pathlib import Path

from torch import Tensor

from gnnbench.models.gcn import GCN

HOLD_LIMIT_S = 300  # a test that never releases the gate still ends


class HeldGCN(GCN):
    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        gate = os.environ.get("HELD_MODEL_GATE")
        if gate and Path(gate).exists():
            Path(gate + ".held").touch()
            deadline = time.monotonic() + HOLD_LIMIT_S
            while Path(gate).exists() and time.monotonic() < deadline:
                time.sleep(0.01)  # a signal's handler runs here, in the main thread
        return super().forward(x, edge_index, edge_weight)
