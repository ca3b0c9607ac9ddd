"""compiler.scope=epoch: the step and the eval with the epoch's metrics compiled (on CUDA
each captured), the metrics read with one copy per epoch. Same training and the same
bookkeeping as reading each number with `.item()`."""

from __future__ import annotations

import pytest
import torch

from gnnbench import config, data, models
from gnnbench.training import steps


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
