"""The OGB presets through the runner: ogb's real loader and Evaluator on a small dataset
written in OGB's raw layout into a read-only mirror (no network, no prompt)."""

from __future__ import annotations

import pytest
import torch
from support.fs import read_only
from support.ogb_layout import write_ogb_raw

from gnnbench.data.synthetic import generate_graph, random_split


@pytest.fixture(scope="module")
def ogb_mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("ogb-mirror")
    for name, features, classes in (("ogbn-arxiv", 128, 40), ("ogbn-products", 100, 47)):
        graph = generate_graph(600, 3000, features, classes, homophily=0.9,
                               feature_signal=3.0, power_law=2.5, seed=1)
        edge_index = graph["edge_index"]
        if name == "ogbn-arxiv":  # stored directed, as OGB stores citations
            edge_index = edge_index[:, edge_index[0] < edge_index[1]]
        write_ogb_raw(root, name, graph["x"], graph["y"], edge_index,
                      random_split(600, 0.5, 0.2, seed=1))
    with read_only(root):  # root cannot write it either
        yield root


def test_arxiv_preset_runs_through_ogb(run, ogb_mirror, tmp_path):
    result = run("experiment=arxiv-gcn", f"data_mirror={ogb_mirror}",
                 f"data_dir={tmp_path / 'cache'}", "train.epochs=20", "train.warmup_epochs=2",
                 "wandb.mode=disabled")
    assert result.status == "ok", result.reason
    info = result.dataset
    assert info.source == "ogb" and info.eval_metric == "acc" and info.undirected
    assert info.num_nodes == 600 and info.num_classes == 40
    assert info.split_sizes.model_dump() == {"train": 300, "val": 120, "test": 180}
    cfg = result.config
    assert (cfg.model.num_layers, cfg.model.hidden, cfg.train.epochs) == \
        (3, 256, 20)
    assert result.accuracy.test_at_best_val > 0.5  # chance is 1/40


@pytest.mark.slow
def test_products_preset_minibatch_with_compile(run, ogb_mirror, tmp_path):
    result = run("experiment=products-sage", f"data_mirror={ogb_mirror}",
                 f"data_dir={tmp_path / 'cache'}", "train.epochs=3", "train.warmup_epochs=1",
                 "train.batch_size=128", "compile=true", "wandb.mode=disabled")
    assert result.status == "ok", result.reason
    assert result.batching.fanouts == [15, 10, 5]
    assert result.batching.batches_per_epoch == 3  # 300 training nodes
    assert result.dataset.num_classes == 47
    assert all(r.recompiles_this_epoch == 0 for r in result.epochs[1:])
    assert torch.isfinite(torch.tensor([r.loss for r in result.epochs])).all()
