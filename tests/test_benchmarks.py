"""Every benchmark under gnnbench/benchmarks runs: its real command line, on the CPU, in its
tiny mode, writes the JSON it documents, with numbers where numbers belong. A benchmark
that no test runs rots (profile_step did: a config key renamed under it, an import lost)."""

from __future__ import annotations

import importlib
import json
import math
import shlex
from pathlib import Path

import pytest
import torch
from support.processes import run

from gnnbench import config
from gnnbench.benchmarks import profile_step

REPO = Path(__file__).resolve().parents[1]
DOCUMENTED = sorted({line.strip().split("#")[0].strip()
                     for doc in [REPO / "README.md", *(REPO / "results").rglob("README.md")]
                     for line in doc.read_text().splitlines()
                     if line.strip().startswith("python -m gnnbench.benchmarks.")})


def bench(tmp_path: Path, name: str, *args: str) -> dict:
    out = tmp_path / f"{name}.json"
    proc = run([*args, "--tiny", "--device", "cpu", "--out", str(out)], tmp_path,
               module=f"gnnbench.benchmarks.{name}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def interval(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(map(number, value)) \
        and value[0] <= value[1]


def test_sampler_times_sampling_gathering_and_the_step(tmp_path):
    out = bench(tmp_path, "sampler")
    assert out["command"].startswith("python -m gnnbench.benchmarks.sampler")
    assert set(out["seconds"]) == {"sample_mark", "gather", "step"}
    for stats in [*out["seconds"].values(), out["whole_batch_s"]]:
        assert stats["n"] == 3 and number(stats["median"]) and number(stats["iqr"])
    assert 0 < out["sampling_share_of_batch"] < 1 and number(out["csr_build_s"])
    assert out["batch"]["seeds"] == 64 and number(out["batch"]["median_nodes"])


def test_the_sampler_compares_dedup_choices_with_a_ratio_ci(tmp_path):
    out = bench(tmp_path, "sampler", "--dedup", "mark,unique", "--no-step")
    [(name, ratio)] = out["sampling_speedup"].items()
    assert name == "mark_vs_unique" and number(ratio["ratio"]) and interval(ratio["ci95"])


def test_scale_times_a_sweeps_first_job_and_a_report_over_generated_records(tmp_path):
    out = bench(tmp_path, "scale")
    assert out["command"].startswith("python -m gnnbench.benchmarks.scale --tiny")
    [first] = out["first_job"]
    assert first["seeds"] == 20 and number(first["seconds"]) and number(first["load_1min"])
    [report] = out["report"]
    assert report["records"] == 4 and number(report["seconds"])
    assert number(report["ms_per_record"])


def test_spmm_times_each_aggregation_and_checks_its_numbers(tmp_path):
    out = bench(tmp_path, "spmm", "--sweep")
    assert out["command"].startswith("python -m gnnbench.benchmarks.spmm")
    assert out["backend"] in ("torch-sparse", "triton-interpreter")  # no CUDA here
    assert out["graph"]["nodes"] == 2000 and out["graph"]["work_items"] > 0
    assert "needs the compiled kernel" in out["sweep"]["skipped"]
    for dtype in ("fp32", "bf16"):
        assert set(out["results"][dtype]) == {"forward", "forward_backward"}
        for rows in out["results"][dtype].values():
            assert set(rows) == {"csr-triton", "csr-op", "pyg-scatter"}
            assert all(r["outcome"] == "ok" and r["ms"]["n"] == 5 for r in rows.values())
            assert number(rows["csr-op"]["csr_triton_speedup"]["ratio"])
            assert interval(rows["pyg-scatter"]["csr_triton_speedup"]["ci95"])
        limit = 1e-5 if dtype == "fp32" else 1e-2
        for errors in out["numerics"][dtype].values():
            assert errors["forward"] < limit and errors["grad"] < limit


@pytest.mark.slow
def test_overhead_compares_a_bare_loop_with_the_runner(tmp_path):
    out = bench(tmp_path, "overhead")
    assert [(r["case"], r["compiled"]) for r in out["rows"]] == [("cora", False),
                                                                 ("cora", True)]
    for row in out["rows"]:
        assert all(number(row[k]) for k in ("bare_epoch_ms", "runner_epoch_ms",
                                             "overhead_pct", "round_median_overhead_pct"))
        assert interval(row["ratio_ci95"]) and interval(row["round_median_ci95_pct"])
        assert len(row["overhead_pct_per_round"]) == 2


@pytest.mark.slow
def test_limits_measures_each_part_against_eager(tmp_path):
    out = bench(tmp_path, "limits")
    assert "--tiny" in out["command"] and set(out["results"]) == {"epoch", "step",
                                                                  "minibatch"}
    for part, settings in out["results"].items():
        [(name, result)] = settings.items()
        rows = result["variants"]
        assert rows["eager"]["outcome"] == "ok", (part, rows["eager"])
        for variant, row in rows.items():
            assert row["outcome"] == "ok", (part, name, variant, row["outcome"])
            assert number(row["median_ms"]) and interval(row["ci95_ms"])
            if variant != "eager":
                assert number(row["speedup"]["speedup"])
                assert interval(row["speedup"]["speedup_ci95"])
                assert row["speedup"]["level"] == "epochs"  # one round: within-process
        goal = result["goal"]  # the best variant against the part's goal, met or not
        assert goal["best"] in rows and isinstance(goal["met"], bool)
        assert goal["met"] or goal["missed_by"] > 0
        if part == "step":  # a millisecond goal: the step's floor beside it
            assert interval(result["floor"]["ms"]) and interval(result["floor"]["share"])
        else:  # a speedup goal: what bounds it, from the same runs' stage times
            assert "at most" in result["bound"] or "needs an epoch" in result["bound"]
    minibatch = next(iter(out["results"]["minibatch"].values()))
    assert minibatch["goal"]["best"] != "eager tf32 prefetch"  # a control, never the best
    alone = minibatch["compile_alone"]["compiled tf32 prefetch"]
    assert alone["over"] == "eager tf32 prefetch" and number(alone["speedup"])


@pytest.mark.slow
def test_profile_step_profiles_cpu_ops_and_says_why_it_skips_the_captured_step(tmp_path):
    out = bench(tmp_path, "profile_step", "--cases", "dataset=cora", "--models", "gcn")
    assert out["activity"] == "cpu" and "no ATen ops" in out["note"]
    rows = {r["variant"]: r for r in out["rows"]}
    assert list(rows) == ["eager", "model reduce-overhead", "step reduce-overhead",
                          "step csr-op tf32"]
    assert all("needs CUDA" in rows[v]["skipped"] for v in ("step reduce-overhead",
                                                            "step csr-op tf32"))
    for variant in ("eager", "model reduce-overhead"):
        row = rows[variant]
        assert all(number(row[k]) and row[k] > 0 for k in (
            "wall_ms", "profiled_wall_ms", "ops_per_step", "cpu_op_ms", "cpu_op_share"))
        assert row["top_ops"] and all(number(op["ms_per_step"]) and op["op"].startswith(
            "aten::") for op in row["top_ops"])
        assert interval(row["floor"]["ms"]) and interval(row["floor"]["share"])


def test_profile_step_composes_each_model_of_a_preset_case(tmp_path):
    """The cases of the README's command: a dataset takes `model=`, a preset is swapped
    for the model's own; --tiny shrinks only generated graphs."""
    args = profile_step.parse_args(["--tiny", "--device", "cpu", "--data-dir", str(tmp_path)])
    assert (args.steps, args.warmup) == (3, 3)
    sage = config.compose_config(profile_step.overrides_of("experiment=synthetic-arxiv-gcn",
                                                           "sage", args))
    assert (sage.model.name, sage.dataset.name, sage.dataset.num_nodes) == (
        "sage", "synthetic-arxiv", 2000)
    cora = config.compose_config(profile_step.overrides_of("dataset=cora", "sage", args))
    assert (cora.model.name, cora.dataset.name, cora.train.device) == ("sage", "cora", "cpu")


ARXIV_BATCHES = ("workload=synthetic-arxiv train.batching=neighbor train.fanouts=[15,10,5] "
                 "model.batch_norm=false")


def test_profile_step_composes_a_case_of_several_overrides(tmp_path):
    """A case of several overrides takes `model=` unless it names one (or a preset); --tiny
    shrinks its generated graph too; a case the checks refuse ends in one line naming it."""
    args = profile_step.parse_args(["--tiny", "--device", "cpu", "--data-dir", str(tmp_path)])
    arxiv = config.compose_config(profile_step.overrides_of(ARXIV_BATCHES, "sage", args))
    assert (arxiv.model.name, arxiv.dataset.name, arxiv.dataset.num_nodes) == (
        "sage", "synthetic-arxiv", 2000)
    assert (arxiv.train.batching, list(arxiv.train.fanouts), arxiv.model.batch_norm) == (
        "neighbor", [15, 10, 5], False)
    products = config.compose_config(profile_step.overrides_of("workload=synthetic-products",
                                                               "sage", args))
    assert (products.model.name, products.train.batching) == ("sage", "neighbor")
    own = profile_step.overrides_of("dataset=cora model=gat train.batching=neighbor "
                                    "train.fanouts=[10,5]", "sage", args)
    assert config.compose_config(own).model.name == "gat" and "model=sage" not in own
    for variant in ("compiled tf32", "eager tf32"):  # TF32 with neighbour batches passes
        cfg = profile_step.compose("workload=synthetic-products", "sage", variant, args)
        assert cfg.train.precision == "tf32"
    with pytest.raises(SystemExit, match=r"^--cases .* model=sage.*\(model.num_layers=3\)$"):
        profile_step.compose("workload=synthetic-arxiv train.batching=neighbor", "sage",
                             "eager", args)
    with pytest.raises(SystemExit, match="synthetic-arxivv.* Available options.* cora "):
        profile_step.compose("workload=synthetic-arxivv", "sage", "eager", args)


def test_profile_step_replays_the_runners_neighbour_batches(tmp_path, capsys):
    """A tiny neighbour-batch case, eager, in this process: the step's wall time and ops
    beside sampling and gathering one batch on their own, and no floor (floor.py counts
    none for batches)."""
    out = tmp_path / "profile.json"
    profile_step.main(["--tiny", "--device", "cpu", "--cases", ARXIV_BATCHES, "--models",
                       "sage", "--variants", "eager", "--data-dir", str(tmp_path / "data"),
                       "--out", str(out)])
    printed = capsys.readouterr().out
    assert "floor: not counted for neighbour batches" in printed and "sampling" in printed
    [row] = json.loads(out.read_text())["rows"]
    assert row["case"] == "sage/synthetic-arxiv" and row["overrides"] == ARXIV_BATCHES
    assert row["batching"] == "neighbor" and row["batches"] == 6 and "floor" not in row
    for key in ("wall_ms", "ops_per_step", "cpu_op_ms", "sample_ms", "gather_ms",
                "nodes_per_batch", "edges_per_batch"):
        assert number(row[key]) and row[key] > 0, key
    assert row["fanouts"] == [15, 10, 5] and row["top_ops"]


@pytest.mark.slow
def test_profile_step_compiles_a_neighbour_batch_step(tmp_path):
    out = bench(tmp_path, "profile_step", "--cases", "workload=synthetic-products", "--models",
                "sage", "--variants", "compiled,compiled tf32")
    for row in out["rows"]:
        assert row["batching"] == "neighbor" and "floor" not in row
        assert all(number(row[k]) and row[k] > 0 for k in ("wall_ms", "ops_per_step",
                                                           "sample_ms", "gather_ms"))


@pytest.mark.parametrize("command", DOCUMENTED, ids=lambda c: c[len("python -m gnnbench."):])
def test_every_documented_benchmark_command_parses_today(command):
    """A reader copies these commands from the READMEs: each names a module that exists and
    only flags it still takes."""
    _, _, module, *args = shlex.split(command)
    importlib.import_module(module).parse_args(args)


def test_a_goal_is_met_only_by_its_whole_interval_and_none_without_one():
    from gnnbench.benchmarks import limits

    def row(ms, low, high, ci=(None, None)):
        speedup = limits.RoundsSpeedup(speedup=ms, speedup_ci95=list(ci), level="runs",
                                       n_eager=3, n=3)
        return limits.Row(outcome="ok", n=3, median_ms=ms, ci95_ms=[low, high],
                          speedup=speedup)

    rows = {"a": row(2.4, 2.3, 2.6, ci=(1.9, 2.2)), "b": row(2.45, 2.4, 2.5)}
    fast = limits.verdict(("ms", 2.5), rows)  # best point estimate, interval crosses 2.5
    assert fast.best == "a" and fast.met is False and fast.missed_by < 1
    assert limits.verdict(("speedup", 2.0), rows).met is False  # 2.45x, but no interval
    assert limits.verdict(("speedup", 1.8), {"a": rows["a"]}).met is True
    assert limits._bounds((None, None)) == "[no CI]"
    crossing = limits.RoundsSpeedup(speedup=1.3, speedup_ci95=[0.84, 2.01], level="runs",
                                    n_eager=8, n=8)
    assert limits._interval(crossing).endswith(": no measurable difference")
    assert "no measurable" not in limits._interval(rows["a"].speedup)  # [1.9-2.2]


def test_limits_bounds_a_speedup_goal_by_the_stages_it_measured():
    """Neighbour batches: an epoch takes at least the longer of sampling and the step, so
    eager's epoch over that is the most any variant can reach; whole epochs: the goal's
    epoch time against the train step alone. A subset of variants keeps eager."""
    from gnnbench.benchmarks import limits

    def row(ms, **stages):
        return limits.Row(outcome="ok", n=4, median_ms=ms, stages_ms=stages)

    rows = {"eager": row(100.0, train_ms=100.0, sample_ms=20.0, transfer_ms=5.0,
                         compute_ms=75.0),
            "fast": row(40.0, train_ms=40.0, sample_ms=10.0, compute_ms=30.0)}
    said = limits.batches_bound(rows, "fast")
    assert "sampling and gathering 25 + step 75" in said and "(2.50x eager's)" in said
    assert said.endswith("(30 ms): at most 3.33x")  # 100 / max(25, 30)
    rows = {"eager": row(2.7, train_ms=2.0), "whole-step": row(0.5, train_ms=0.16),
            "whole-epoch x10": row(0.21, train_ms=0.21)}
    said = limits.epochs_bound(rows, "whole-epoch x10", 20.0)
    assert "of 0.135 ms" in said and said.endswith("0.160 ms, more than the goal leaves "
                                                   "for the whole epoch")
    assert limits.epochs_bound({"eager": rows["eager"]}, "eager", 20.0) is None
    cases = limits.chosen_variants(limits.CASES, "compiled")
    assert list(cases["minibatch"].variants) == ["eager", "compiled"]
    assert cases["minibatch"].controls == {} and list(cases["step"].variants) == ["eager"]
    with pytest.raises(SystemExit):
        limits.parse_args(["--variants", "compiled,bogus"])


def test_profile_step_puts_the_floor_beside_each_step(tmp_path, capsys):
    """One eager step of the tiny arxiv-size GCN on the CPU, with its floor and the share of
    it reached, said to be against the CPU's wall; the final step's variant needs CUDA."""
    out = tmp_path / "profile.json"
    # In this process (eager only: nothing compiles), as the command's own main runs it.
    profile_step.main(["--tiny", "--device", "cpu", "--cases", "experiment=synthetic-arxiv-gcn",
                       "--models", "gcn", "--variants", "eager,step csr-op tf32",
                       "--data-dir", str(tmp_path / "data"), "--out", str(out)])
    printed = capsys.readouterr().out
    assert "    floor " in printed and "CPU wall" in printed
    assert "of it (floor / wall)" in printed
    eager, final = json.loads(out.read_text())["rows"]
    said = eager["floor"]
    assert interval(said["ms"]) and interval(said["bytes"]) and said["hbm_gbps"] == 4300
    assert said["peak_tflops"] == 67  # fp32
    assert said["share"] == pytest.approx([ms / eager["wall_ms"] for ms in said["ms"]])
    assert set(said["kernel_classes_ms"]) == {"gemm", "spmm", "other"}
    assert final["variant"] == "step csr-op tf32" and "needs CUDA" in final["skipped"]


def test_kernels_are_told_apart_by_name():
    """Names as the H200 profiles show them (results/h200-reference)."""
    assert {profile_step.kernel_class(name) for name in (
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3",
        "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>",
        "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT")} == {"gemm"}
    assert {profile_step.kernel_class(name) for name in (
        "void cusparse::csrmm_alg2_kernel<float>", "_spmm")} == {"spmm"}
    assert profile_step.kernel_class(
        "triton_poi_fused__native_batch_norm_legit_functional_native_dropout_backward_4"
    ) == "other"
    # Where no floor is counted, the COO aggregation is a class of its own.
    batched = profile_step.UNFLOORED_CLASSES
    coo = ("void at::native::_scatter_gather_elementwise_kernel<128, 4, ...>",
           "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long>",
           "void at::native::indexFuncLargeIndex<float, long, unsigned int>",
           "void at::native::index_elementwise_kernel<128, 4, ...>",
           "void at::native::(anonymous namespace)::indexing_backward_kernel<float>",
           "triton_poi_fused_index_add_new_zeros_0", "triton_poi_fused_index_select_1")
    assert {profile_step.kernel_class(name, batched) for name in coo} == {"gather-scatter"}
    assert {profile_step.kernel_class(name) for name in coo} == {"other"}
    assert profile_step.kernel_class("sm90_xmma_gemm_f32f32_tf32f32", batched) == "gemm"


def test_bookkeeping_measures_the_runners_own_work_per_epoch(tmp_path):
    """The runner's loop and a bare loop over stand-ins that return at once: the difference
    is the bookkeeping, per epoch and at the run's end, both finite and non-negative."""
    from gnnbench.benchmarks import bookkeeping

    path = tmp_path / "bookkeeping.json"  # in this process: the runner's loop, eager
    bookkeeping.main(["--tiny", "--device", "cpu", "--data-dir", str(tmp_path / "data"),
                      "--out", str(path)])
    out = json.loads(path.read_text())
    assert out["command"].startswith("python -m gnnbench.benchmarks.bookkeeping")
    assert (out["epochs"], out["rounds"]) == (20, 2) and len(out["per_epoch_us_rounds"]) == 2
    for key in ("bare_epoch_us", "per_epoch_us", "at_end_us", "amortised_us"):
        assert number(out[key]) and out[key] > 0, key


def test_the_stand_ins_leave_the_steps_as_they_were():
    """Measuring the bookkeeping swaps the steps and the trainer's construction for the
    length of the measurement only."""
    from gnnbench import data
    from gnnbench.benchmarks import bookkeeping
    from gnnbench.runner import loop
    from gnnbench.training import steps

    before = (steps.train_step, steps.predict, steps.split_accuracy, data.load_task,
              loop.make_trainer)
    with bookkeeping.trivial_work(torch.device("cpu")) as work:
        assert steps.train_step(None) is work.loss and not work.stamps[1:]
    assert (steps.train_step, steps.predict, steps.split_accuracy, data.load_task,
            loop.make_trainer) == before
