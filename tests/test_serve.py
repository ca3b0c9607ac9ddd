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
