"""What compiling costs, by the cache state a run starts with (compiler.cache) and by what
is compiled (compiler.scope=layers, nested): real Inductor, real cache directories, a real priming
run in another process and torch.compiler's real portable artifacts, on a tiny Cora SAGE.
One module fixture makes the runs; the tests read their records."""

from __future__ import annotations

import pytest
from conftest import make_config

from gnnbench.records import store
from gnnbench.report import compile_cost
from gnnbench.report.cli import write_report
from gnnbench.runner import run_experiment

# No dropout: Inductor draws its own random numbers inside a compiled graph, eager ones
# outside it, so with dropout the model and layer scopes would train on different masks.
TINY = ["model=sage", "dataset=cora", "model.hidden=8", "model.dropout=0.0",
        "model.input_dropout=0.0", "train.epochs=10", "train.warmup_epochs=2", "train.lr=0.05",
        "compile=true"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir, mirror):
    """cold, warm, portable (the same setting, one priming shared by the last two),
    scope=layers and scope=nested from a cold cache and the eager reference, each in this
    process."""
    root = tmp_path_factory.mktemp("compile-cost")
    out = {"root": root}
    for name, extra in (("cold", ["compiler.cache=cold"]), ("warm", ["compiler.cache=warm"]),
                        ("portable", ["compiler.cache=portable"]),
                        ("layers", ["compiler.cache=cold", "compiler.scope=layers"]),
                        ("nested", ["compiler.cache=cold", "compiler.scope=nested"]),
                        ("eager", ["compile=false"])):
        cfg = make_config([f"data_dir={data_dir}", f"data_mirror={mirror}", "train.device=cpu",
                           "wandb.mode=disabled", *TINY, *extra])
        record = run_experiment(cfg, root / name)
        assert record.status == "ok", (name, record.reason)
        out[name] = store.read(root / name / store.RESULTS_FILE)  # as a reader sees it
    return out


@pytest.mark.slow
def test_cold_cache_compiles_longer_than_warm(runs):
    cold, warm = runs["cold"].compile, runs["warm"].compile
    assert cold.cache["fxgraph_hits"] == 0 and cold.cache["fxgraph_misses"] > 0
    assert warm.cache["fxgraph_misses"] == 0 and warm.cache["fxgraph_hits"] > 0
    assert cold.times.total_s > 2 * warm.times.total_s
    # Inductor proper ran only where nothing was cached.
    assert cold.times.inductor_s > 0 and warm.times.inductor_s == 0
    assert runs["cold"].timing.compile_overhead_s > runs["warm"].timing.compile_overhead_s
    # The priming ran in another process: its compile is its own, not in this run's time.
    assert warm.cache_setup.prime_compile_s > warm.times.total_s
    assert runs["warm"].timing.wall_s < warm.cache_setup.setup_s


@pytest.mark.slow
def test_portable_artifacts_fill_an_empty_cache(runs):
    portable = runs["portable"].compile
    setup = portable.cache_setup
    assert setup.state == "portable" and setup.artifacts_bytes > 0
    assert setup.artifacts_loaded["inductor"] > 0
    assert portable.cache["fxgraph_hits"] > 0 and portable.cache["fxgraph_misses"] == 0
    # warm primed the setting; portable used that priming's artifacts.
    assert runs["warm"].compile.cache_setup.primed_now is True and setup.primed_now is False
    assert portable.times.total_s < runs["cold"].compile.times.total_s
    assert "cache=portable" in runs["portable"].name


@pytest.mark.slow
def test_layer_scope_compiles_each_layer_and_learns_the_same(runs):
    layers, model = runs["layers"], runs["cold"]
    assert layers.compile.regions == 2
    assert layers.compile.graphs >= 2  # two layers of different shapes: two graphs at least
    assert not layers.accuracy.near_chance
    assert layers.accuracy.test_at_best_val == pytest.approx(model.accuracy.test_at_best_val,
                                                             abs=0.01)
    assert layers.epochs[-1].loss == pytest.approx(model.epochs[-1].loss, rel=1e-3)


