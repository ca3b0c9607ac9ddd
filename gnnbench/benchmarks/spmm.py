"""How fast is csr-triton's SpMM against cuSPARSE (csr-op) and PyG's scatter, and is it right?

    python -m gnnbench.benchmarks.spmm --out results/spmm-h200.json
    python -m gnnbench.benchmarks.spmm --sweep --out results/spmm-sweep-h200.json

An arxiv-size random graph (169,343 nodes, 1,166,243 directed edges; in- and out-degrees
Pareto-distributed as synthetic-arxiv's, self-loops and multi-edges kept) with GCN's
symmetric weights, 256 features. For fp32 and bf16 storage, the forward (A @ x) and the
forward with the backward (grad of x: Aᵀ @ grad) of each aggregation, `--reps` rounds after
`--warmup`, the methods' order rotating each round; on CUDA each call timed by CUDA events.
Medians with IQR, and csr-triton's speedup over each other method with a bootstrap CI.
Numerics: each method's output and grad against a float64 reference, as the largest error
relative to the reference's largest magnitude. A method that fails (cuSPARSE has no bf16
kernel for this on some builds) is an outcome with its reason, not a crash. `--sweep` also
times the kernel's forward over chunk sizes, block shapes and warps (CUDA only).

`--tiny` (to check that it runs, on the CPU too): 2,000 nodes, 12,000 edges, 32 features,
5 rounds. Without CUDA, csr-triton is csr-op's SpMM (the JSON's `backend` says so).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict
from torch_geometric.utils import scatter

from gnnbench.benchmarks import parse_with_tiny
from gnnbench.measure.stats import bootstrap_ratio_ci, summarize
from gnnbench.measure.timer import timed
from gnnbench.models.csr import CSRAdjacency, spmm
from gnnbench.models.csr_triton import TritonAdjacency, backend, reference_mm

TINY = {"nodes": 2000, "edges": 12000, "features": 32, "reps": 5, "warmup": 1}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
OURS = "csr-triton"  # the method the others are held against


class Ratio(BaseModel):
    """csr-triton's speedup over a method: its median / csr-triton's, with a bootstrap CI."""

    model_config = ConfigDict(extra="forbid")
    ratio: float
    ci95: list[float | None]


class Timing(BaseModel):
    """One method's outcome: the reason it failed, or its samples (ms) and their summary.
    Written as set (`exclude_unset`): a failed method has no samples, an ok one no reason."""

    model_config = ConfigDict(extra="forbid")
    outcome: Literal["ok", "error"]
    reason: str | None = None
    samples: list[float] | None = None
    ms: dict | None = None
    csr_triton_speedup: Ratio | None = None


@dataclass
class Graph:
    nodes: int
    edges: int
    features: int
    max_in_degree: int
    work_items: int
    split_rows: int
    schedule_build_s: float


@dataclass
class SweepRow:
    chunk: int
    block_e: int
    block_f: int
    num_warps: int
    work_items: int
    median_ms: float | None
    iqr_ms: float | None
    reason: str | None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--nodes", type=int, default=169343)
    parser.add_argument("--edges", type=int, default=1166243)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--sweep", action="store_true", help="kernel configurations too")
    parser.add_argument("--tiny", action="store_true", help="a small graph and 5 rounds")
    parser.add_argument("--out", type=Path)
    return parse_with_tiny(parser, TINY, argv)


def power_law_edges(nodes: int, edges: int, seed: int = 0) -> torch.Tensor:
    """Sources and targets drawn by Pareto propensities, P(w > t) ~ t^-1.5."""
    g = torch.Generator().manual_seed(seed)
    weight = (1.0 - torch.rand(nodes, generator=g, dtype=torch.float64)).pow(-1.0 / 1.5)
    src, dst = (torch.multinomial(weight, edges, replacement=True, generator=g)
                for _ in range(2))
    return torch.stack([src, dst])


def gcn_weights(edge_index: torch.Tensor, nodes: int) -> torch.Tensor:
    """D^-1/2 A D^-1/2 by in-degree, GCN's normalisation (without added self-loops)."""
    deg = torch.bincount(edge_index[1], minlength=nodes).float().clamp(min=1)
    return deg[edge_index[0]].rsqrt() * deg[edge_index[1]].rsqrt()


def methods(ours: TritonAdjacency, op: CSRAdjacency, edge_index: torch.Tensor,
            weight: torch.Tensor) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    src, dst = edge_index
    nodes = ours.num_targets

    def pyg(x: torch.Tensor) -> torch.Tensor:  # PyG's sum aggregation, in x's dtype
        messages = x.index_select(0, src) * weight.to(x.dtype).unsqueeze(-1)
        return scatter(messages, dst, 0, dim_size=nodes, reduce="sum")

    return {OURS: lambda x: spmm(ours, x), "csr-op": lambda x: spmm(op, x), "pyg-scatter": pyg}


