"""Graph breaks and compiler failures, read from the compiled run itself (Cora, CPU)."""

import pytest

pytestmark = pytest.mark.slow
SHORT = ("dataset=cora", "train.epochs=3", "train.warmup_epochs=1", "compile=true")
# The LSTM aggregator densifies every neighbourhood: keep its inputs small.
LSTM = ("model=sage", "model.aggr=lstm", "dataset=synthetic", "dataset.num_features=16",
        "train.epochs=3", "train.warmup_epochs=1", "compile=true")


def test_layer_normalisation_breaks_the_graph(run):
    """GCNConv's add_remaining_self_loops has a data-dependent shape (nonzero)."""
    result = run("model=gcn", "model.normalize=layer", "compiler.fullgraph=false", *SHORT)
    assert result.status == "ok", result.reason
    dynamo = result.compile
    assert dynamo.graph_breaks > 0
    assert dynamo.graphs > 1
    assert all(r["reason"] and r["count"] >= 1 for r in dynamo.graph_break_reasons)
    assert sum(r["count"] for r in dynamo.graph_break_reasons) == dynamo.graph_breaks
    assert dynamo.recompiles == len(dynamo.recompile_reasons)


def test_precomputed_normalisation_has_no_breaks(run):
    result = run("model=gcn", "model.normalize=precompute", "compiler.fullgraph=false", *SHORT)
    assert result.status == "ok", result.reason
    assert result.compile.graph_breaks == 0
    assert result.compile.graph_break_reasons == []
    # Train (grad) then eval (no_grad): exactly one recompile, and dynamo says why.
    assert result.compile.recompiles >= 1
    assert any("grad_mode" in r for r in result.compile.recompile_reasons)


def test_fullgraph_break_is_recorded_not_raised(run):
    """SAGE's LSTM aggregator branches on data: with fullgraph=True that is an error."""
    result = run(*LSTM, "compiler.fullgraph=true")
    assert result.status == "graph_break"
    assert result.reason and "\n" not in result.reason
    assert result.accuracy is None and result.epochs == []
    assert result.timing.wall_s > 0


def test_same_break_without_fullgraph_is_counted(run):
    result = run(*LSTM, "compiler.fullgraph=false")
    assert result.status == "ok", result.reason
    assert result.compile.graph_breaks > 0
    assert len(result.epochs) == 3


def test_inductor_failure_is_a_compile_error(run):
    """GCNConv(cached=True) normalising in the layer: Inductor fails on the unbacked size
    of the cached edges (also seen on an H200 with torch 2.11)."""
    result = run("model=gcn", "model.normalize=layer", "model.cached=true", *SHORT)
    assert result.status == "compile_error"
    assert "\n" not in result.reason
    assert result.has("traceback")


def test_cuda_graphs_are_observed_not_inferred(run):
    """reduce-overhead asks Inductor for CUDA graphs; on the CPU it skips them, and the run
    says so from Inductor's own counter instead of claiming cudagraph trees."""
    result = run("model=sage", *SHORT, "compiler.mode=reduce-overhead")
    assert result.status == "ok", result.reason
    audit = result.cuda_graph_audit
    assert result.cuda_graphs == audit.used == "none"
    assert audit.inductor_skips >= 1 and audit.inductor_recorded_graphs == 0
    assert not audit.whole_step_captured
    assert any("cpu" in reason for reason in audit.inductor_skip_reasons)


@pytest.mark.parametrize(("mode", "scope", "batching", "device", "expected"), [
    ("reduce-overhead", "model", "full", "cuda", "cudagraph trees"),
    ("max-autotune", "model", "neighbor", "cuda", "cudagraph trees"),
    ("reduce-overhead", "step", "full", "cuda", "whole step"),
    ("max-autotune", "step", "full", "cuda", "whole step"),
    ("reduce-overhead", "step", "neighbor", "cuda", "none"),   # shapes change every batch
    ("default", "step", "full", "cuda", "none"),
    ("max-autotune-no-cudagraphs", "model", "full", "cuda", "none"),
    ("reduce-overhead", "step", "full", "cpu", "none"),
])
def test_which_cuda_graphs_a_setting_runs_under(mode, scope, batching, device, expected):
    import torch
    from omegaconf import OmegaConf

    from gnnbench.training import compilation

    cfg = OmegaConf.create({"mode": mode, "scope": scope})
    assert compilation.requested_cuda_graphs(cfg, torch.device(device), batching) == expected
