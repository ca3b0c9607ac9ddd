"""PyG's stock models (model=pyg-gcn, pyg-sage, pyg-gat, pyg-gin, pyg-edgecnn: the
torch_geometric.nn.models classes TorchBench's basic_gnn benchmarks measure) train eager
and compiled on Cora with gnnbench's set-ups, and learn what the papers report (real data,
CPU, 200 epochs: Kipf & Welling's and Veličković et al.'s schedule)."""

import statistics

import pytest
from conftest import make_config

from gnnbench.runner import run_experiment

pytestmark = pytest.mark.slow
MODELS = ["pyg-gcn", "pyg-sage", "pyg-gat", "pyg-gin", "pyg-edgecnn"]
# Published Cora test accuracy ± 1 point: GCN 81.5 (Kipf & Welling), GAT 83.0 (Veličković
# et al.); the others have no published Cora figure in their set-up here, and are held to
# 0.70. PyG's GAT class gives its output layer as many heads as its hidden ones (8, averaged;
# the paper's Cora model has one): ten seeds on an H200 average 81.9, so its band is
# 83.0 ± 1.5 (results/h200-own-gnn/setups-gat.txt). EdgeConv, a point-cloud layer, does not
# learn Cora in any of 33 set-ups (best 0.573, setups-edgecnn.txt), and its CPU epochs are
# the slowest (an MLP on every edge's two 1,433-word vectors): here it is held to training,
# eager and compiled, its loss falling alike over a dozen epochs.
BANDS = {"pyg-gcn": (0.805, 0.825), "pyg-gat": (0.815, 0.845)}
LOSS_ONLY = {"pyg-edgecnn"}
FLOOR = 0.70
# A band is checked on the mean of three seeds (the published figures are means over runs;
# one run of GAT lands anywhere in 81.6-84.4 %, two standard deviations): seed 0 eager and
# compiled where the compiled run has the full schedule, the other seeds eager (the
# compiled twin of seed 0 is held to its eager twin within 0.05 above).
SEEDS = {"pyg-gcn": (0, 1, 2), "pyg-gat": (0, 1, 2)}
# Compiled beside its eager twin (paired: same initial weights), seed 0, over these epochs:
# the full schedule where it is cheap on 2 CPU cores, fewer for the models whose CPU epochs
# are slow (their accuracy is checked eager over the full schedule).
PAIRED_EPOCHS = {"pyg-gat": 60, "pyg-edgecnn": 12}


def _run(tmp_path_factory, data_dir, mirror, model: str, *overrides: str) -> dict:
    cfg = make_config([f"data_dir={data_dir}", f"data_mirror={mirror}", "train.device=cpu",
                       "wandb.mode=disabled", "dataset=cora", f"model={model}", *overrides])
    return run_experiment(cfg, tmp_path_factory.mktemp(model))


@pytest.fixture(scope="module")
def paired(tmp_path_factory, data_dir, mirror):
    """One compiled run with its eager twin per model (same initial weights, interleaved
    epochs), seed 0."""
    cache: dict = {}

    def get(model: str, seed: int = 0) -> dict:
        if (model, seed) not in cache:
            epochs = PAIRED_EPOCHS.get(model, 200)
            cache[model, seed] = _run(tmp_path_factory, data_dir, mirror, model,
                                      "compile=true", "train.paired=true",
                                      f"train.epochs={epochs}", f"train.seed={seed}",
                                      f"train.warmup_epochs={min(10, epochs // 3)}")
        return cache[model, seed]

    return get


@pytest.mark.parametrize("model", MODELS)
def test_trains_eager_and_compiled_on_cora(paired, tmp_path_factory, data_dir, mirror, model):
    result = paired(model)
    assert result.status == "ok", result.reason
    assert len(result.epochs) == PAIRED_EPOCHS.get(model, 200)
    assert result.compile.graph_breaks == 0 and result.compile.graphs >= 1
    assert result.comparison.speedup > 0
    if model in LOSS_ONLY:
        for losses in ([e.eager_loss for e in result.epochs],
                       [e.loss for e in result.epochs]):
            assert losses[-1] < 0.9 * losses[0], losses
        return
    eager = result.paired.accuracy.test_at_best_val
    compiled = result.accuracy.test_at_best_val
    # The compiled model draws other dropout masks (Inductor's own RNG): it learns alike.
    assert abs(compiled - eager) <= 0.05, (compiled, eager)

    low, high = BANDS.get(model, (FLOOR, 1.0))
    if model not in PAIRED_EPOCHS and model not in SEEDS:  # the full schedule, both ways
        assert low <= eager <= high and low <= compiled <= high, (eager, compiled)
        return
    accuracies = []
    for seed in SEEDS.get(model, (0,)):
        if model in PAIRED_EPOCHS:  # the full schedule eager; compiled, a shorter one above
            run = _run(tmp_path_factory, data_dir, mirror, model, f"train.seed={seed}")
            assert run.status == "ok", run.reason
            accuracies.append(run.accuracy.test_at_best_val)
        elif seed == 0:  # the compiled run and its eager twin, checked alike above
            run = paired(model, seed)
            accuracies += [run.paired.accuracy.test_at_best_val,
                           run.accuracy.test_at_best_val]
        else:  # the other seeds eager: a band is a property of the model, compiled or not
            run = _run(tmp_path_factory, data_dir, mirror, model, f"train.seed={seed}")
            assert run.status == "ok", run.reason
            accuracies.append(run.accuracy.test_at_best_val)
    assert low <= statistics.fmean(accuracies) <= high, accuracies


def test_stock_models_are_settings_of_their_own(paired):
    """pyg-gcn beside gcn: two rows of a report, never one another's reference."""
    from omegaconf import OmegaConf

    from gnnbench import config
    from gnnbench.records import identity

    def key(model: str) -> str:
        cfg = config.compose_config([f"model={model}", "dataset=cora"])
        return identity.setting_key(OmegaConf.to_container(cfg, resolve=True), "cpu")

    assert len({key(m) for m in ["gcn", "sage", "gat", "gin", *MODELS]}) == 9
