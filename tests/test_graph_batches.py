"""Graph classification in batches of whole graphs (dataset=synthetic-graphs): the data's
size spread and a label that sizes do not give away, GIN learning it well above chance and
above a node-count-only classifier, and what each shape policy costs a compiled model
(recompilations, the recompile limit, buckets) as its record says."""

from __future__ import annotations

import pytest
import torch
from conftest import make_config

from gnnbench.data.synthetic_graphs import generate_graphs, random_split
from gnnbench.records import store
from gnnbench.report.markdown import shapes_markdown
from gnnbench.report.rows import build_rows, columns
from gnnbench.report.summary import format_summary
from gnnbench.runner import run_experiment

# 400 graphs (320 train in 5 batches of 64, 40 val and 40 test in one batch each); GIN
# without input dropout (one-hot atom types: dropping them hides the motif).
SMALL = ("model=gin", "dataset=synthetic-graphs", "dataset.num_graphs=400",
         "train.batch_size=64", "model.input_dropout=0.0", "train.device=cpu",
         "wandb.mode=disabled")
GRAPHS = dict(num_graphs=400, median_nodes=25, size_sigma=0.5, min_nodes=6, max_nodes=250,
              num_features=9, ring_fraction=0.1, seed=0)


def size_baseline(graphs: list, splits: dict) -> float:
    """The best single node-count threshold (either direction) on the training graphs,
    scored on the test graphs: what a model that only counts nodes could do."""
    n = torch.tensor([g.num_nodes for g in graphs], dtype=torch.float)
    y = torch.cat([g.y for g in graphs])
    tr, te = splits["train"], splits["test"]
    best, rule = -1.0, (0.0, True)
    for t in n[tr].unique().tolist():
        for above in (True, False):
            acc = (((n[tr] > t) if above else (n[tr] <= t)).long() == y[tr]).float().mean()
            if acc > best:
                best, rule = float(acc), (t, above)
    t, above = rule
    return float((((n[te] > t) if above else (n[te] <= t)).long() == y[te]).float().mean())


def chance(graphs: list, idx: torch.Tensor) -> float:
    return torch.bincount(torch.cat([graphs[i].y for i in idx.tolist()])).max().item() / len(idx)


def test_sizes_spread_like_molhiv_and_do_not_give_the_label_away():
    graphs = generate_graphs(**{**GRAPHS, "num_graphs": 4000})
    sizes = torch.tensor([g.num_nodes for g in graphs], dtype=torch.float)
    assert 22 <= sizes.median() <= 28  # ogbg-molhiv: median ~23-25 atoms
    assert sizes.max() > 100 and (sizes > 100).sum() < 40  # a long tail, a thin one
    degree = sum(g.edge_index.size(1) for g in graphs) / sizes.sum()
    assert 1.9 < degree < 2.6  # molecule-like bonds per atom
    labels = torch.cat([g.y for g in graphs]).float()
    assert 0.45 < labels.mean() < 0.55
    splits = random_split(4000, 0.8, 0.1, 0)
    assert size_baseline(graphs, splits) < 0.57  # counting nodes is a coin toss


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """One eager GIN run and two compiled dynamic=False runs, exact shapes and buckets."""
    out = tmp_path_factory.mktemp("graph-batches")
    data_dir = out / "data"

    def run(name: str, *overrides: str):
        cfg = make_config([f"data_dir={data_dir}", *SMALL, *overrides])
        return run_experiment(cfg, out / name)

    found = {"eager": run("eager", "train.epochs=40", "train.warmup_epochs=2")}
    # Exact batches under static shapes: a new shape every batch. Dynamo's limit of compiled
    # versions per function is lowered from 8 to 2 so that the test compiles 2 graphs, not 8.
    import torch._dynamo

    saved = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = 2
    try:
        found["exact"] = run("exact", "compile=true", "compiler.dynamic=false",
                             "train.epochs=2", "train.warmup_epochs=1")
    finally:
        torch._dynamo.config.recompile_limit = saved
    found["buckets"] = run("buckets", "compile=true", "compiler.dynamic=false",
                           "train.shape_policy=buckets", "train.epochs=40",
                           "train.warmup_epochs=2")
    return found


@pytest.mark.slow
def test_gin_learns_the_motif_well_above_chance_and_node_counts(runs):
    graphs = generate_graphs(**GRAPHS)
    splits = random_split(400, 0.8, 0.1, 0)
    floor = max(chance(graphs, splits["test"]), size_baseline(graphs, splits))
    for name in ("eager", "buckets"):
        result = runs[name]
        assert result.status == "ok", result.reason
        acc = result.accuracy.test_at_best_val
        assert acc >= floor + 0.2, (name, acc, floor)
    record = runs["eager"]
    assert record.batching.mode == "graphs" and record.batching.batches_per_epoch == 5
    assert record.dataset.num_graphs == 400
    assert record.dataset.size_only_test_acc < floor + 0.05  # recorded, and as poor
    shapes = record.shapes
    assert shapes.policy == "exact" and shapes.padding_share == 0
    # every training batch (5 an epoch, shuffled) and the two eval batches: shapes vary
    assert shapes.distinct_shapes > 20 and shapes.recompiles_per_epoch is None


