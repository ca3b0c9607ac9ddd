"""Published accuracies on Cora's public split, eager and compiled (real data, CPU)."""

import pytest
from conftest import make_config

from gnnbench.records.model import Record
from gnnbench.runner import run_experiment

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cora(tmp_path_factory, data_dir, mirror):
    """One 200-epoch Cora run per (model, compile), shared by the tests below."""
    cache: dict = {}

    def get(model: str, compiled: bool) -> Record:
        if (model, compiled) not in cache:
            cfg = make_config([f"data_dir={data_dir}", f"data_mirror={mirror}",
                               "train.device=cpu", "wandb.mode=disabled", "dataset=cora",
                               f"model={model}", f"compile={str(compiled).lower()}"])
            cache[model, compiled] = run_experiment(cfg, tmp_path_factory.mktemp(model))
        return cache[model, compiled]

    return get


def test_gcn_cora_eager_in_published_band(cora):
    result = cora("gcn", False)
    assert result.status == "ok"
    # Kipf & Welling: 81.5 ± 0.6 (200 epochs, one seed).
    assert 0.79 <= result.accuracy.test_at_best_val <= 0.84
    assert len(result.epochs) == 200


def test_sage_cora_eager(cora):
    result = cora("sage", False)
    assert result.status == "ok"
    assert result.accuracy.test_at_best_val >= 0.77


@pytest.mark.parametrize("model", ["gcn", "sage"])
def test_compiled_matches_eager(cora, model):
    eager, compiled = cora(model, False), cora(model, True)
    assert compiled.status == "ok", compiled.reason
    gap = abs(compiled.accuracy.test_at_best_val - eager.accuracy.test_at_best_val)
    assert gap <= 0.02
    assert compiled.timing.compile_overhead_s > 0
    assert eager.timing.compile_overhead_s is None
    dynamo = compiled.compile
    assert dynamo.graphs >= 1 and dynamo.graph_breaks == 0
    assert eager.compile is None


def test_synthetic_default_is_learnable(run):
    """The offline default dataset: a 2-layer GCN must beat chance (1/7) by a wide margin."""
    result = run("wandb.mode=disabled")
    assert result.config.dataset.name == "synthetic"
    assert result.status == "ok"
    assert result.accuracy.test_at_best_val >= 0.6


def test_whole_step_compile_learns_like_its_eager_twin(run):
    """compiler.scope=step: forward+loss and the optimizer step compiled (CPU path)."""
    result = run("model=sage", "compile=true", "compiler.scope=step", "train.paired=true",
                 "train.epochs=60", "train.warmup_epochs=5")
    assert result.status == "ok", result.reason
    assert result.name == "sage-synthetic-compile-default-step-paired-s0"
    # The compiled optimizer step ran: torch.optim's own two graph_break() calls show.
    reasons = result.compile.graph_break_reasons
    assert result.compile.graph_breaks == 2 and all("graph_break()" in r["reason"]
                                                            for r in reasons)
    assert abs(result.comparison.test_acc_delta) <= 0.05
    assert result.accuracy.test_at_best_val >= 0.6
    assert result.timing.compile_overhead_s > 0
