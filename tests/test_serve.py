"""`python -m gnnbench.serve`: a tiny Cora SAGE answering sampled-neighbourhood requests,
eager and compiled, through the same entry a user types (in this process: the command's
own composition, record and printout), and its one-line errors."""

from __future__ import annotations

import re

import pytest

from gnnbench.records import store
from gnnbench.report.cli import render
from gnnbench.serve import main

SMALL = ["model=sage", "dataset=cora", "model.hidden=8", "train.device=cpu",
         "serve.batch_sizes=[1,16]", "serve.variants=[eager,compiled]", "serve.requests=12",
         "serve.warmup_requests=2", "serve.open_loop_requests=8"]


@pytest.fixture(scope="module")
def served(tmp_path_factory, data_dir, mirror):
    """The command's printout and the record it wrote."""
    import contextlib
    import io
    import os

    folder = tmp_path_factory.mktemp("serve")
    printed = io.StringIO()
    here = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(printed):
            code = main([*SMALL, f"data_dir={data_dir}", f"data_mirror={mirror}"])
    finally:
        os.chdir(here)
    [path] = folder.glob("outputs/serve/*/results.json")
    return code, printed.getvalue(), store.read(path), folder


@pytest.mark.slow
def test_serve_prints_and_records_latency_per_batch_size(served):
    code, printed, record, _ = served
    assert code == 0 and record.status == "ok"
    cases = {(c.variant, c.batch_size): c for c in record.serving.cases}
    assert set(cases) == {("eager", 1), ("eager", 16), ("compiled", 1), ("compiled", 16)}
    for (variant, batch), case in cases.items():
        lat = case.closed
        assert lat.n == 12 and 0 < lat.p50_ms <= lat.p95_ms <= lat.p99_ms <= lat.max_ms
        assert lat.p50_ci_ms[0] <= lat.p50_ms <= lat.p50_ci_ms[1]
        assert case.open.latency.n == 8 and case.open.rate_rps > 0
        # Every request samples its own neighbourhood: (nearly) every one has its own shape.
        assert case.distinct_shapes > 10
        line = next(p for p in printed.splitlines()
                    if re.match(rf"\s+{variant}\s+batch\s+{batch}\s", p))
        assert all(f"p{q} " in line for q in (50, 95, 99))
    # Compiled once with dynamic shapes, for every shape of both batch sizes.
    assert cases["compiled", 1].graphs >= 1 and cases["compiled", 1].compile_s > 0
    assert cases["compiled", 16].recompiles <= 1 and cases["eager", 1].graphs == 0
    assert record.serving.weights == "random" and "weights: random (declared" in printed


def test_serve_bad_values_are_one_line(capsys):
    assert main(["serve.variants=[eager,fast]"]) == 1
    assert capsys.readouterr().err.strip() == (
        "gnnbench.serve: error: serve.variants='fast' is not valid; choose one of: eager, "
        "compiled, reduce-overhead, padded")
    assert main(["model=nope"]) == 1
    assert capsys.readouterr().err.startswith("gnnbench.serve: error: unknown model 'nope'")


@pytest.mark.slow
def test_report_has_a_serving_section_and_no_training_row_for_it(served):
    *_, record, folder = served
    _, rows, markdown, _ = render([folder], "serve")
    assert rows == []
    section = markdown.split("## Serving", 1)[1]
    assert sum(line.startswith(f"| {record.name} |") for line in section.splitlines()) == 4


def test_padded_requests_meet_only_shapes_warmed_before_timing():
    """A padded stream's rung requests (what a padded server runs before timing) cover
    every shape its real requests are padded to, so no timed request meets a new shape
    (under CUDA graphs: an unrecorded graph); they answer like real requests."""
    import torch
    from torch_geometric.nn import GraphSAGE

    from gnnbench.training.requests import Requests, answer
    from gnnbench.training.sampler import CSRGraph

    g = torch.Generator().manual_seed(0)
    edge_index = torch.randint(0, 300, (2, 1500), generator=g)
    graph = CSRGraph.from_edge_index(edge_index, 300)
    x = torch.randn(300, 5, generator=g)
    model = GraphSAGE(5, 8, 2, 3).eval()
    requests = Requests(graph, x, None, [5, 3], 4, seed=1, padded=True)
    rungs = requests.rung_requests()
    assert [r.shape for r in rungs] == requests.buckets.shapes
    for r in rungs:
        assert r.x.size(0) == r.shape[0] and r.edge_index.size(1) == r.shape[1]
        assert answer(model, r).shape == (4,)
    seen = {requests.next().shape for _ in range(40)}
    assert seen <= set(requests.buckets.shapes)
    plain = Requests(graph, x, None, [5, 3], 4, seed=1)
    assert plain.rung_requests() == []

    from gnnbench.runner.serving import _warm_shapes

    met = []  # what a padded server runs before timing: each shape three times

    def forward(x, edge_index, edge_weight):
        met.append((x.size(0), edge_index.size(1)))
        return model(x, edge_index)

    assert _warm_shapes(forward, requests, torch.device("cpu")) > 0
    assert sorted(met) == sorted(requests.buckets.shapes * 3)
    assert _warm_shapes(forward, plain, torch.device("cpu")) is None