@pytest.mark.slow
def test_static_shapes_on_exact_batches_hit_the_recompile_limit_and_say_so(runs):
    result = runs["exact"]
    assert result.status == "compile_error"
    assert "recompile limit" in result.reason
    shapes = result.shapes
    assert shapes.recompile_limit_hit is True and shapes.recompile_limit == 2
    assert "size mismatch" in shapes.recompile_limit_hits[0]
    assert result.compile.recompiles >= 1 and shapes.recompiles_per_epoch[0] >= 1
    assert shapes.distinct_shapes == shapes.calls == 3  # the third shape failed the run
    assert "dynamo's recompile limit (2) was hit" in format_summary(result)


@pytest.mark.slow
def test_buckets_compile_once_per_bucket(runs):
    result = runs["buckets"]
    shapes, dynamo = result.shapes, result.compile
    assert shapes.policy == "buckets" and not shapes.recompile_limit_hit
    # at most one compiled graph per bucket and grad mode (training, no_grad evaluation)
    assert dynamo.graphs <= shapes.distinct_shape_modes <= 2 * shapes.distinct_shapes
    assert shapes.distinct_shapes <= shapes.buckets < 10
    # the ladder bounds the shapes: the run's limit covers every rung, train and eval
    assert shapes.recompile_limit == max(8, 2 * (shapes.buckets + 1))
    assert dynamo.recompiles == sum(shapes.recompiles_per_epoch) == dynamo.graphs - 1
    assert 0 < shapes.padding_share < 0.5
    assert all(isinstance(s, list) and len(s) == 2 for s in result.batching.buckets)


@pytest.mark.slow
def test_report_shows_the_shape_columns(runs):
    rows = build_rows(list(runs.values()))
    by_variant = {(r.variant, r.shape_policy): r for r in rows}
    exact = by_variant[("compile-default dynamic=False", "exact")]
    assert exact.recompile_limit_hits == 1 and exact.status == "compile_error"
    buckets = by_variant[("compile-default dynamic=False", "buckets")]
    assert buckets.padding_share == pytest.approx(runs["buckets"].shapes.padding_share)
    assert "shape_policy" in columns(rows) and "(buckets)" in shapes_markdown(rows)


def test_a_ladder_raises_the_recompile_limit_for_its_run_only():
    from gnnbench.training import compilation

    before = compilation.recompile_limit()
    with compilation.recompile_limit_at_least(before + 10):
        assert compilation.recompile_limit() == before + 10
    assert compilation.recompile_limit() == before
    with compilation.recompile_limit_at_least(1), compilation.recompile_limit_at_least(None):
        assert compilation.recompile_limit() == before  # never lowered


def test_prefetching_collates_in_workers_and_trains_the_same_batches(tmp_path):
    """train.prefetch=true: the training batches come from DataLoader worker processes, in
    the order of the same seeded sampler, so eager training is the same epoch for epoch."""
    def run(name: str, *overrides: str):
        cfg = make_config([f"data_dir={tmp_path / 'data'}", *SMALL, "dataset.num_graphs=200",
                           "train.epochs=2", "train.warmup_epochs=1", *overrides])
        result = run_experiment(cfg, tmp_path / name)
        assert result.status == "ok", result.reason
        return result

    plain, ahead = run("plain"), run("ahead", "train.prefetch=true")
    assert ahead.batching.get("prefetch") is True and ahead.batching.get("loader_workers") >= 1
    assert plain.batching.get("loader_workers") == 0
    assert [e.loss for e in ahead.epochs] == pytest.approx([e.loss for e in plain.epochs],
                                                           rel=1e-6)
    assert "prefetching worker(s)" in format_summary(ahead)


@pytest.mark.slow
def test_sigterm_to_the_process_group_stops_a_prefetching_run_cleanly(tmp_path):
    """SIGTERM sent to the whole process group (as `timeout`, SLURM or a terminal's Ctrl-C
    send it) reaches the loader's worker processes too: they leave it to the run, which
    saves an interrupted record and exits 143 without a worker's error, and no worker
    outlives it."""
    import os
    import signal
    import time

    from support.processes import start, wait_for_line

    proc = start([*SMALL, f"data_dir={tmp_path / 'data'}", "train.prefetch=true",
                  "train.epochs=300", "train.warmup_epochs=1"], tmp_path,
                 start_new_session=True)
    wait_for_line(proc.stderr, "epoch 1/300")
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "DataLoader worker" not in err
    [path] = (tmp_path / "outputs").rglob("results.json")
    record = store.read(path)
    assert record.status == "interrupted" and "SIGTERM" in record.reason
    assert record.batching.get("loader_workers") >= 1 and len(record.epochs) >= 1
    deadline = time.monotonic() + 15
    while _alive_in_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive_in_group(proc.pid), "a loader worker outlived its run"


def _alive_in_group(pgid: int) -> bool:
    """Whether any process of the group still runs (zombies aside)."""
    from pathlib import Path

    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
