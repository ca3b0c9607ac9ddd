"""Mini-batch training with neighbour sampling, eager and compiled, on the CPU path."""

import pytest

# 700 training nodes in batches of 256: three batches of two sizes per epoch.
MINI = ("model=sage", "dataset.train_per_class=100", "train.batching=neighbor",
        "train.fanouts=[10,5]", "train.batch_size=256", "train.sampler=gnnbench",
        "wandb.mode=disabled")


@pytest.mark.slow
def test_eager_minibatch_learns_and_splits_its_time(run):
    result = run(*MINI, "train.epochs=30", "train.warmup_epochs=2")
    assert result.status == "ok", result.reason
    assert result.batching.model_dump() == {"mode": "neighbor", "sampler": "gnnbench",
                                            "fanouts": [10, 5], "batch_size": 256,
                                            "batches_per_epoch": 3, "padded": False,
                                            "prefetch": False}
    for record in result.epochs:
        assert record.batches == 3
        parts = record.sample_s + record.transfer_s + record.compute_s
        assert record.train_s == pytest.approx(parts)
        assert min(record.sample_s, record.transfer_s, record.compute_s) > 0
    assert result.timing.sample_s["n"] == 28
    assert result.accuracy.test_at_best_val >= 0.6  # chance is 1/7


@pytest.mark.slow
def test_dynamic_shapes_compile_once(run):
    result = run(*MINI, "compile=true", "compiler.dynamic=true", "train.epochs=3",
                 "train.warmup_epochs=1")
    assert result.status == "ok", result.reason
    assert all(r.recompiles_this_epoch == 0 for r in result.epochs[1:])
    assert result.compile.recompiles == result.epochs[0].recompiles


@pytest.mark.slow
def test_whole_step_compiles_once_over_changing_batch_shapes(run):
    """scope=step on mini-batches: forward+loss and Adam compiled, dynamic shapes, no
    CUDA graph (a batch's shape changes every batch, so a capture could not be replayed)."""
    result = run(*MINI, "compile=true", "compiler.scope=step", "compiler.mode=reduce-overhead",
                 "train.epochs=12", "train.warmup_epochs=2")
    assert result.status == "ok", result.reason
    assert result.cuda_graphs == "none"
    assert all(r.recompiles_this_epoch == 0 for r in result.epochs[1:])
    assert result.accuracy.test_at_best_val >= 0.6
    # The compiled optimizer step ran: torch.optim's own two graph_break() calls show.
    reasons = result.compile.graph_break_reasons
    assert result.compile.graph_breaks == 2 and all("graph_break()" in r["reason"]
                                                            for r in reasons)


@pytest.mark.slow
@pytest.mark.parametrize("dynamic", ["false", "null"])
def test_static_and_automatic_shapes_show_their_recompiles(run, dynamic):
    result = run(*MINI, "compile=true", f"compiler.dynamic={dynamic}", "train.epochs=2",
                 "train.warmup_epochs=1")
    assert result.status == "ok", result.reason
    dynamo = result.compile
    assert dynamo.recompiles >= 1
    assert any("size mismatch" in r for r in dynamo.recompile_reasons)


def test_bad_fanouts_are_rejected(run):
    result = run(*MINI, "train.fanouts=[10]")
    assert result.status == "error" and "train.fanouts=[10]" in result.reason


def test_prefetching_trains_the_same_batches(run):
    """train.prefetch=true samples and gathers ahead of the step: the same batches in the
    same order, so the same losses; only the waiting is timed as sampling."""
    plain = run(*MINI, "train.epochs=4", "train.warmup_epochs=1")
    ahead = run(*MINI, "train.epochs=4", "train.warmup_epochs=1", "train.prefetch=true")
    assert ahead.status == "ok", ahead.reason
    assert [r.loss for r in ahead.epochs] == pytest.approx(
        [r.loss for r in plain.epochs], rel=1e-5)
    assert ahead.batching.prefetch is True
    assert all(r.transfer_s == 0 for r in ahead.epochs)


@pytest.mark.slow
def test_padded_batches_compile_to_one_graph_per_bucket_and_learn(run):
    """train.pad_batches=true: batches padded to a few bucket shapes; the compiled step sees
    no more shapes than buckets, padding waste is recorded, and training still learns."""
    result = run(*MINI, "compile=true", "compiler.dynamic=false", "train.pad_batches=true",
                 "train.epochs=6", "train.warmup_epochs=1")
    assert result.status == "ok", result.reason
    padding = result.batching.padding
    assert padding["batches"] == 6 * 3 and 1 <= padding["distinct_shapes"] <= 4
    assert padding["node_ratio"] >= 1 and padding["edge_ratio"] >= 1
    # dynamic=false compiles once per shape: at most one graph per bucket, no more.
    assert result.compile.recompiles <= padding["distinct_shapes"]
    assert result.accuracy.test_at_best_val >= 0.6
