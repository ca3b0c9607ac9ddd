"""graph.layout=csr-triton: the Triton SpMM must compute what PyG's scatter aggregation
computes, forward and backward, in fp32 and with bf16 storage, stay inside one
torch.compile(fullgraph=True, dynamic=True) graph, and train Cora as coo does.

The `test_kernel_*` tests run in this process through the op's torch.sparse fallback (no
CUDA here), and again in a subprocess with TRITON_INTERPRET=1 through the real Triton kernel
(`test_the_kernel_tests_pass_in_triton_s_interpreter`): triton picks interpretation once,
when it is first imported, so the same process cannot do both."""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from support.processes import run as run_process
from test_csr import TwoLayers, assert_same_step, compiled_matches_eager_on_three_sizes
from test_sampler import power_law_graph
from torch_geometric.nn import GCNConv, SAGEConv
from torch_geometric.utils import scatter

from gnnbench import config
from gnnbench.config import ConfigError
from gnnbench.models import csr_triton
from gnnbench.models.csr import CSRAdjacency, spmm
from gnnbench.models.csr_triton import TritonAdjacency, backend, reference_mm, schedule
from gnnbench.models.gcn import GCN
from gnnbench.training import layouts

N, REPO = 150, Path(__file__).resolve().parents[1]
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
EXPECTED = "triton-interpreter" if INTERPRETED else "torch-sparse"
HAS_TRITON = importlib.util.find_spec("triton") is not None
TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 2e-2}


@pytest.fixture(scope="module")
def graph() -> torch.Tensor:
    """Power-law in-degrees (a hub of 234 entries), self-loops, multi-edges, and nodes 0
    and 1 without in-edges."""
    edge_index = power_law_graph(N, 1500, seed=3)
    return edge_index[:, edge_index[1] >= 2]


def pyg(edge_index: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None,
        aggr: str) -> torch.Tensor:
    """PyG's message passing: scatter of (weighted) source features onto targets."""
    messages = x[edge_index[0]] if weight is None else x[edge_index[0]] * weight[:, None]
    return scatter(messages, edge_index[1], 0, dim_size=N, reduce=aggr)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("aggr", ["sum", "weighted", "mean"])
def test_kernel_matches_pyg_forward_and_backward(graph, aggr, dtype):
    """chunk=16 splits a fifth of the rows: the atomics path runs too. bf16 is compared
    with fp32 arithmetic on the same (rounded) bf16 inputs."""
    torch.manual_seed(0)
    weight = torch.rand(graph.size(1)) if aggr == "weighted" else None
    adj = TritonAdjacency.from_edge_index(graph, N, weight, "mean" if aggr == "mean" else "sum",
                                          chunk=16)
    assert adj.weighted == (aggr != "sum") and int(adj.work[:, 3].sum()) > 20
    x = torch.randn(N, 20).to(dtype).requires_grad_()
    values = adj.values.clone().requires_grad_() if aggr == "weighted" else adj.values
    assert backend(x.device) == EXPECTED
    out = spmm(replace(adj, values=values), x)
    assert out.dtype == dtype
    x32 = x.detach().float().requires_grad_()
    w32 = weight.clone().requires_grad_() if weight is not None else None
    expected = pyg(graph, x32, w32, "mean" if aggr == "mean" else "sum")
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(out.float(), expected, rtol=tol, atol=tol)
    upstream = torch.randn(N, 20)
    out.backward(upstream.to(dtype))
    expected.backward(upstream.to(dtype).float())
    torch.testing.assert_close(x.grad.float(), x32.grad, rtol=tol, atol=tol)
    if aggr == "weighted":  # entries follow CSR order: perm maps them to edge_index columns
        torch.testing.assert_close(values.grad, w32.grad[adj.perm], rtol=tol, atol=tol)


