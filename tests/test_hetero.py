"""Node classification on a heterogeneous graph shaped like ogbn-mag (dataset=synthetic-
hetero): the graph's types and power-law degrees, to_hetero(GraphSAGE) and the HeteroConv
R-GCN learning paper classes well above chance, and to_hetero(GraphSAGE) compiled with
fullgraph=True (its outcome, whatever it is, recorded)."""

from __future__ import annotations

import pytest
import torch
from conftest import make_config
from torch import Tensor

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


@pytest.mark.parametrize("batching", [(), ("train.batching=neighbor", "train.fanouts=[4,4]",
                                               "train.batch_size=64")])
def test_ogbn_mag_loads_through_ogb_from_its_extracted_layout(tmp_path, batching):
    """A small mag-shaped graph written in ogbn-mag's layout (tests/support/ogb_layout.py),
    read by ogb's own loader from data_mirror, trained eagerly for a few epochs (full batch,
    and in neighbour batches)."""
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
        "train.device=cpu", "wandb.mode=disabled", *batching]), tmp_path / "run")
    assert result.status == "ok", result.reason
    assert result.batching.mode == ("neighbor" if batching else "full")
    info = result.dataset
    assert info.source == "ogb" and info.split_sizes.model_dump() == {"train": 180, "val": 60,
                                                                     "test": 60}
    assert info.num_nodes == {"author": 400, "field_of_study": 30, "institution": 10,
                              "paper": 300}
    assert any(k.endswith("rev_writes__author") for k in info.num_edges)  # reverses added


# --- Neighbour batches (training/hetero_sampler.py) ---------------------------------------

WRITES, CITES, REV = ("author", "writes", "paper"), ("paper", "cites", "paper"), \
    ("paper", "rev_writes", "author")


def tiny_graph() -> tuple[dict, dict]:
    """4 papers, 3 authors: a0, a1 wrote p0; a2 wrote p1; a0 wrote p2; p1 and p2 cite p0,
    p3 cites p1; rev_writes reverses writes."""
    writes = torch.tensor([[0, 1, 2, 0], [0, 0, 1, 2]])
    return ({WRITES: writes, CITES: torch.tensor([[1, 2, 3], [0, 0, 1]]),
             REV: writes.flip(0)}, {"paper": 4, "author": 3})


def edges_of(batch, et) -> list[tuple[int, int]]:
    src, _, dst = et
    row, col = batch.edge_index[et]
    return list(zip(batch.n_id[src][row].tolist(), batch.n_id[dst][col].tolist(), strict=True))


def test_typed_sampler_takes_every_relation_hop_by_hop_by_hand():
    from gnnbench.training.hetero_sampler import sample_hetero, typed_csr

    edge_index, num_nodes = tiny_graph()
    batch = sample_hetero(typed_csr(edge_index, num_nodes), ["paper", "author"], "paper",
                          torch.tensor([0]), [-1, -1])
    # hop 1 from p0: authors a0, a1 (writes), papers p1, p2 (cites); hop 2 from p1, p2 and
    # a0, a1: a2 (writes p1), p3 (cites p1), and p0, p2 (rev_writes: already there)
    assert batch.n_id["paper"].tolist() == [0, 1, 2, 3]
    assert batch.n_id["author"].tolist() == [0, 1, 2]
    assert batch.num_sampled_nodes == {"paper": [1, 2, 1], "author": [0, 2, 1]}
    assert batch.num_sampled_edges == {WRITES: [2, 2], CITES: [2, 1], REV: [0, 3]}
    assert edges_of(batch, WRITES) == [(0, 0), (1, 0), (2, 1), (0, 2)]
    assert edges_of(batch, CITES) == [(1, 0), (2, 0), (3, 1)]
    assert edges_of(batch, REV) == [(0, 0), (2, 0), (0, 1)]  # a2 was reached last: no hop 3
    for et, ids in batch.e_id.items():  # e_id: the sampled columns of the full edge_index
        assert [tuple(edge_index[et][:, i].tolist()) for i in ids] == edges_of(batch, et)
    assert batch.shape() == (7, 10, 4, 3, 4, 3, 3)
    one = sample_hetero(typed_csr(edge_index, num_nodes), ["paper", "author"], "paper",
                        torch.tensor([0]), [1])  # fan-out 1 per relation: one author, one paper
    assert one.num_sampled_edges == {WRITES: [1], CITES: [1], REV: [0]}
    assert one.num_sampled_nodes == {"paper": [1, 1], "author": [0, 1]}


def small_typed_graph():
    cfg = Options(num_papers=400, num_authors=600, num_institutions=10, num_fields=40,
                  num_writes=3000, num_cites=2500, num_has_topic=3000,
                  num_affiliated_with=500, num_features=4, num_classes=4, homophily=0.6,
                  feature_signal=1.0, power_law=2.5, train_fraction=0.6, val_fraction=0.2)
    return generate_hetero(cfg, torch.device("cpu"))


