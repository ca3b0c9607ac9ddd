"""Published accuracies on Cora's public split, eager and compiled (real data, CPU)."""

import pytest

pytestmark = pytest.mark.slow




def test_gcn_cora_eager_in_published_band(run):
    result = run("model=gcn", "dataset=cora")
    assert result["status"] == "ok"
    # Kipf & Welling: 81.5 ± 0.6 (200 epochs, one seed).
    assert 0.79 <= result["accuracy"]["test_at_best_val"] <= 0.84
    assert len(result["epochs"]) == 200


def test_sage_cora_eager(run):
    result = run("model=sage", "dataset=cora")
    assert result["status"] == "ok"
    assert result["accuracy"]["test_at_best_val"] >= 0.77


@pytest.mark.parametrize("model", ["gcn", "sage"])
def test_compiled_matches_eager(run, model):
    eager = run(f"model={model}", "dataset=cora")
    compiled = run(f"model={model}", "dataset=cora", "compile=true")
    assert compiled["status"] == "ok", compiled["reason"]
    gap = abs(compiled["accuracy"]["test_at_best_val"] - eager["accuracy"]["test_at_best_val"])
    assert gap <= 0.02
    assert compiled["timing"]["compile_overhead_s"] > 0
    assert eager["timing"]["compile_overhead_s"] is None
    dynamo = compiled["compile"]
    assert dynamo["graphs"] >= 1 and dynamo["graph_breaks"] == 0
    assert eager["compile"] is None


def test_synthetic_default_is_learnable(run):
    """The offline default dataset: a 2-layer GCN must beat chance (1/7) by a wide margin."""
    result = run()
    assert result["config"]["dataset"]["name"] == "synthetic"
    assert result["status"] == "ok"
    assert result["accuracy"]["test_at_best_val"] >= 0.6
