"""The floor of a full-batch train step: the fewest bytes its ops must move through GPU
memory and the arithmetic of its GEMMs, each at the hardware's rate. A step measured at
twice its floor has half its time to win back; one at its floor is done. profile_step puts
it beside each measured step, limits beside each millisecond goal.

Why bytes: on an H200 every op of the arxiv-size step is memory-bound. An SpMM does 2
FLOPs per gathered 4-byte value; a 256-wide fp32 GEMM over the nodes about 64 FLOPs per
byte, under TF32's ridge (494 TFLOP/s / 4.3 TB/s = 115). Plain fp32 (67 TFLOP/s) makes the
GEMMs compute-bound, hence the second bound. The floor is max(bytes / bandwidth, GEMM FLOPs
/ peak): a step cannot beat either, and at best it overlaps them.

The count, per op class (b bytes a value: 4 in fp32 and TF32, 2 for bf16 activations;
i = 8 bytes a CSR index, int64 as models/csr.py builds them; N nodes; m non-zeros of A:
GCN's edges plus a self-loop a node, SAGE's edges; T train nodes; C classes; A(F) = N·F·b,
one activation F wide):

- GEMM: each operand read once, the output written once. GCN: Y = X·W; backward
  dW = Xᵀ·dY and dX = dY·Wᵀ (not in the first layer: the features need no gradient). SAGE:
  [A·X | X]·[Wl; Wr] + b; backward [dWl; dWr] = [A·X | X]ᵀ·dO and, past the first layer,
  [dM | dXr] = dO·[Wl | Wr]ᵀ.
- SpMM (A·Y forward, Aᵀ·dZ backward; SAGE's first layer has no backward one): reads the
  CSR arrays, (N+1+m)·i + m·b, writes A(F) and gathers neighbour rows. Low bound: each row
  read once (N·F·b, a perfect cache). High bound: each entry's row from memory (m·F·b, no
  reuse). The bias add, and SAGE's sum of X's two gradients (one more read), are epilogues.
- Elementwise: batch norm's map, ReLU and dropout as one chain, one read and one write
  (dropout's mask regenerated from its seed, never stored); backward it reads the gradient
  and the input, writes one. Batch norm's statistics are sums over all nodes, finished
  before its map starts: they read the input once more, backward the gradient and input.
- Loss: the train rows' logits, their indices and labels read; the logits' gradient (zero
  off the train split) written whole, N·C·b, as the last SpMM reads it whole.
- Adam: parameter, gradient and both moments read, parameter and moments written, 7·P·4.

Not counted: launches and host work (the whole step is one CUDA graph), zeroing gradients
(a GEMM can write them), writes of tiny tensors (batch norm's per-feature sums, the loss),
and any cache hit but a gathered row's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import DictConfig
from torch import Tensor

from gnnbench import models
from gnnbench.data import Task

# H200: a device-to-device copy through PyTorch moved ~4.3 TB/s, bytes read plus written
# (measured on this suite's device machines); the datasheet says 4.8.
HBM_GBPS = 4300.0
PEAK_TFLOPS = {"fp32": 67.0, "tf32": 494.0, "bf16": 989.0}  # H200 SXM datasheet, dense
INDEX_BYTES = 8  # models/csr.py: row pointers, columns, train indices and labels are int64
PARAM_BYTES = 4  # weights and Adam's state stay fp32 under every precision
CLASSES = ("gemm", "spmm", "elementwise", "loss", "adam")
OTHER = ("elementwise", "loss", "adam")  # what profile_step's kernel names cannot tell apart


@dataclass(frozen=True)
class Workload:
    """What the floor depends on: the graph as the layers aggregate it, widths, dtype."""

    aggregation: str  # "sum": GCN, A·(X·W) + b; "mean": SAGE, (A·X)·Wl + b + X·Wr
    num_nodes: int
    num_entries: int  # non-zeros of A
    num_train: int
    widths: tuple[int, ...]  # input features, hidden widths, classes
    batch_norm: bool = False
    input_dropout: bool = False
    value_bytes: int = 4

    @property
    def parameters(self) -> int:
        """Weights, biases (SAGE: lin_l's only) and batch norm's scale and shift."""
        lins = 2 if self.aggregation == "mean" else 1
        layers = zip(self.widths[:-1], self.widths[1:], strict=True)
        weights = sum(lins * fin * fout + fout for fin, fout in layers)
        return weights + (2 * sum(self.widths[1:-1]) if self.batch_norm else 0)


@dataclass(frozen=True)
class Bytes:
    """One class's bytes under each bound (they differ in the SpMMs' gathered rows only)."""

    low: int
    high: int

    def __add__(self, other: Bytes) -> Bytes:
        return Bytes(self.low + other.low, self.high + other.high)


@dataclass(frozen=True)
class Rates:
    """The hardware's rates the floor is held against."""

    hbm_gbps: float
    tflops: float

    def ms(self, nbytes: int) -> float:
        return nbytes / self.hbm_gbps / 1e6

    def flop_ms(self, flops: int) -> float:
        return flops / self.tflops / 1e9


