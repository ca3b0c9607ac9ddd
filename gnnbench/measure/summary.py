"""A run's epochs boiled down to what is reported: steady-state timing after the warm-up,
the one-off cost, and accuracy by OGB's convention (test at the best validation epoch)."""

from __future__ import annotations

from typing import Any, Protocol

from gnnbench.measure.stats import summarize

STAGES = ("sample", "transfer", "compute")


class Epoch(Protocol):
    """An epoch's row of a record (records.model.Epoch), as far as summaries read it."""

    epoch: int
    train_s: float
    eval_s: float | None  # None where timed with the train part (epochs timed in groups)
    bookkeeping_s: float | None
    timed_epochs: int | None  # epochs timed as one unit with this one; None: 1
    train_acc: float | None
    val_acc: float | None
    test_acc: float | None

    def get(self, key: str, default: Any = None) -> Any: ...

    def has(self, key: str) -> bool: ...


def steady_rows(records: list[Epoch], warmup: int) -> list[Epoch]:
    """The epochs after the warm-up that are independent timing samples: each of them, or
    where epochs were timed in groups (`timed_epochs`, compiler.capture_epochs) the first
    of each group that starts after the warm-up. A group's epochs all hold the same share
    of one measurement: counting each would multiply the samples by the group size and
    make every spread, check and interval look surer than the data is."""
    if not records or not records[0].timed_epochs:
        return list(records[warmup:])
    kept, i = [], 0
    while i < len(records):
        if i >= warmup:
            kept.append(records[i])
        i += records[i].timed_epochs or 1
    return kept


def timing_summary(records: list[Epoch], warmup: int, wall_s: float, compiled: bool,
                   configured_warmup: int) -> dict:
    """`warmup` may be less than configured when a run ended early; with no epoch after the
    configured warm-up there is no steady state and so no compile overhead. Epochs timed in
    groups give one sample per group (`steady_rows`, `timed_epochs` says the group size)
    and no eval time of their own (it is inside the train time)."""
    train = [r.train_s for r in records]
    evals = [r.eval_s or 0.0 for r in records]
    steady = steady_rows(records, warmup)
    steady_train = summarize([r.train_s for r in steady])
    steady_evals = [r.eval_s for r in steady if r.eval_s is not None]
    steady_eval = summarize(steady_evals) if steady_evals else None
    first_epoch = train[0] + evals[0]
    steady_epoch = steady_train["median"] + (steady_eval["median"] if steady_eval else 0.0)
    # The one-off cost is not all in epoch 0: CUDA graphs are recorded on a later call
    # (cudagraph trees on the 2nd, a captured whole step on the 4th). So it is the excess of
    # every warm-up epoch over the steady epoch.
    one_off = sum(train[i] + evals[i] - steady_epoch for i in range(max(warmup, 1)))
    stages = {f"{stage}_s": summarize([r.get(f"{stage}_s") for r in steady])
              for stage in STAGES if records[0].has(f"{stage}_s")}
    # The runner's own per-epoch work after the timed epoch (progress, checks): to compare
    # with the step it measures. Absent from records older than the split.
    if all(r.bookkeeping_s is not None for r in steady) and steady:
        stages["bookkeeping_s"] = summarize([r.bookkeeping_s for r in steady])
    grouped = {"timed_epochs": records[0].timed_epochs} if records[0].timed_epochs else {}
    steady_ok = len(records) > configured_warmup
    return {
        **stages,
        **grouped,
        "warmup_epochs": warmup,
        "train_s": steady_train,
        "eval_s": steady_eval,
        "first_epoch_s": first_epoch,
        "first_train_s": train[0],
        "first_eval_s": records[0].eval_s,
        "first_epoch_overhead_s": first_epoch - steady_epoch,
        "warmup_overhead_s": one_off,
        "wall_s": wall_s,
        "compile_overhead_s": one_off if compiled and steady_ok else None,
    }


# A run is near chance when its test accuracy got less than this share of the way from the
# majority-class share (always answering the commonest class) to 1.
NEAR_CHANCE = 0.1


def accuracy_summary(records: list[Epoch], chance: float | None = None) -> dict:
    """`chance`: the test split's majority-class share. A model that stays near it did not
    learn: its speedup is of a model nobody would train, so the run says so."""
    best = max(records, key=lambda r: r.val_acc)  # first epoch reaching the best val
    last = records[-1]
    summary = {"final": {"train": last.train_acc, "val": last.val_acc, "test": last.test_acc},
               "best_val": best.val_acc, "best_epoch": best.epoch,
               "test_at_best_val": best.test_acc}
    if chance is not None and best.test_acc is not None:
        summary.update(chance=chance,
                       near_chance=best.test_acc < chance + NEAR_CHANCE * (1 - chance))
    return summary


def rank_timing(records: list[Epoch], warmup: int, train_nodes: int) -> dict:
    """A DDP run's epochs per rank (its train time and its sampling, transfer and compute
    after the warm-up), and its throughput: training nodes per second of the steady epoch
    (an epoch ends when its slowest rank does)."""
    steady = records[warmup:]
    world = len(records[0].get("rank_train_s"))
    ranks = [{"rank": rank, **{f"{stage}_s": summarize([r.get(f"rank_{stage}_s")[rank]
                                                       for r in steady])
                              for stage in ("train", *STAGES)}}
             for rank in range(world)]
    median = summarize([r.train_s for r in steady])["median"]
    return {"ranks": ranks,
            "throughput_nodes_per_s": train_nodes / median if median else None}
