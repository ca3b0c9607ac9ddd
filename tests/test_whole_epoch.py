"""compiler.scope=epoch: the step and the eval with the epoch's metrics compiled (on CUDA
each captured), the metrics read with one copy per epoch. Same training and the same
bookkeeping as reading each number with `.item()`."""

from __future__ import annotations

import contextlib
import json
import math
import statistics
import subprocess
import sys
from collections.abc import Iterator

import pytest
import torch
from omegaconf import OmegaConf

from gnnbench import config, data, models
from gnnbench.records import compare, identity
from gnnbench.records.model import Record
from gnnbench.report import summary
from gnnbench.runner import validate
from gnnbench.training import epoch_groups, steps


def test_device_metrics_are_the_accuracies_and_loss_the_host_reads(tmp_path):
    cfg = config.compose_config([f"data_dir={tmp_path}", "train.device=cpu"])
    task = data.load_task(cfg.dataset, cfg.data_dir, None, torch.device("cpu"))
    edge_index, weight = models.graph_inputs(cfg.model, task.edge_index, task.num_nodes)
    model = models.build_model(cfg.model, task.num_features, task.num_classes)
    loss = torch.tensor(1.25)
    metrics = steps.epoch_metrics(model, model, task, edge_index, weight, loss)
    pred = steps.predict(model, model, task, edge_index, weight)
    expected = steps.split_accuracy(pred, task)
    assert metrics[0].item() == 1.25
    for i, (name, idx) in enumerate(task.splits.items(), start=1):
        assert metrics[i].item() / idx.numel() == pytest.approx(expected[name], abs=1e-6)


@pytest.mark.slow
def test_one_read_per_epoch_keeps_the_best_epoch_and_accuracy(run):
    """The same compiled step, its metrics read once per epoch (scope=epoch) or number by
    number (scope=step): the same losses, accuracies, best validation epoch and accuracy."""
    common = ("model=sage", "compile=true", "train.epochs=15", "train.warmup_epochs=2")
    one_read, by_item = run(*common, "compiler.scope=epoch"), run(*common, "compiler.scope=step")
    assert one_read.status == by_item.status == "ok"
    assert one_read.name == "sage-synthetic-compile-default-epoch-s0"
    for key in ("train_acc", "val_acc", "test_acc", "loss"):
        assert [getattr(r, key) for r in one_read.epochs] == pytest.approx(
            [getattr(r, key) for r in by_item.epochs], abs=1e-5)
    a, b = one_read.accuracy, by_item.accuracy
    assert a.best_epoch == b.best_epoch
    assert a.test_at_best_val == pytest.approx(b.test_at_best_val, abs=1e-6)
    assert one_read.compile.expected_graph_breaks == one_read.compile.graph_breaks


def test_scope_epoch_needs_a_full_batch(run):
    result = run("compile=true", "compiler.scope=epoch", "train.batching=neighbor",
                 "train.fanouts=[5,5]", "train.epochs=2", "train.warmup_epochs=1")
    assert result.status == "error" and "compiler.scope=epoch" in result.reason


# --- compiler.capture_epochs: epochs in groups, their bookkeeping on the device -----------

def test_best_update_keeps_the_first_maximum_and_ignores_nan():
    """The device's bookkeeping picks the epoch the host's max() over epochs picks: the
    first of equal validation scores; NaN never becomes (or displaces) the best."""
    vals = [0.3, 0.5, 0.5, math.nan, 0.7, 0.7, math.nan, 0.2, 0.7]
    best = torch.tensor([-math.inf, math.nan, -1.0], dtype=torch.float64)
    for epoch, val in enumerate(vals):
        best = epoch_groups.best_update(best, torch.tensor(val), torch.tensor(10.0 * epoch),
                                        torch.tensor(float(epoch), dtype=torch.float64))
    host = max(range(len(vals)), key=lambda i: vals[i])
    assert host == 4 and best.tolist() == [pytest.approx(0.7), 40.0, 4.0]
    nan_first = epoch_groups.best_update(
        torch.tensor([-math.inf, math.nan, -1.0], dtype=torch.float64),
        torch.tensor(math.nan), torch.tensor(1.0), torch.tensor(0.0, dtype=torch.float64))
    assert nan_first[2].item() == -1.0  # no epoch is best yet