@pytest.mark.parametrize("aggr", ["sum", "weighted", "mean"])
def test_the_reference_matches_pyg(graph, aggr):
    """reference_mm is what the GPU test and the benchmark hold the kernel to."""
    weight = torch.rand(graph.size(1)) if aggr == "weighted" else None
    adj = CSRAdjacency.from_edge_index(graph, N, weight, "mean" if aggr == "mean" else "sum")
    x = torch.randn(N, 20, dtype=torch.float64)
    got = reference_mm(adj.rowptr, adj.col, None if aggr == "sum" else adj.values, x)
    w64 = weight.double() if weight is not None else None
    torch.testing.assert_close(got, pyg(graph, x, w64, "mean" if aggr == "mean" else "sum"))


def test_kernel_sums_bf16_in_fp32():
    """300 ones into one row: a bf16 running sum stops at 256 (256 + 1 rounds back to
    256); fp32 accumulation gives 300, which bf16 stores exactly."""
    edge_index = torch.stack([torch.arange(300) % 7, torch.zeros(300, dtype=torch.long)])
    for chunk in (128, 512):  # split (atomics) and whole
        adj = TritonAdjacency.from_edge_index(edge_index, 7, chunk=chunk)
        out = spmm(adj, torch.ones(7, 4, dtype=torch.bfloat16))
        assert out[0].tolist() == [300.0] * 4 and out[1:].abs().sum() == 0


def test_kernel_gradcheck_in_features_and_edge_weights():
    """fp64 end to end. Interpreted, gradcheck's fast mode (random projections of the
    Jacobian): the full one takes a forward per input number, 40 s through numpy."""
    small = power_law_graph(20, 60, seed=5)
    adj = TritonAdjacency.from_edge_index(small, 20, torch.rand(60, dtype=torch.float64),
                                          chunk=4)
    x = torch.randn(20, 2, dtype=torch.float64, requires_grad=True)
    values = adj.values.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda x, v: spmm(replace(adj, values=v), x), (x, values),
                                    fast_mode=INTERPRETED)


def test_kernel_handles_empty_rows_and_graphs():
    adj = TritonAdjacency.from_edge_index(torch.tensor([[1, 2], [0, 0]]), 3, aggr="mean")
    assert spmm(adj, torch.tensor([[0.0], [2.0], [4.0]])).view(-1).tolist() == [3.0, 0.0, 0.0]
    empty = TritonAdjacency.from_edge_index(torch.empty(2, 0, dtype=torch.long), 3)
    assert empty.work.shape == (0, 4) and spmm(empty, torch.ones(3, 2)).abs().sum() == 0


def test_schedule_covers_every_entry_once_longest_first(graph):
    adj = CSRAdjacency.from_edge_index(graph, N)
    work = schedule(adj.rowptr)  # the default chunk: the hub is split
    row, start, end, split = work.unbind(1)
    covered = torch.zeros(graph.size(1), dtype=torch.long)
    for r, s, e in zip(row.tolist(), start.tolist(), end.tolist(), strict=True):
        assert adj.rowptr[r] <= s < e <= adj.rowptr[r + 1]
        covered[s:e] += 1
    assert covered.eq(1).all()
    length = end - start
    assert length.max() == csr_triton.CHUNK and (length[:-1] >= length[1:]).all()
    degree = (adj.rowptr[1:] - adj.rowptr[:-1])[row]
    assert torch.equal(split.bool(), degree > csr_triton.CHUNK)


def test_layers_equal_pyg_gcn_and_sage(graph):
    edge_index, weight = GCN.graph_inputs(GCN.Options(normalize="precompute"), graph, N)
    gcn, sage = GCNConv(8, 5, normalize=False), SAGEConv(8, 5, aggr="mean")
    x = torch.randn(N, 8)
    normed = TritonAdjacency.from_edge_index(edge_index, N, weight)
    torch.testing.assert_close(spmm(normed, gcn.lin(x)) + gcn.bias, gcn(x, edge_index, weight),
                               rtol=1e-5, atol=1e-5)
    mean = TritonAdjacency.from_edge_index(graph, N, aggr="mean")
    torch.testing.assert_close(sage.lin_l(spmm(mean, x)) + sage.lin_r(x), sage(x, graph),
                               rtol=1e-5, atol=1e-5)


