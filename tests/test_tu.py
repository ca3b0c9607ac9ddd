"""TU graph-classification datasets through PyG's TUDataset, offline: raw files in TU's own
layout from data_mirror (a small committed fixture: tests/fixtures/tu, written by
tests/support/tu_layout.py), never a download unless allowed."""

from __future__ import annotations

from pathlib import Path

from conftest import make_config

from gnnbench.runner import run_experiment

FIXTURE = Path(__file__).parent / "fixtures" / "tu"
BASE = ("dataset=mutag", "model=gin", "model.input_dropout=0.0", "train.batch_size=16",
        "train.device=cpu", "wandb.mode=disabled")


def test_mutag_loads_from_the_mirror_and_trains_in_graph_batches(tmp_path):
    cfg = make_config([f"data_dir={tmp_path / 'data'}", f"data_mirror={FIXTURE}", *BASE,
                       "train.epochs=8", "train.warmup_epochs=1"])
    result = run_experiment(cfg, tmp_path / "run")
    assert result.status == "ok", result.reason
    info = result.dataset
    assert (info.num_graphs, info.num_features, info.num_classes) == (60, 7, 2)
    assert info.split_sizes.model_dump() == {"train": 48, "val": 6, "test": 6}
    assert info.split == "random" and info.nodes_per_graph["median"] > 6
    assert result.batching.mode == "graphs" and result.batching.batches_per_epoch == 3
    # the raw files were copied from the mirror into the cache, processed there by PyG
    raw = tmp_path / "data/pyg/TUDataset/MUTAG/raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(
        p.name for p in (FIXTURE / "TUDataset/MUTAG/raw").iterdir())
    assert result.epochs[-1].loss < result.epochs[0].loss


def test_without_files_or_mirror_it_is_one_line_naming_what_is_missing(tmp_path):
    cfg = make_config([f"data_dir={tmp_path / 'data'}", "data_mirror=null", *BASE,
                       "train.epochs=2", "train.warmup_epochs=1"])
    result = run_experiment(cfg, tmp_path / "run")
    assert result.status == "error" and result.input_error
    assert "MUTAG/raw/MUTAG_A.txt" in result.reason and "dataset.download=true" in result.reason


def test_ogbg_molhiv_loads_through_ogb_and_is_scored_by_roc_auc(tmp_path):
    """Molecules written in ogbg-molhiv's extracted layout (tests/support/ogb_layout.py:
    gnnbench's synthetic molecules, atom type in OGB's first atom column), read by ogb's own
    loader from data_mirror; the record's accuracies are ogb's ROC-AUC."""
    import torch
    from support.ogb_layout import write_ogbg_raw
    from torch_geometric.data import Data

    from gnnbench.data.synthetic_graphs import generate_graphs

    molecules = []
    for g in generate_graphs(80, 20, 0.3, 6, 40, 7, 0.1, seed=1):
        bonds = g.edge_index[:, g.edge_index[0] < g.edge_index[1]]
        atoms = torch.zeros(g.num_nodes, 9, dtype=torch.long)
        atoms[:, 0] = g.x.argmax(dim=1)
        molecules.append(Data(x=atoms, edge_index=bonds, y=g.y, num_nodes=g.num_nodes,
                              edge_attr=torch.zeros(bonds.size(1), 3, dtype=torch.long)))
    write_ogbg_raw(tmp_path / "mirror", "ogbg-molhiv", molecules,
                   {"train": torch.arange(60), "val": torch.arange(60, 70),
                    "test": torch.arange(70, 80)})
    cfg = make_config([f"data_dir={tmp_path / 'data'}", f"data_mirror={tmp_path / 'mirror'}",
                       "dataset=ogbg-molhiv", "model=gin", "train.batch_size=16",
                       "train.epochs=4", "train.warmup_epochs=1", "train.device=cpu",
                       "wandb.mode=disabled"])
    result = run_experiment(cfg, tmp_path / "run")
    assert result.status == "ok", result.reason
    info = result.dataset
    assert (info.num_graphs, info.num_features, info.metric) == (80, 174, "rocauc")
    assert info.split_sizes.model_dump() == {"train": 60, "val": 10, "test": 10}
    assert result.accuracy.chance == 0.5  # ROC-AUC's chance level, not the majority share
    assert all(0.0 <= e.test_acc <= 1.0 for e in result.epochs)
