"""The floor of a train step (benchmarks/floor.py): its byte count checked against sums done
by hand on graphs small enough to count, and the workload read from a real config."""

from __future__ import annotations

import pytest
import torch

from gnnbench import config
from gnnbench.benchmarks import floor, limits
from gnnbench.models.gcn import GCN
from gnnbench.models.sage import SAGE

# 4 nodes, 6 non-zeros, 2 train nodes, 2 -> 3 -> 2; b = 4, i = 8. The CSR arrays:
# (4 + 1 + 6) * 8 + 6 * 4 = 112 bytes; an activation F wide, 16·F.
TINY = dict(num_nodes=4, num_entries=6, num_train=2, widths=(2, 3, 2))


def test_gcn_bytes_match_a_count_by_hand():
    counted = floor.count(floor.Workload("sum", **TINY, batch_norm=True))
    # layer 0 (first, hidden; W 24 bytes): X·W 32+24+48; dW 32+48+24; no dX.
    # layer 1 (last; W 24): X·W 48+24+32; dW 48+32+24; dX 32+24+48.
    assert counted.classes.get("gemm") == floor.Bytes(520, 520)
    # A·Y and Aᵀ·dZ per layer: 112 + write 16F + gathered (low 16F, high 6·F·4).
    # layer 0 (F 3): 2 × (112+48+48 = 208 | 112+48+72 = 232); layer 1 (F 2): 2 × (176 | 192)
    assert counted.classes.get("spmm") == floor.Bytes(768, 848)
    # batch norm + ReLU + dropout, F 3: forward 1 sum + read + write = 3 × 48;
    # backward 2 sums + 2 reads + write = 5 × 48
    assert counted.classes.get("elementwise") == floor.Bytes(384, 384)
    # loss: 2 train rows × (2 logits × 4 + index 8 + label 8) + the logits' gradient 32
    assert counted.classes.get("loss") == floor.Bytes(80, 80)
    # Adam: 7 × 4 bytes × (2·3+3 + 3·2+2 + batch norm 2·3 = 23 parameters)
    assert counted.classes.get("adam") == floor.Bytes(644, 644)
    assert counted.total == floor.Bytes(2396, 2476)
    assert counted.gemm_flops == 5 * 48  # 5 GEMMs, each 2·4·2·3


def test_sage_bytes_match_a_count_by_hand():
    counted = floor.count(floor.Workload("mean", **TINY))
    # layer 0 (first; [Wl; Wr] 48 bytes): A·X 112+32+(32|48); [M | X]·W 64+48+48;
    # its weight gradients 64+48+48; no gradient of X, so no Aᵀ·dM.
    # layer 1: A·X 112+48+(48|72); forward 96+48+32; weight gradients 96+32+48;
    # [dM | dXr] 32+48+96; Aᵀ·dM + dXr 112+48+48+(48|72).
    assert counted.classes.get("gemm") == floor.Bytes(848, 848)
    assert counted.classes.get("spmm") == floor.Bytes(640, 704)
    assert counted.classes.get("elementwise") == floor.Bytes(240, 240)  # no batch norm: 2+3
    assert counted.classes.get("adam") == floor.Bytes(7 * 4 * 29, 7 * 4 * 29)
    assert counted.total == floor.Bytes(2620, 2684)
    assert counted.gemm_flops == 5 * 96


def test_the_parameters_counted_are_the_models():
    for cls, aggregation in ((GCN, "sum"), (SAGE, "mean")):
        model = cls(128, 40, num_layers=3, hidden=256, batch_norm=True)
        w = floor.Workload(aggregation, 1, 1, 1, (128, 256, 256, 40), batch_norm=True)
        assert w.parameters == sum(p.numel() for p in model.parameters()), cls


def test_the_floor_is_the_slower_of_bytes_and_gemms():
    counted = floor.count(floor.Workload("sum", **TINY, batch_norm=True))
    rates = floor.Rates(hbm_gbps=1e-3, tflops=1.0)  # 2396 bytes at 1 MB/s: 2.396 ms
    assert counted.ms(rates) == pytest.approx((2.396, 2.476))
    slow = floor.Rates(hbm_gbps=1e-3, tflops=240 / 3e9)  # the GEMMs take 3 ms
    assert counted.ms(slow) == pytest.approx((3.0, 3.0))
    said = counted.summary(rates, wall_ms=4.0)
    assert said.share == pytest.approx([2.396 / 4, 2.476 / 4])
    assert "floor 2.4-2.48 ms" in said.said(4.0) and "60 %-62 % of it" in said.said(4.0)


def test_the_workload_of_a_config_is_its_graph_as_the_layers_see_it(tmp_path):
    """GCN's entries are the edges plus a self-loop a node; SAGE's the edges; the arxiv
    preset's 3x256 with batch norm; TF32 keeps 4-byte values."""
    common = [f"data_dir={tmp_path}", "train.device=cpu", "wandb.mode=disabled",
              "dataset.num_nodes=2000", "dataset.num_edges=8000", "train.precision=tf32"]
    gcn = config.compose_config(["experiment=synthetic-arxiv-gcn", *common])
    sage = config.compose_config(["experiment=synthetic-arxiv-sage", *common])
    from gnnbench import data

    task = data.load_task(gcn.dataset, gcn.data_dir, None, torch.device("cpu"))
    edges = task.edge_index.size(1)
    w = floor.workload_of(gcn, task)
    assert (w.aggregation, w.num_nodes, w.num_entries, w.widths, w.batch_norm) == (
        "sum", 2000, edges + 2000, (128, 256, 256, 40), True)
    assert (w.num_train, w.value_bytes) == (task.splits.train.numel(), 4)
    assert floor.workload_of(sage, task).num_entries == edges
    assert limits.step_floor(gcn).total == floor.count(w).total
    neighbours = config.compose_config(["experiment=synthetic-arxiv-sage", *common,
                                        "train.batching=neighbor"])
    assert floor.workload_of(neighbours, task) is None


def test_limits_says_where_a_goal_stands_against_the_floor():
    counted = floor.count(floor.Workload("sum", 169343, 2156380 + 169343, 90937,
                                         (128, 256, 256, 40), batch_norm=True))
    said = counted.summary(floor.rates_for("tf32"), wall_ms=5.01)
    text = limits.floor_said(2.5, 5.01, said)
    assert text.startswith("goal 2.5 ms, within the floor's range: met only if at least")
    assert "floor 1.55-3.76 ms" in text and "measured 5.01 ms reaches 31 %-75 % of it" in text
    assert "below the floor" in limits.floor_said(1.0, 5.01, said)
    assert limits.floor_said(4.0, 5.01, said).startswith("goal 4 ms, above the floor")