def test_layout_conversion_and_plain_backend(graph):
    adj, weight = layouts.convert("csr-triton", graph, None, N, "mean")
    assert isinstance(adj, TritonAdjacency) and weight is None and adj.weighted
    moved = adj.to("cpu")
    assert isinstance(moved, TritonAdjacency) and moved.weighted
    assert torch.equal(moved.t_work, adj.t_work)
    plain, _ = layouts.convert("csr-op", graph, None, N, "mean")
    assert type(plain) is CSRAdjacency
    if not INTERPRETED:
        assert backend(torch.device("cpu")) == "torch-sparse"


@pytest.mark.parametrize(("overrides", "expected"), [
    (["model=gat"], "graph.layout=csr-triton aggregates by one SpMM: it supports gcn"),
    (["model=sage", "model.aggr=max"], "not model=sage"),
    (["model=custom", "model._target_=mymodel.Net"], "needs gnnbench's own layers"),
])
def test_unsupported_models_are_one_line(monkeypatch, overrides, expected):
    from gnnbench.runner.experiment import validate

    monkeypatch.syspath_prepend(str(REPO / "examples"))  # mymodel.Net, a model of one's own
    monkeypatch.delitem(sys.modules, "mymodel", raising=False)
    cfg = config.compose_config(["graph.layout=csr-triton", *overrides])
    with pytest.raises(ConfigError, match=expected) as error:
        validate(cfg)
    assert "\n" not in str(error.value)


@pytest.mark.slow
@pytest.mark.parametrize("weighted", [True, False])
def test_kernel_compiles_in_one_graph_with_dynamic_shapes(monkeypatch, weighted):
    builds = []
    monkeypatch.setattr(csr_triton, "schedule",
                        lambda *a: builds.append(1) or schedule(*a))
    torch.manual_seed(0)
    seen = compiled_matches_eager_on_three_sizes(
        TwoLayers(), lambda edges, n, e: TritonAdjacency.from_edge_index(
            edges, n, torch.rand(e) if weighted else None, chunk=8))
    assert seen["graph_breaks"] == 0 and seen["graphs"] == 1 and seen["recompiles"] == 0
    assert len(builds) == 6  # A's and Aᵀ's schedules once per graph, never per step


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not importable")
@pytest.mark.skipif(INTERPRETED, reason="the interpreter builds no GPU code")
@pytest.mark.parametrize(("x_type", "has_values"), [("*bf16", True), ("*fp32", False)])
def test_triton_builds_it_for_an_h200_without_one(x_type, has_values):
    """The interpreter runs Python, not the compiler: here triton compiles the same source
    to an sm_90 cubin (no GPU needed), with the 16-byte divisibility that a launch on
    256-wide features gets, so the feature loads must come out vectorised."""
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from gnnbench.models.spmm_kernel import _spmm

    signature = {"work_ptr": "*i64", "col_ptr": "*i64", "val_ptr": "*fp32", "x_ptr": x_type,
                 "out_ptr": "*fp32", "num_features": "i32", "stride_x": "i32",
                 "stride_out": "i32", "HAS_VALUES": "constexpr", "BLOCK_E": "constexpr",
                 "BLOCK_F": "constexpr", "ACC": "constexpr"}
    constants = {"HAS_VALUES": has_values, "BLOCK_E": 32, "BLOCK_F": 128, "ACC": tl.float32}
    source = ASTSource(fn=_spmm, signature=signature, constexprs=constants,
                       attrs={(i,): [["tt.divisibility", 16]] for i in range(8)})
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32))
    assert compiled.asm["cubin"] and "scf.while" in compiled.asm["ttgir"]
    assert "ld.global.v4" in compiled.asm["ptx"] or "ld.global.v2" in compiled.asm["ptx"]


