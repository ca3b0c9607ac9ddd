"""The few lines a run prints when it ends."""

from __future__ import annotations

from gnnbench.config import variant_label

# Why a paired run has no whole-epoch speedup: the console and the report say it alike.
PAIRED_EPOCH = "an epoch of a paired run holds both models' work"


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.2f} ms"


def _bytes(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.1f} MiB"


def format_summary(result: dict, where: str | None = None) -> str:
    cfg = result["config"]
    device = (result.get("env") or {}).get("device") or "n/a"
    lines = [f"gnnbench {result['name']}: {cfg['model']['name']} on {cfg['dataset']['name']}, "
             f"{variant_label(cfg)}, device {device} -> status {result['status']}"]
    if result["reason"]:
        lines.append(f"  reason: {result['reason']}")
    t = result.get("timing") or {}
    if "train_step_s" in t:
        step, ev = t["train_step_s"], t["eval_s"]
        unit = "train step" if (result.get("batching") or {}).get("mode") == "full" else \
            "train epoch"
        lines.append(f"  {unit}: median {_ms(step['median'])} (IQR {_ms(step['iqr'])}, "
                     f"n={step['n']} epochs after {t['warmup_epochs']} warm-up); "
                     f"eval: median {_ms(ev['median'])}")
        # Right under the number they qualify: a quoted median from an unstable run misleads.
        lines += [f"  warning: {w}" for w in (result.get("stability") or {}).get("warnings", [])]
        if "sample_s" in t:
            b = result["batching"]
            lines.append(f"  per epoch ({b['batches_per_epoch']} batches, {b['sampler']} "
                         f"sampler): sampling {_ms(t['sample_s']['median'])}, transfer "
                         f"{_ms(t['transfer_s']['median'])}, compute "
                         f"{_ms(t['compute_s']['median'])}")
        lines += _ranks(result)
        first = f"  first epoch: {t['first_epoch_s']:.2f} s"
        if t.get("compile_overhead_s") is not None:
            first += f"; compile overhead {t['compile_overhead_s']:.2f} s"
        lines.append(first)
    if result.get("compile"):
        c = result["compile"]
        breaks = f"{c['graph_breaks']} graph break(s)"
        expected = c.get("expected_graph_breaks") or 0
        if expected:
            breaks += (f" ({'all' if expected == c['graph_breaks'] else expected} expected: "
                       f"{c['expected_why']})")
        lines.append(f"  dynamo: {c['graphs']} graph(s), {breaks}, "
                     f"{c['recompiles']} recompilation(s); CUDA graphs: {result['cuda_graphs']}")
    if result.get("accuracy"):
        a = result["accuracy"]
        lines.append(f"  accuracy: test {a['test_at_best_val']:.4f} at best val "
                     f"{a['best_val']:.4f} (epoch {a['best_epoch']}); final test "
                     f"{a['final']['test']:.4f}")
        if a.get("near_chance"):
            lines.append(f"  warning: test accuracy {a['test_at_best_val']:.4f} is near chance "
                         f"(the commonest class is {a['chance']:.4f} of the test split): the "
                         "model did not learn, so its timings are of a model nobody would train")
    if result.get("memory"):
        m = result["memory"]
        lines.append(f"  peak memory: {_bytes(m['peak_bytes'])} ({m['kind']})")
    lines.append(f"  wall time {t.get('wall_s', 0):.1f} s"
                 + (f"; results: {where}" if where else ""))
    lines += _answer(result) + _scaling(result)
    return "\n".join(lines)


def _ranks(result: dict) -> list[str]:
    """A DDP run: its ranks, throughput, and each rank's split of the epoch."""
    d, t = result.get("distributed"), result.get("timing") or {}
    if not d or "ranks" not in t:
        return []
    throughput = t.get("throughput_nodes_per_s")
    lines = [f"  DDP: {d['world_size']} rank(s), {d['backend']}, started by {d['launcher']}; "
             f"throughput {throughput:,.0f} training nodes/s" if throughput else
             f"  DDP: {d['world_size']} rank(s), {d['backend']}, started by {d['launcher']}"]
    lines += [f"    rank {r['rank']}: train {_ms(r['train_s']['median'])} = sampling "
              f"{_ms(r['sample_s']['median'])} + transfer {_ms(r['transfer_s']['median'])} "
              f"+ compute {_ms(r['compute_s']['median'])} (medians)" for r in t["ranks"]]
    return lines


def _scaling(result: dict) -> list[str]:
    """A DDP run on N > 1 ranks: how it stands against the same setting on one."""
    cfg = result["config"]
    ranks = cfg["train"].get("world_size", 1) if cfg["train"].get("distributed") == "ddp" else 1
    if ranks <= 1 or result["status"] != "ok":
        return []
    c = result.get("scaling")
    if not c:
        return ["  scaling: no world_size=1 run of this setting, variant and seed found; run "
                "the same command with train.world_size=1 first (same folder)"]
    low, high = c["efficiency_ci95"]
    ci = f" [95% CI {low:.2f}–{high:.2f}]" if low is not None else ""
    return [f"  => {c['speedup']:.2f}x the epoch on {c['reference_world_size']} rank against "
            f"{c['reference']}: scaling efficiency {c['efficiency']:.2f}{ci} on {ranks} ranks"]


def _answer(result: dict) -> list[str]:
    """The line a compiled run is for: how much faster than eager, with its CI, when it pays
    back, and whether it learns the same; or where an eager reference would come from."""
    cfg = result["config"]
    if not (cfg.get("compile") or cfg.get("capture")) or result["status"] != "ok":
        return []
    c = result.get("comparison")
    if not c and result.get("reference_pending"):
        return [f"  speedup: its eager run ({result['reference_pending']}) had not finished "
                "when this run did; the sweep's report compares them"]
    if not c:
        searched = ", ".join(result.get("reference_search") or []) or "no folder"
        return [f"  speedup: no eager run of this setting and seed found (searched {searched});"
                " run the same command with compile=false first, or add train.paired=true"]
    low, high = c["speedup_ci95"]
    ci = f" [95% CI {low:.2f}–{high:.2f}]" if low is not None else " (too few epochs for a CI)"
    pays = (f"compiling pays back after {c['break_even_epochs']:.0f} epochs"
            if c["break_even_epochs"] is not None else "compiling never pays back here")
    others = "; ".join(f"{what} {c[m]['speedup']:.2f}x" for m, what in
                       (("inference", "inference"), ("epoch", "whole epoch")) if c.get(m))
    if result.get("paired"):  # said, so that its absence is not read as a failure
        others += ("; " if others else "") + f"no whole-epoch figure ({PAIRED_EPOCH})"
    return [f"  => {c['speedup']:.2f}x the eager train step{ci} against {c['reference']}; "
            + (f"{others}; " if others else "")
            + f"{pays}; test accuracy {c['test_acc_delta']:+.4f} vs eager"]
