"""Node classification on a heterogeneous graph shaped like ogbn-mag (dataset=synthetic-
hetero): the graph's types and power-law degrees, to_hetero(GraphSAGE) and the HeteroConv
R-GCN learning paper classes well above chance, and to_hetero(GraphSAGE) compiled with
fullgraph=True (its outcome, whatever it is, recorded)."""

from __future__ import annotations

import pytest
import torch
from conftest import make_config

from gnnbench.data.synthetic_hetero import Options, generate_hetero
from gnnbench.runner import run_experiment

SMALL = ("dataset=synthetic-hetero", "dataset.num_papers=1000", "dataset.num_authors=1500",
         "dataset.num_writes=9000", "dataset.num_cites=7000", "dataset.num_has_topic=10000",
         "train.device=cpu", "wandb.mode=disabled")


def test_the_graph_is_shaped_like_mag():
    cfg = Options(num_papers=2000, num_authors=3000, num_institutions=40, num_fields=200,
                  num_writes=19000, num_cites=15000, num_has_topic=20000,
                  num_affiliated_with=2800, num_features=16, num_classes=8, homophily=0.6,
                  feature_signal=1.0, power_law=2.5, train_fraction=0.6, val_fraction=0.2)
    data = generate_hetero(cfg, torch.device("cpu"))
    assert set(data.node_types) == {"paper", "author", "institution", "field_of_study"}
    assert {r for _, r, _ in data.edge_types} >= {"writes", "cites", "has_topic",
                                                  "affiliated_with", "rev_writes"}
    assert [t for t in data.node_types if "x" in data[t]] == ["paper"]
    cites = torch.bincount(data["paper", "cites", "paper"].edge_index[1], minlength=2000)
    assert cites.max() > 10 * cites.float().median()  # heavy-tailed citations
    writes = data["author", "writes", "paper"].edge_index
    authors, papers = writes
    # homophily: an author's papers share a class far more often than two random papers
    y = data["paper"].y
    first = torch.full((3000,), -1).scatter_reduce(0, authors, papers, "amax")
    same = (y[papers] == y[first[authors]]).float().mean()
    assert same > 0.3 > 1.5 / cfg.num_classes


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("hetero")

    def run(name: str, *overrides: str):
        return run_experiment(make_config([f"data_dir={out / 'data'}", *SMALL, *overrides]),
                              out / name)

    return {"sage": run("sage", "model=sage", "train.epochs=30", "train.warmup_epochs=2"),
            "rgcn": run("rgcn", "model=rgcn", "train.epochs=30", "train.warmup_epochs=2"),
            "compiled": run("compiled", "model=sage", "model.num_layers=1", "compile=true",
                            "train.epochs=3", "train.warmup_epochs=1")}


@pytest.mark.slow
def test_hetero_models_learn_paper_classes(runs):
    for name in ("sage", "rgcn"):
        result = runs[name]
        assert result.status == "ok", result.reason
        chance = result.accuracy.chance
        assert result.accuracy.test_at_best_val > chance + 0.4, (name, result.accuracy)
    info = runs["sage"].dataset
    assert info.level == "hetero" and info.target == "paper"
    assert set(info.num_nodes) == {"paper", "author", "institution", "field_of_study"}


@pytest.mark.slow
def test_to_hetero_sage_compiles_with_fullgraph_or_says_why(runs):
    result = runs["compiled"]
    if result.status != "ok":  # a break or compiler error is an outcome, with its reason
        assert result.status in ("graph_break", "compile_error") and result.reason
        return
    assert result.compile.graph_breaks == 0
    assert result.compile.graphs == 2  # training, and evaluation under no_grad
    assert result.shapes.distinct_shapes == 1 and result.shapes.recompiles_per_epoch[1:] == [0, 0]


def test_models_without_a_heterogeneous_form_are_refused(tmp_path):
    result = run_experiment(make_config([f"data_dir={tmp_path}", *SMALL, "model=gat"]),
                            tmp_path / "run")
    assert result.status == "error" and result.input_error
    assert "model gat has no heterogeneous form" in result.reason and "sage, rgcn" in result.reason


def test_ogbn_mag_loads_through_ogb_from_its_extracted_layout(tmp_path):
    """A small mag-shaped graph written in ogbn-mag's layout (tests/support/ogb_layout.py),
    read by ogb's own loader from data_mirror, trained eagerly for a few epochs."""
    from support.ogb_layout import write_ogbn_mag_raw

    cfg = Options(num_papers=300, num_authors=400, num_institutions=10, num_fields=30,
                  num_writes=1500, num_cites=1000, num_has_topic=1500, num_affiliated_with=300,
                  num_features=8, num_classes=5, homophily=0.6, feature_signal=1.0,
                  power_law=2.5, train_fraction=0.6, val_fraction=0.2)
    data = generate_hetero(cfg, torch.device("cpu"))
    stored = data.edge_type_subgraph([t for t in data.edge_types if not t[1].startswith("rev_")])
    splits = {"train": torch.arange(0, 180), "val": torch.arange(180, 240),
              "test": torch.arange(240, 300)}
    write_ogbn_mag_raw(tmp_path / "mirror", stored, splits)
    result = run_experiment(make_config([
        f"data_dir={tmp_path / 'data'}", f"data_mirror={tmp_path / 'mirror'}",
        "dataset=ogbn-mag", "model=rgcn", "train.epochs=3", "train.warmup_epochs=1",
        "train.device=cpu", "wandb.mode=disabled"]), tmp_path / "run")
    assert result.status == "ok", result.reason
    info = result.dataset
    assert info.source == "ogb" and info.split_sizes.model_dump() == {"train": 180, "val": 60,
                                                                     "test": 60}
    assert info.num_nodes == {"author": 400, "field_of_study": 30, "institution": 10,
                              "paper": 300}
    assert any(k.endswith("rev_writes__author") for k in info.num_edges)  # reverses added