@pytest.fixture(scope="module")
def cora(tmp_path_factory, data_dir, mirror):
    """One Cora run per set of overrides, shared by the tests below."""
    from gnnbench.runner import run_experiment

    cache: dict = {}

    def get(*overrides: str):
        if overrides not in cache:
            cfg = config.compose_config([f"data_dir={data_dir}", f"data_mirror={mirror}",
                                         "wandb.mode=disabled", "dataset=cora",
                                         "train.device=cpu", *overrides])
            cache[overrides] = run_experiment(cfg, tmp_path_factory.mktemp("csr-triton"))
        return cache[overrides]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gcn", "sage"])
def test_cora_learns_what_coo_learns(cora, model):
    from gnnbench.report.rows import build_rows

    coo = cora(f"model={model}", "train.epochs=60")
    ours = cora(f"model={model}", "train.epochs=60", "graph.layout=csr-triton")
    assert ours.status == "ok", ours.reason
    assert ours.graph["layout"] == "csr-triton" and ours.graph["convert_s"] >= 0
    assert abs(ours.accuracy.test_at_best_val - coo.accuracy.test_at_best_val) <= 0.02
    [row] = build_rows([ours])
    assert row.layout == "csr-triton"


@pytest.mark.slow
def test_compiled_cora_keeps_the_op_in_one_graph(cora):
    result = cora("model=gcn", "train.epochs=4", "train.warmup_epochs=1", "compile=true",
                  "graph.layout=csr-triton")
    assert result.status == "ok", result.reason
    assert result.compile.graph_breaks == 0


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TRITON, reason="triton is not importable: pip install triton "
                    "(its interpreter runs the kernel on the CPU)")
@pytest.mark.skipif(INTERPRETED, reason="already the interpreter run")
def test_the_kernel_tests_pass_in_triton_s_interpreter(tmp_path):
    proc = run_process([str(Path(__file__)), "-k", "kernel", "-n", "0", "-q",
                        "-p", "no:cacheprovider"], tmp_path, env={"TRITON_INTERPRET": "1"},
                       module="pytest")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("aggr", ["sum", "mean"])
def test_cuda_kernel_matches_the_reference(dtype, aggr):
    """An arxiv-like degree spread at 1/30 scale; 96 features (not a power of two)."""
    edge_index = power_law_graph(6000, 40000, seed=7, device="cuda")
    weight = torch.rand(40000, device="cuda") if aggr == "sum" else None
    adj = TritonAdjacency.from_edge_index(edge_index, 6000, weight, aggr)
    assert backend(edge_index.device) == "triton" and bool(adj.work[:, 3].any())
    x = torch.randn(6000, 96, device="cuda").to(dtype).requires_grad_()
    out = spmm(adj, x)
    expected = reference_mm(adj.rowptr, adj.col, adj.values, x.detach())
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(out, expected, rtol=tol, atol=tol)
    grad = torch.randn_like(out)
    out.backward(grad)
    expected_grad = reference_mm(adj.t_rowptr, adj.t_col, adj.values[adj.t_perm], grad)
    torch.testing.assert_close(x.grad, expected_grad, rtol=tol, atol=tol)


@pytest.mark.gpu
@pytest.mark.slow
def test_cuda_kernel_compiles_and_matches_eager():
    edge_index = power_law_graph(N, 1500, seed=3, device="cuda")
    adj = TritonAdjacency.from_edge_index(edge_index, N, torch.rand(1500, device="cuda"),
                                          chunk=16)
    model = TwoLayers().cuda()
    compiled = torch.compile(model, fullgraph=True, dynamic=True)
    assert_same_step(model, compiled, torch.randn(N, 6, device="cuda"), adj)