def test_typed_batches_are_subgraphs_with_seeds_first_and_fanouts_kept():
    from gnnbench.training.hetero_sampler import HeteroNeighborSampler, typed_csr

    data = small_typed_graph()
    edges = {et: set(map(tuple, data[et].edge_index.t().tolist())) for et in data.edge_types}
    num_nodes = {t: data[t].num_nodes for t in data.node_types}
    graphs = typed_csr({et: data[et].edge_index for et in data.edge_types}, num_nodes)
    seeds = torch.arange(0, 400, 3)
    fanouts = [3, 2]
    sampler = HeteroNeighborSampler(graphs, data.node_types, "paper", seeds, fanouts, 32)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 5
    assert torch.equal(torch.cat([b.n_id["paper"][: b.batch_size] for b in batches]), seeds)
    for b in batches:
        for t, ids in b.n_id.items():
            assert ids.unique().numel() == ids.numel() == sum(b.num_sampled_nodes[t])
        for et in data.edge_types:
            src, _, dst = et
            row, col = b.edge_index[et]
            assert (row < b.n_id[src].numel()).all() and (col < b.n_id[dst].numel()).all()
            assert set(edges_of(b, et)) <= edges[et]
            # per relation: a node reached at hop h has at most fanouts[h] sampled in-edges
            # of that relation, and exactly min(degree, fan-out)
            first = torch.tensor(b.num_sampled_nodes[dst]).cumsum(0).tolist()
            got = torch.bincount(col, minlength=b.n_id[dst].numel())
            deg = graphs[et].rowptr.diff()[b.n_id[dst]]
            for hop, k in enumerate(fanouts):
                lo = first[hop - 1] if hop else 0
                assert torch.equal(got[lo:first[hop]], deg[lo:first[hop]].clamp(max=k))
    assert all(b.num_sampled_nodes["institution"][-1] > 0 for b in batches)  # 2 hops away

    def run(seed: int) -> list[Tensor]:
        return [t for b in HeteroNeighborSampler(graphs, data.node_types, "paper", seeds,
                                                 fanouts, 32, shuffle=True, seed=seed)
                for t in (*b.n_id.values(), *b.edge_index.values())]

    def same(a: list[Tensor], b: list[Tensor]) -> bool:
        return len(a) == len(b) and all(x.shape == y.shape and torch.equal(x, y)
                                        for x, y in zip(a, b, strict=True))

    assert same(run(0), run(0)) and not same(run(0), run(1))


NEIGHBOR = ("model=sage", "model.num_layers=2", "train.batching=neighbor",
            "train.fanouts=[5,5]", "train.batch_size=200")


@pytest.mark.parametrize(("override", "words"), [
    ("train.sampler=pyg", "choose one of: auto, gnnbench"),
    ("train.pad_batches=true", "train.pad_batches=true is not supported"),
    ("train.prefetch=true", "train.prefetch=true is not supported"),
    ("train.shape_policy=buckets", "choose exact"),
    ("graph.layout=csr", "graph.layout=csr"),
])
def test_bad_hetero_neighbour_settings_are_one_line_errors(tmp_path, override, words):
    result = run_experiment(make_config([f"data_dir={tmp_path}", *SMALL, *NEIGHBOR, override]),
                            tmp_path / "run")
    assert result.status == "error" and result.input_error, result.reason
    assert words in result.reason and "\n" not in result.reason


def test_sage_learns_paper_classes_in_neighbour_batches(tmp_path):
    result = run_experiment(make_config([f"data_dir={tmp_path}", *SMALL, *NEIGHBOR,
                                         "train.epochs=4", "train.warmup_epochs=1"]),
                            tmp_path / "run")
    assert result.status == "ok", result.reason
    batching = result.batching
    assert (batching.mode, batching.sampler, batching.fanouts, batching.batch_size,
            batching.batches_per_epoch) == ("neighbor", "gnnbench", [5, 5], 200, 3)
    assert result.accuracy.test_at_best_val > result.accuracy.chance + 0.3, result.accuracy
    # 3 batches an epoch, each its own shape, and the full graph's for evaluation
    assert result.shapes.calls == 4 * 4 and result.shapes.distinct_shapes > 3
    assert all(e.batches == 3 and e.sample_s > 0 for e in result.epochs)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["sage", "rgcn"])
def test_compiled_neighbour_batches_meet_many_shapes_without_breaks(tmp_path, model):
    result = run_experiment(make_config([
        f"data_dir={tmp_path}", *SMALL, *NEIGHBOR, f"model={model}", "compile=true",
        "train.epochs=2", "train.warmup_epochs=1"]), tmp_path / "run")
    if result.status != "ok":  # a break or compiler error is an outcome, with its reason
        assert result.status in ("graph_break", "compile_error") and result.reason
        pytest.fail(f"{model}: {result.status}: {result.reason}")
    assert result.compile.graph_breaks == 0
    assert result.shapes.distinct_shapes > 1 and result.shapes.recompiles_per_epoch is not None
    assert result.accuracy.test_at_best_val > result.accuracy.chance


def test_neighbour_batch_runs_replay_for_a_seed(tmp_path):
    def losses(seed: int, name: str) -> list[float]:
        result = run_experiment(make_config([
            f"data_dir={tmp_path}", *SMALL, *NEIGHBOR, "train.epochs=2",
            "train.warmup_epochs=1", f"train.seed={seed}"]), tmp_path / name)
        assert result.status == "ok", result.reason
        return [e.loss for e in result.epochs]

    assert losses(0, "a") == losses(0, "b") != losses(1, "c")