def rates_for(precision: str, hbm_gbps: float = HBM_GBPS,
              tflops: float | None = None) -> Rates:
    """The H200's peak for the step's matmul precision unless `tflops` names one."""
    return Rates(hbm_gbps, tflops or PEAK_TFLOPS.get(precision, PEAK_TFLOPS.get("fp32")))


@dataclass
class Floor:
    """Bytes per op class, and the GEMMs' FLOPs."""

    classes: dict[str, Bytes] = field(default_factory=lambda: dict.fromkeys(CLASSES,
                                                                            Bytes(0, 0)))
    gemm_flops: int = 0

    def add(self, kind: str, low: int, high: int | None = None) -> None:
        self.classes[kind] = self.classes[kind] + Bytes(low, low if high is None else high)

    @property
    def total(self) -> Bytes:
        return sum(self.classes.values(), Bytes(0, 0))

    def ms(self, rates: Rates) -> tuple[float, float]:
        """(low, high): each bound's bytes at the bandwidth, or the GEMMs at the peak."""
        gemm = rates.flop_ms(self.gemm_flops)
        return max(rates.ms(self.total.low), gemm), max(rates.ms(self.total.high), gemm)

    def kernel_classes_ms(self, rates: Rates) -> dict[str, tuple[float, float]]:
        """The floor of the kernel classes profile_step tells apart by name."""
        other = sum((self.classes.get(c, Bytes(0, 0)) for c in OTHER), Bytes(0, 0))
        gemm = self.classes.get("gemm", Bytes(0, 0))
        slowest = max(rates.ms(gemm.low), rates.flop_ms(self.gemm_flops))
        spmm = self.classes.get("spmm", Bytes(0, 0))
        return {"gemm": (slowest, slowest), "spmm": (rates.ms(spmm.low), rates.ms(spmm.high)),
                "other": (rates.ms(other.low), rates.ms(other.high))}

    def summary(self, rates: Rates, wall_ms: float) -> Summary:
        low, high = self.ms(rates)
        return Summary(hbm_gbps=rates.hbm_gbps, peak_tflops=rates.tflops,
                       bytes=[self.total.low, self.total.high],
                       gemm_gflop=self.gemm_flops / 1e9, gemm_ms=rates.flop_ms(self.gemm_flops),
                       ms=[low, high], share=[low / wall_ms, high / wall_ms],
                       kernel_classes_ms={k: list(v) for k, v in
                                          self.kernel_classes_ms(rates).items()})


@dataclass(frozen=True)
class Summary:
    """A floor held against a measured wall time, as profile_step and limits write it:
    [low, high] bounds; share = floor / wall, the part of the floor's speed reached."""

    hbm_gbps: float
    peak_tflops: float
    bytes: list[int]
    gemm_gflop: float
    gemm_ms: float
    ms: list[float]
    share: list[float]
    kernel_classes_ms: dict[str, list[float]]

    def said(self, wall_ms: float, wall: str = "measured") -> str:
        (low, high), (b_low, b_high) = self.ms, self.bytes
        return (f"floor {low:.3g}-{high:.3g} ms ({b_low / 1e9:.3g}-{b_high / 1e9:.3g} GB at "
                f"{self.hbm_gbps:g} GB/s; GEMMs {self.gemm_gflop:.3g} GFLOP at "
                f"{self.peak_tflops:g} TFLOP/s = {self.gemm_ms:.3g} ms); {wall} {wall_ms:.3g} ms "
                f"reaches {_percent(self.share[0])}-{_percent(self.share[1])} of it "
                "(floor / wall)")


def _percent(share: float) -> str:
    """Two digits, so that a CPU's far share (0.03 %) does not print as 0 %."""
    return f"{100 * share:.2g} %"


