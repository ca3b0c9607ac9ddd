"""The runner layer: one experiment (`experiment.run_experiment`: build, train, measure,
record; never raises for a failed run), the epoch loop, device leases, signals, DDP.

`from gnnbench.runner import run_experiment` loads the experiment (and with it torch, PyG and
every model) on first use, not on `from gnnbench.runner import interrupts`: the modules a
command needs before a run (signals, device leases) stay cheap to import."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gnnbench.runner.experiment import run_experiment, skipped_record, validate

__all__ = ["run_experiment", "skipped_record", "validate"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from gnnbench.runner import experiment

        return getattr(experiment, name)
    raise AttributeError(f"module 'gnnbench.runner' has no attribute {name!r}")