def test_a_group_keeps_every_epoch_and_the_best_on_the_device():
    """Three groups of four epochs of a scripted step and metrics: one packed tensor per
    group holds each epoch's figures and the best so far, read back as the host would."""
    val_counts = [3.0, 5.0, 5.0, 4.0, 6.0, 6.0, 2.0, 6.0, 1.0, 7.0, 7.0, 0.0]
    calls = iter(range(len(val_counts)))

    def step() -> torch.Tensor:
        return torch.tensor(float(next(calls)))

    def metrics(loss: torch.Tensor) -> torch.Tensor:
        i = int(loss.item())
        return torch.tensor([loss.item(), 8.0, val_counts[i], 2.0 * i])

    group = epoch_groups.EpochGroup(step, metrics, 4, val_at=2, test_at=3, width=4,
                                    device=torch.device("cpu"))
    rows, bests = [], []
    for first in range(0, 12, 4):
        found, best = epoch_groups.unpack(group().tolist(), first, 4, ["train", "val", "test"],
                                          [8, 10, 20])
        rows += found
        bests.append(best)
    assert [r["epoch"] for r in rows] == list(range(12))
    assert [r["val_acc"] for r in rows] == [c / 10 for c in val_counts]
    assert [b["best_epoch"] for b in bests] == [1, 4, 9]
    assert bests[-1] == {"best_val": 0.7, "test_at_best_val": 18 / 20, "best_epoch": 9}


@pytest.mark.parametrize("overrides,line", [
    (["compiler.capture_epochs=0"], "compiler.capture_epochs=0 must be an integer >= 1"),
    (["compiler.capture_epochs=-3"], "compiler.capture_epochs=-3 must be an integer >= 1"),
    (["compiler.capture_epochs=abc"],
     "compiler.capture_epochs='abc' is not an integer; it must be an integer >= 1"),
    (["compiler.capture_epochs=2.5"],
     "compiler.capture_epochs=2.5 is not an integer; it must be an integer >= 1"),
    (["compiler.capture_epochs=5"], "compiler.capture_epochs=5 groups the epochs of a "
                                    "whole-epoch run: needs compile=true compiler.scope=epoch"),
    (["variant=whole-epoch", "compiler.capture_epochs=5", "train.epochs=23"],
     "train.epochs=23 is not a multiple of compiler.capture_epochs=5 (epochs are read in "
     "groups of 5); choose train.epochs=20 or 25"),
    (["variant=whole-epoch", "compiler.capture_epochs=4", "train.epochs=200"],
     "train.warmup_epochs=10 is not a multiple of compiler.capture_epochs=4 (epochs are read "
     "in groups of 4); choose train.warmup_epochs=8 or 12"),
    (["variant=whole-epoch", "compiler.capture_epochs=5", "train.paired=true"],
     "compiler.capture_epochs=5 needs train.paired=false"),
])
def test_a_bad_capture_epochs_is_one_line(overrides, line):
    with pytest.raises(config.ConfigError) as err:
        validate(config.compose_config(["train.device=cpu", *overrides]))
    assert line in str(err.value) and "\n" not in str(err.value)


