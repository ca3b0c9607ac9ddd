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