def clock(fn: Callable[[], object], device: torch.device) -> Callable[[], float]:
    """Runs fn now; returns a reader of its milliseconds (CUDA events, read after a sync)."""
    if device.type != "cuda":
        _, seconds = timed(fn, device)
        return lambda: seconds * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    return lambda: start.elapsed_time(end)


def bench(fns: dict[str, Callable[[], object]], reps: int, warmup: int,
          device: torch.device) -> dict[str, Timing]:
    """{method: its outcome, and its reason or samples}: rounds, the order rotating."""
    out: dict[str, Timing] = {}
    for name, fn in fns.items():  # the first call fails or succeeds for all later ones
        try:
            fn()
            out[name] = Timing(outcome="ok", samples=[])
        except Exception as exc:  # noqa: BLE001 - the outcome is what the report says
            out[name] = Timing(outcome="error",
                               reason=f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    names = [n for n in fns if out[n].outcome == "ok"]
    for i in range(warmup + reps):
        order = names[i % len(names):] + names[: i % len(names)] if names else []
        readers = {n: clock(fns[n], device) for n in order}
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if i >= warmup:
            for n, read in readers.items():
                out[n].samples.append(read())
    for row in out.values():
        if row.outcome == "ok":
            row.ms = summarize(row.samples)
    return out


def errors(fns: dict, x: torch.Tensor, grad: torch.Tensor, expected: tuple) -> dict:
    """Largest error of output and grad, relative to the float64 reference's largest value."""
    out = {}
    for name, fn in fns.items():
        xg = x.detach().requires_grad_()
        try:
            y = fn(xg)
            (gx,) = torch.autograd.grad(y, xg, grad)
        except Exception:  # noqa: BLE001 - reported by the timing as an outcome
            continue
        out[name] = {k: float((got.detach().double() - ref).abs().max()
                              / ref.abs().max().clamp(min=1e-30))
                     for k, got, ref in (("forward", y, expected[0]), ("grad", gx, expected[1]))}
    return out


def sweep(adj_args: tuple, x: torch.Tensor, reps: int,
          device: torch.device) -> list[SweepRow]:
    """Forward time of the kernel per (chunk, BLOCK_E, BLOCK_F, warps), fastest first."""
    edge_index, weight, nodes = adj_args
    rows = []
    for chunk in (32, 128, 512):
        adj = TritonAdjacency.from_edge_index(edge_index, nodes, weight, chunk=chunk)
        for block_e, block_f, warps in itertools.product((8, 16, 32), (64, 128, 256), (4, 8)):
            [res] = bench({"kernel": forward(adj, x, block_e, block_f, warps)}, reps, 3,
                          device).values()
            ms = res.ms or {}
            rows.append(SweepRow(chunk=chunk, block_e=block_e, block_f=block_f,
                                 num_warps=warps, work_items=adj.work.size(0),
                                 median_ms=ms.get("median"), iqr_ms=ms.get("iqr"),
                                 reason=res.reason))
    return sorted(rows, key=lambda r: r.median_ms if r.median_ms is not None else 1e9)


def forward(adj: TritonAdjacency, x: torch.Tensor, block_e: int, block_f: int,
            warps: int) -> Callable[[], None]:
    """The op's forward with a given kernel configuration: zeroed fp32 output, launch."""
    from gnnbench.models import spmm_kernel

    def run() -> None:
        out = torch.zeros(adj.num_targets, x.size(1), device=x.device)
        spmm_kernel.launch(adj.work, adj.col, adj.values, x, out, block_e, block_f, warps)

    return run


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    warnings.filterwarnings("ignore", message=r".*[Ss]parse (CSR tensor support|invariant)")
    device = torch.device(args.device)
    nodes = args.nodes
    edge_index = power_law_edges(nodes, args.edges).to(device)
    weight = gcn_weights(edge_index, nodes)
    op = CSRAdjacency.from_edge_index(edge_index, nodes, weight)
    ours, build_s = timed(lambda: TritonAdjacency.from_edge_index(edge_index, nodes, weight),
                          device)
    fns = methods(ours, op, edge_index, weight)
    degree = ours.rowptr[1:] - ours.rowptr[:-1]
    graph = Graph(nodes=nodes, edges=args.edges, features=args.features,
                  max_in_degree=int(degree.max()), work_items=ours.work.size(0),
                  split_rows=int((degree > 128).sum()), schedule_build_s=build_s)
    runs_on = backend(device)
    results: dict[str, dict[str, dict[str, Timing]]] = {}
    numerics: dict[str, dict] = {}
    g = torch.Generator(device=device).manual_seed(1)
    x32 = torch.randn(nodes, args.features, generator=g, device=device)
    grad32 = torch.randn(nodes, args.features, generator=g, device=device)
    for name in args.dtypes.split(","):
        x, grad = x32.to(DTYPES[name]), grad32.to(DTYPES[name])
        t_values = ours.values.index_select(0, ours.t_perm).double()
        expected = (reference_mm(ours.rowptr, ours.col, ours.values.double(), x.double()),
                    reference_mm(ours.t_rowptr, ours.t_col, t_values, grad.double()))
        numerics[name] = errors(fns, x, grad, expected)
        del expected
        results[name] = {p: with_speedups(bench(calls, args.reps, args.warmup, device))
                         for p, calls in passes(fns, x, grad).items()}
    sweeps: dict[str, list[SweepRow]] | dict[str, str] = {}
    if args.sweep:
        sweeps = ({n: sweep((edge_index, weight, nodes), x32.to(DTYPES[n]), args.reps,
                            device) for n in args.dtypes.split(",")}
                  if runs_on == "triton" else
                  {"skipped": f"needs the compiled kernel (CUDA); here {runs_on}"})
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    report(device_name, runs_on, graph, results, numerics, sweeps)
    out = dict(command=command_line(args), when=time.strftime("%Y-%m-%d %H:%M:%S"),
               device=device_name, torch=torch.__version__, triton=triton_version(),
               backend=runs_on, reps=args.reps, warmup=args.warmup, graph=asdict(graph),
               results={dtype: {p: {m: row.model_dump(exclude_unset=True)
                                    for m, row in rows.items()}
                                for p, rows in by_pass.items()}
                        for dtype, by_pass in results.items()},
               numerics=numerics)
    if args.sweep:
        out.update(sweep={n: [asdict(r) for r in rows] if isinstance(rows, list) else rows
                          for n, rows in sweeps.items()})
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n")


def passes(fns: dict, x: torch.Tensor, grad: torch.Tensor) -> dict[str, dict]:
    """What is timed: the forward alone, and the forward with the gradient of x."""
    xg = x.detach().requires_grad_()
    return {"forward": {n: lambda f=f: f(x) for n, f in fns.items()},
            "forward_backward": {n: lambda f=f: torch.autograd.grad(f(xg), xg, grad)
                                 for n, f in fns.items()}}


def with_speedups(rows: dict[str, Timing]) -> dict[str, Timing]:
    """csr-triton's speedup over each other method: its median / csr-triton's, with a CI."""
    ours = rows[OURS]
    for name, row in rows.items():
        if name != OURS and row.outcome == ours.outcome == "ok":
            ratio = row.ms["median"] / ours.ms["median"]
            row.csr_triton_speedup = Ratio(ratio=ratio, ci95=list(bootstrap_ratio_ci(
                row.samples, ours.samples)))
    return rows


def triton_version() -> str | None:
    try:
        import triton
    except ImportError:
        return None
    return triton.__version__


def command_line(args: argparse.Namespace) -> str:
    words = ["python -m gnnbench.benchmarks.spmm"]
    for key, value in vars(args).items():
        if key != "out" and value not in (None, False):
            words += [f"--{key}"] + ([] if value is True else [str(value)])
    return " ".join(words)


def report(device: str, runs_on: str, g: Graph, results: dict[str, dict[str, dict[str, Timing]]],
           numerics: dict[str, dict], sweeps: dict[str, list[SweepRow]] | dict[str, str]) -> None:
    print(f"{device}: {g.nodes:,} nodes / {g.edges:,} edges (max in-degree "
          f"{g.max_in_degree:,}), {g.features} features; csr-triton runs "
          f"{runs_on}: {g.work_items:,} work items, {g.split_rows} rows split, "
          f"schedule built in {g.schedule_build_s:.3f} s")
    for dtype, passes in results.items():
        for name, rows in passes.items():
            print(f"  {dtype} {name}:")
            for method, row in rows.items():
                if row.outcome != "ok":
                    print(f"    {method:12s} {row.reason}")
                    continue
                ms, err = row.ms, numerics[dtype].get(method, {})
                line = (f"    {method:12s} median {ms['median']:8.3f} ms  IQR {ms['iqr']:7.3f}"
                        f"  (n={ms['n']}); rel. error fwd {err.get('forward', float('nan')):.1e}"
                        f" grad {err.get('grad', float('nan')):.1e}")
                if (s := row.csr_triton_speedup) is not None:
                    line += f"; csr-triton {s.ratio:.2f}x [{s.ci95[0]:.2f}-{s.ci95[1]:.2f}]"
                print(line)
    for dtype, rows in sweeps.items():
        if not isinstance(rows, list):
            print(f"  sweep {dtype}: {rows}")
        elif rows[0].median_ms is not None:
            best = rows[0]
            print(f"  sweep {dtype}: best chunk {best.chunk}, BLOCK_E {best.block_e}, "
                  f"BLOCK_F {best.block_f}, {best.num_warps} warps: {best.median_ms:.3f} ms")


if __name__ == "__main__":
    main()