@pytest.mark.slow
def test_nested_scope_is_one_graph_of_regions_and_learns_the_same(runs):
    nested, model = runs["nested"], runs["cold"]
    assert nested.compile.regions == 2 and nested.compile.graph_breaks == 0
    assert not nested.accuracy.near_chance
    assert nested.accuracy.test_at_best_val == pytest.approx(model.accuracy.test_at_best_val,
                                                             abs=0.01)
    assert nested.epochs[-1].loss == pytest.approx(model.epochs[-1].loss, rel=1e-3)


@pytest.mark.slow
def test_nested_regions_of_a_deep_model_keep_each_layers_own_weights():
    """The middle layers of one class and shape share one region: each must still use its
    own weights, training and evaluating (a region marked on bound methods reused the first
    layer's: outputs off by 100)."""
    import torch

    from gnnbench import models
    from gnnbench.training import compilation

    cfg = make_config(["model=sage", "model.num_layers=4", "model.hidden=16",
                       "model.dropout=0.0", "model.input_dropout=0.0", "compile=true",
                       "compiler.scope=nested"])
    torch.manual_seed(0)
    model = models.build_model(cfg.model, 32, 7)
    x, edges = torch.randn(50, 32), torch.randint(0, 50, (2, 200))
    expected = model(x, edges)
    compiled, regions = compilation.compile_nested(model, cfg.compiler)
    assert regions == 4 and type(model.convs[1]).__name__ == "SAGEConvRegion"
    assert torch.allclose(compiled(x, edges), expected, atol=1e-5)
    model.eval()
    with torch.no_grad():
        assert torch.allclose(compiled(x, edges), expected, atol=1e-5)


def test_bad_cache_and_scope_values_are_one_line(run):
    bad = run("compile=true", "compiler.cache=hot")
    assert bad.input_error and bad.reason == (
        "compiler.cache='hot' is not valid; choose one of: as-is, cold, warm, portable")
    foreign = run("model=pyg-sage", "compile=true", "compiler.scope=layers")
    assert foreign.input_error and "compiler.scope=layers" in foreign.reason
    assert "choose one of: model, step" in foreign.reason


@pytest.mark.slow
def test_report_shows_compile_cost_per_cache_state_and_cumulative_time(runs):
    rows = write_report([runs["root"]], log_to_wandb=False)
    assert {r.variant for r in rows} == {
        "eager", "compile-default cache=cold", "compile-default cache=warm",
        "compile-default cache=portable", "compile-default layers cache=cold",
        "compile-default nested cache=cold"}
    markdown = (runs["root"] / "report.md").read_text()
    section = markdown.split("## Compile cost by cache state", 1)[1].split("\n## ", 1)[0]
    lines = {line.split(" | ")[1]: line for line in section.splitlines()
             if line.startswith("| sage/cora")}
    assert len(lines) == 5
    cold = runs["cold"].compile.times.total_s
    assert f"| 0/{runs['cold'].compile.cache['fxgraph_misses']} | {cold:.2f} |" in \
        lines["compile-default cache=cold"]
    drawn = compile_cost.cumulative_plot(rows, [runs[k] for k in runs if k != "root"],
                                         runs["root"] / "cumulative_time.png")
    assert drawn["lines"][0] == "sage/cora eager" and len(drawn["lines"]) == 6
    assert (runs["root"] / "cumulative_time.png").stat().st_size > 0


def test_deep_preset_is_a_residual_twelve_layer_sage_on_the_arxiv_size_graph():
    import torch

    from gnnbench import models
    from gnnbench.runner import validate

    cfg = make_config(["experiment=deep-sage", "train.device=cpu", "compile=true",
                       "compiler.scope=layers", "train.batching=neighbor"])
    validate(cfg)  # neighbour batching: one fan-out per layer
    assert cfg.dataset.name == "synthetic-arxiv"
    model = models.build_model(cfg.model, 16, 4).eval()
    assert len(model.convs) == 12 and model.residual
    x, edges = torch.randn(30, 16), torch.randint(0, 30, (2, 90))
    plain = models.build_model(make_config(["experiment=deep-sage", "model.residual=false"]).model,
                               16, 4).eval()
    plain.load_state_dict(model.state_dict())
    with torch.no_grad():  # the same weights: only the skip connections differ
        assert not torch.allclose(model(x, edges), plain(x, edges))