def test_the_command_line_refuses_a_bad_capture_epochs(tmp_path):
    """Exit 1 with the one line, before anything trains."""
    proc = subprocess.run([sys.executable, "-m", "gnnbench", "compiler.capture_epochs=0",
                           "train.device=cpu", "wandb.mode=disabled",
                           f"data_dir={tmp_path / 'data'}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr
    assert "gnnbench: error: compiler.capture_epochs=0 must be an integer >= 1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_capture_epochs_1_keeps_every_name_and_identity():
    """The default composes today's whole-epoch run: the same name and variant as before
    the key existed, so committed records keep their settings and rows."""
    cfg = OmegaConf.to_container(config.compose_config(["variant=whole-epoch"]), resolve=True)
    assert cfg["compiler"]["capture_epochs"] == 1
    assert config.variant_label(cfg) == "compile-reduce-overhead epoch"
    without = json.loads(json.dumps(cfg))
    del without["compiler"]["capture_epochs"]
    assert config.variant_label(without) == config.variant_label(cfg)
    assert identity.setting_key(without, "cuda") == identity.setting_key(cfg, "cuda")
    grouped = config.compose_config(["variant=whole-epoch", "compiler.capture_epochs=5"])
    assert config.run_name(grouped) == "gcn-synthetic-compile-reduce-overhead-epoch-" \
                                      "capture_epochs=5-s0"


GROUPED = ("dataset=cora", "model=gcn", "variant=whole-epoch", "train.epochs=20",
           "train.warmup_epochs=5")


@contextlib.contextmanager
def deterministic() -> Iterator[None]:
    """The same kernels in the same order give the same numbers: scatter-adds without
    atomics (Inductor falls back to PyTorch's deterministic kernels)."""
    before = (torch.are_deterministic_algorithms_enabled(),
              torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def same_training_in_groups(run, *extra: str) -> tuple[Record, Record]:
    """Whole-epoch Cora GCN read every epoch and every 5 epochs, same seed: the same epochs,
    the same best validation epoch and test accuracy there, the device's bookkeeping equal
    to the host's, and one timing sample per group."""
    with deterministic():
        one, five = run(*GROUPED, *extra), run(*GROUPED, *extra, "compiler.capture_epochs=5")
    assert one.status == five.status == "ok", (one.reason, five.reason)
    assert five.name.endswith("-compile-reduce-overhead-epoch-capture_epochs=5-s0")
    for key in ("loss", "train_acc", "val_acc", "test_acc"):
        assert [getattr(r, key) for r in five.epochs] == pytest.approx(
            [getattr(r, key) for r in one.epochs], abs=1e-6)
    a, b = one.accuracy, five.accuracy
    assert 0 < b.best_epoch == a.best_epoch
    assert b.test_at_best_val == a.test_at_best_val and b.best_val == a.best_val
    assert b.on_device == {"best_val": b.best_val, "test_at_best_val": b.test_at_best_val,
                           "best_epoch": b.best_epoch}
    assert not one.timing.has("timed_epochs") and a.on_device is None
    assert five.timing.timed_epochs == 5 and five.timing.eval_s is None
    assert five.timing.train_s.n == 3  # groups after the warm-up, not 15 epochs
    assert all(r.timed_epochs == 5 and r.eval_s is None for r in five.epochs)
    assert len({r.train_s for r in five.epochs[5:10]}) == 1
    return one, five


@pytest.mark.slow
def test_five_epochs_a_unit_train_and_pick_the_best_epoch_like_one(run):
    one, five = same_training_in_groups(run)
    assert five.cuda_graphs == "none"
    eager = run(*GROUPED[:2], "train.epochs=20", "train.warmup_epochs=5")
    c = compare.compare([eager], [five])
    assert c.get("timed_epochs") == 5 and c.inference is None and c.epoch is not None
    # The grouped train time holds train and eval: so does the reference it is set against.
    rows = eager.epochs[5:]
    assert c.eager_step_median_s == pytest.approx(statistics.median(
        r.train_s + r.eval_s for r in rows))
    assert summary.format_summary(five).count("groups of 5 epochs") == 1


@pytest.mark.slow
@pytest.mark.gpu
def test_five_epochs_a_cuda_graph_train_like_one_epoch_a_graph(run):
    """On CUDA each group of 5 epochs is one captured graph (after one uncaptured group),
    and trains and picks the best epoch exactly as one epoch (two graphs) at a time."""
    one, five = same_training_in_groups(run, "train.device=cuda")
    assert one.cuda_graphs == five.cuda_graphs == "whole epoch"
    assert five.cuda_graph_audit.whole_step_captured
    assert 0.6 <= five.accuracy.test_at_best_val <= 0.84
