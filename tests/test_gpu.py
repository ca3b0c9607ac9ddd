"""CUDA paths: synchronised timing and allocator peak memory. Skipped without CUDA;
run on a GPU machine with `pytest -m gpu`."""

import pytest
import torch

from gnnbench.measure import timer as timing

# Slow too: most tests compile in this process (the tier rule in conftest.py).
pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_timer_waits_for_the_kernel():
    """An unsynchronised timer would return in microseconds, before the kernel ends."""
    device = torch.device("cuda")
    torch.cuda._sleep(1000)  # warm up the launch path
    _, seconds = timing.timed(lambda: torch.cuda._sleep(int(2e8)), device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(int(2e8))
    end.record()
    end.synchronize()
    assert seconds == pytest.approx(start.elapsed_time(end) / 1e3, rel=0.2)


def test_epoch_timer_times_kernels_without_a_sync_between_regions():
    timer = timing.EpochTimer(torch.device("cuda"))
    timer.measure("a", lambda: torch.cuda._sleep(int(2e8)))
    timer.measure("b", lambda: torch.cuda._sleep(int(1e8)))
    _, both = timing.timed(lambda: (torch.cuda._sleep(int(2e8)), torch.cuda._sleep(int(1e8))),
                           torch.device("cuda"))
    seconds = timer.read()
    assert seconds["a"] == pytest.approx(2 * seconds["b"], rel=0.2)
    assert seconds["a"] + seconds["b"] == pytest.approx(both, rel=0.2)
    # The next epoch reuses the events and counts only its own regions.
    timer.measure("b", lambda: torch.cuda._sleep(int(1e8)))
    assert timer.read() == {"b": pytest.approx(seconds["b"], rel=0.2)}


@pytest.mark.parametrize("compiled", ["false", "true"])
def test_cuda_run_records_device_memory_and_accuracy(run, compiled):
    result = run("dataset=cora", "train.device=cuda", f"compile={compiled}")
    assert result.status == "ok", result.reason
    assert result.env.device.startswith("cuda")
    assert "NVIDIA" in result.env.device_name or torch.version.hip
    assert result.memory.kind == "cuda_max_allocated"
    # Cora's features alone are 2708 x 1433 float32 = 15.5 MB on the device.
    assert result.memory.peak_bytes > 15e6
    assert result.timing.train_s.median > 0
    assert 0.79 <= result.accuracy.test_at_best_val <= 0.84


@pytest.mark.parametrize("model", ["gcn", "sage"])
def test_captured_whole_step_trains_like_its_eager_twin(run, model):
    """scope=step + reduce-overhead on CUDA replays forward, backward and Adam as one CUDA
    graph; trained beside an eager twin from the same weights, it must learn the same."""
    result = run("dataset=cora", f"model={model}", "train.device=cuda", "compile=true",
                 "compiler.mode=reduce-overhead", "compiler.scope=step", "train.paired=true")
    assert result.status == "ok", result.reason
    assert result.cuda_graphs == "whole step"
    assert result.cuda_graph_audit.whole_step_captured
    assert 0.78 <= result.accuracy.test_at_best_val <= 0.84
    assert abs(result.comparison.test_acc_delta) <= 0.02
    # Replays train: the loss keeps falling after the capture (epoch 3).
    losses = [r.loss for r in result.epochs]
    assert losses[-1] < 0.5 * losses[4]


def test_model_scope_reduce_overhead_records_cudagraph_trees(run):
    """Inductor's cudagraph trees, observed: the graphs it recorded, not the mode's promise."""
    result = run("dataset=cora", "train.device=cuda", "compile=true",
                 "compiler.mode=reduce-overhead", "train.epochs=12", "train.warmup_epochs=4")
    assert result.status == "ok", result.reason
    audit = result.cuda_graph_audit
    assert result.cuda_graphs == audit.used == "cudagraph trees"
    assert audit.inductor_recorded_graphs >= 1


def test_cuda_out_of_memory_is_an_outcome_and_the_next_run_is_fine(run):
    """A graph larger than the GPU (features alone ~150 GB) ends as `oom`, with the reason;
    the same process then runs the next job normally, as a sweep would."""
    result = run("dataset.num_nodes=150000000", "dataset.num_edges=1000",
                 "train.device=cuda", "train.epochs=2", "train.warmup_epochs=1")
    assert result.status == "oom", result.reason
    assert "memory" in result.reason.lower()
    after = run("dataset=cora", "train.device=cuda", "train.epochs=3", "train.warmup_epochs=1")
    assert after.status == "ok", after.reason


@pytest.mark.parametrize("model", ["gcn", "sage"])
def test_captured_eager_step_trains_like_its_eager_twin(run, model):
    """capture=true without compile: PyTorch's own kernels replayed as one CUDA graph, beside
    an eager twin from the same weights; it must learn the same and run faster (launches)."""
    result = run("dataset=cora", f"model={model}", "train.device=cuda",
                 "variant=eager-captured", "train.paired=true")
    assert result.status == "ok", result.reason
    assert result.cuda_graphs == "whole step"
    assert result.cuda_graph_audit.whole_step_captured and result.compile is None
    assert 0.78 <= result.accuracy.test_at_best_val <= 0.84
    assert abs(result.comparison.test_acc_delta) <= 0.02
    assert result.comparison.speedup > 1.5


@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_precisions_run_on_the_gpu(run, precision):
    result = run("dataset=cora", "train.device=cuda", f"train.precision={precision}",
                 "compile=true")
    assert result.status == "ok", result.reason
    assert 0.77 <= result.accuracy.test_at_best_val <= 0.85


@pytest.mark.parametrize("model", ["gcn", "sage"])
def test_captured_whole_epoch_trains_like_its_eager_twin(run, model):
    """variant=whole-epoch on CUDA: two captured graphs an epoch (the step; the eval with its
    metrics), one copy of the metrics; it learns what its eager twin learns."""
    result = run("dataset=cora", f"model={model}", "train.device=cuda", "variant=whole-epoch",
                 "train.paired=true")
    assert result.status == "ok", result.reason
    assert result.cuda_graphs == "whole epoch"
    assert 0.78 <= result.accuracy.test_at_best_val <= 0.84
    assert abs(result.comparison.test_acc_delta) <= 0.02
    losses = [r.loss for r in result.epochs]
    assert losses[-1] < 0.5 * losses[4]  # replays train