class _Tally:
    """Adds up a step's ops, layer by layer (the module docstring says why each counts)."""

    def __init__(self, w: Workload) -> None:
        self.w, self.floor = w, Floor()
        self.csr = (w.num_nodes + 1 + w.num_entries) * INDEX_BYTES + w.num_entries * w.value_bytes

    def act(self, width: int) -> int:
        return self.w.num_nodes * width * self.w.value_bytes

    def gemm(self, nbytes: int, inner: int, width: int) -> None:
        self.floor.add("gemm", nbytes)
        self.floor.gemm_flops += 2 * self.w.num_nodes * inner * width

    def spmm(self, width: int, epilogue_reads: int = 0) -> None:
        fixed = self.csr + self.act(width) + epilogue_reads
        gathered = self.w.num_entries * width * self.w.value_bytes
        self.floor.add("spmm", fixed + self.act(width), fixed + gathered)

    def chain(self, width: int, backward: bool) -> None:
        sums = (2 if backward else 1) if self.w.batch_norm else 0
        self.floor.add("elementwise", (sums + (3 if backward else 2)) * self.act(width))

    def gcn(self, fin: int, fout: int, first: bool) -> None:
        weight = fin * fout * self.w.value_bytes
        self.gemm(self.act(fin) + weight + self.act(fout), fin, fout)  # Y = X·W
        self.spmm(fout)  # Z = A·Y + b
        self.spmm(fout)  # dY = Aᵀ·dZ
        self.gemm(self.act(fin) + self.act(fout) + weight, fin, fout)  # dW = Xᵀ·dY
        if not first:
            self.gemm(self.act(fout) + weight + self.act(fin), fin, fout)  # dX = dY·Wᵀ

    def sage(self, fin: int, fout: int, first: bool) -> None:
        weights = 2 * fin * fout * self.w.value_bytes
        self.spmm(fin)  # M = A·X
        self.gemm(2 * self.act(fin) + weights + self.act(fout), 2 * fin, fout)  # O = [M | X]·W
        self.gemm(2 * self.act(fin) + self.act(fout) + weights, 2 * fin, fout)  # dW
        if not first:
            self.gemm(self.act(fout) + weights + 2 * self.act(fin), 2 * fin, fout)  # [dM | dXr]
            self.spmm(fin, epilogue_reads=self.act(fin))  # dX = Aᵀ·dM + dXr


def count(w: Workload) -> Floor:
    """The bytes and GEMM FLOPs of one train step of `w`: forward, backward, Adam."""
    t = _Tally(w)
    if w.input_dropout:
        t.floor.add("elementwise", 2 * t.act(w.widths[0]))
    last = len(w.widths) - 2
    layer = t.gcn if w.aggregation == "sum" else t.sage
    for k, (fin, fout) in enumerate(zip(w.widths[:-1], w.widths[1:], strict=True)):
        layer(fin, fout, first=k == 0)
        if k < last:
            t.chain(fout, backward=False)
            t.chain(fout, backward=True)
    classes = w.widths[-1]
    t.floor.add("loss", w.num_train * (classes * w.value_bytes + 2 * INDEX_BYTES) +
                t.act(classes))
    t.floor.add("adam", 7 * w.parameters * PARAM_BYTES)
    return t.floor


def workload_of(cfg: DictConfig, task: object,
                edge_index: Tensor | None = None) -> Workload | None:
    """The workload of a run's config on its task, or None where this count does not model
    the step: a model whose layers are not one SpMM (models.csr_aggregation), residual
    layers, neighbour batches, graph classification. `edge_index`: the model's own graph
    inputs where the caller has them (GCN's carry self-loops); else built here."""
    if not isinstance(task, Task) or cfg.train.get("batching", "full") != "full":
        return None
    aggregation = models.csr_aggregation(cfg.model)
    o = models.settings(cfg.model)
    if aggregation is None or o.residual:
        return None
    if edge_index is None:
        edge_index, _ = models.graph_inputs(cfg.model, task.edge_index, task.num_nodes)
    hidden = (o.hidden,) * (o.num_layers - 1)
    return Workload(aggregation=aggregation, num_nodes=task.num_nodes,
                    num_entries=edge_index.size(1), num_train=task.splits.train.numel(),
                    widths=(task.num_features, *hidden, task.num_classes),
                    batch_norm=bool(o.batch_norm), input_dropout=o.input_dropout > 0,
                    value_bytes=2 if cfg.train.get("precision", "fp32") == "bf16" else 4)
