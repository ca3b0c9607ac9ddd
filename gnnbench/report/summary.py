"""The few lines a run prints when it ends."""

from __future__ import annotations

from gnnbench.config import variant_label
from gnnbench.records import identity
from gnnbench.records.model import Batching, Comparison, Record, Speedup, Spread, Timing
from gnnbench.report import sites

# Why a paired run has no whole-epoch speedup: the console and the report say it alike.
PAIRED_EPOCH = "an epoch of a paired run holds both models' work"


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.2f} ms"


def _bytes(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.1f} MiB"


def _shapes(result: Record) -> list[str]:
    """Batches of whole graphs and heterogeneous graphs: the shapes the model met."""
    sh = result.shapes
    if sh is None:
        return []
    line = (f"  shapes ({sh.policy}): {sh.distinct_shapes} distinct over {sh.calls} calls, "
            f"padding {100 * (sh.padding_share or 0):.1f} % of rows and edges")
    if sh.recompiles_per_epoch is not None:
        line += f"; recompilations per epoch {sh.recompiles_per_epoch[:10]}" + (
            " ..." if len(sh.recompiles_per_epoch) > 10 else "")
    lines = [line]
    if sh.recompile_limit_hit:
        lines.append(f"  warning: dynamo's recompile limit ({sh.recompile_limit}) was hit: "
                     f"{sh.recompile_limit_hits[0] if sh.recompile_limit_hits else ''}")
    return lines


def format_summary(result: Record, where: str | None = None) -> str:
    cfg = result.config
    device = (result.env.device if result.env else None) or "n/a"
    lines = [f"gnnbench {result.name}: {cfg.model.name} on {cfg.dataset.name}, "
             f"{variant_label(cfg.as_dict)}, device {device} -> status {result.status}"]
    if result.reason:
        lines.append(f"  reason: {result.reason}")
    t = result.timing or Timing()
    if t.train_s is not None:
        step, ev = t.train_s, t.eval_s
        batching = result.batching or Batching()
        unit = "train step" if batching.mode == "full" else "train epoch"
        if t.timed_epochs:  # one graph per group: train and eval not timed apart
            lines.append(f"  train step and eval: median {_ms(step.median)} per epoch (IQR "
                         f"{_ms(step.iqr)}, n={step.n} groups of {t.timed_epochs} epochs "
                         f"timed as one, after {t.warmup_epochs} warm-up epochs)")
        else:
            lines.append(f"  {unit}: median {_ms(step.median)} (IQR {_ms(step.iqr)}, "
                         f"n={step.n} epochs after {t.warmup_epochs} warm-up); "
                         f"eval: median {_ms(ev.median)}")
        # Right under the number they qualify: a quoted median from an unstable run misleads.
        lines += [f"  warning: {w}" for w in (result.stability.warnings
                                              if result.stability else [])]
        if t.has("sample_s"):
            stage = {name: Spread.model_validate(t.get(f"{name}_s"))
                     for name in ("sample", "transfer", "compute")}
            workers = batching.get("loader_workers")
            ahead = f", {workers} prefetching worker(s)" if workers else ""
            lines.append(f"  per epoch ({batching.get('batches_per_epoch')} batches, "
                         f"{batching.get('sampler')} sampler{ahead}): sampling "
                         f"{_ms(stage['sample'].median)}, transfer "
                         f"{_ms(stage['transfer'].median)}, compute "
                         f"{_ms(stage['compute'].median)}")
        lines += _ranks(result)
        first = f"  first epoch: {t.first_epoch_s:.2f} s"
        if t.compile_overhead_s is not None:
            first += f"; compile overhead {t.compile_overhead_s:.2f} s"
        if t.get("bookkeeping_s"):  # the runner's own work between epochs, untimed
            first += ("; runner's own work per epoch: median "
                      f"{_ms(Spread.model_validate(t.get('bookkeeping_s')).median)}")
        lines.append(first)
    if result.compile:
        c = result.compile
        breaks = f"{c.graph_breaks} graph break(s)"
        expected = c.get("expected_graph_breaks") or 0
        if expected:
            breaks += (f" ({'all' if expected == c.graph_breaks else expected} expected: "
                       f"{c.get('expected_why')})")
        lines.append(f"  dynamo: {c.graphs} graph(s), {breaks}, "
                     f"{c.recompiles} recompilation(s); CUDA graphs: {result.cuda_graphs}")
    lines += _shapes(result)
    lines += sites.run_lines(result)  # a model of the user's own: where, in its code
    if result.accuracy:
        a = result.accuracy
        lines.append(f"  accuracy: test {a.test_at_best_val:.4f} at best val "
                     f"{a.best_val:.4f} (epoch {a.best_epoch}); final test "
                     f"{a.final.get('test'):.4f}")
        if a.near_chance:
            lines.append(f"  warning: test accuracy {a.test_at_best_val:.4f} is near chance "
                         f"(the commonest class is {a.chance:.4f} of the test split): the "
                         "model did not learn, so its timings are of a model nobody would train")
    if result.memory:
        m = result.memory
        lines.append(f"  peak memory: {_bytes(m.peak_bytes)} ({m.get('kind')})")
    lines.append(f"  wall time {t.wall_s or 0:.1f} s" + (f"; results: {where}" if where else ""))
    lines += _answer(result) + _scaling(result)
    return "\n".join(lines)


def _ranks(result: Record) -> list[str]:
    """A DDP run: its ranks, throughput, and each rank's split of the epoch."""
    d, t = result.distributed, result.timing or Timing()
    if not d or t.ranks is None:
        return []
    throughput = t.throughput_nodes_per_s
    started = f"  DDP: {d.world_size} rank(s), {d.get('backend')}, started by {d.get('launcher')}"
    lines = [f"{started}; throughput {throughput:,.0f} training nodes/s" if throughput else started]
    for rank in t.ranks:
        stage = {name: Spread.model_validate(rank.get(f"{name}_s"))
                 for name in ("train", "sample", "transfer", "compute")}
        lines.append(f"    rank {rank.get('rank')}: train {_ms(stage['train'].median)} = sampling "
                     f"{_ms(stage['sample'].median)} + transfer {_ms(stage['transfer'].median)} "
                     f"+ compute {_ms(stage['compute'].median)} (medians)")
    return lines


def _scaling(result: Record) -> list[str]:
    """A DDP run on N > 1 ranks: how it stands against the same setting on one."""
    ranks = identity.record_world_size(result)
    if ranks <= 1 or result.status != "ok":
        return []
    c = result.scaling
    if not c:
        return ["  scaling: no world_size=1 run of this setting, variant and seed found; run "
                "the same command with train.world_size=1 first (same folder)"]
    low, high = c.efficiency_ci95
    ci = f" [95% CI {low:.2f}–{high:.2f}]" if low is not None else ""
    return [f"  => {c.speedup:.2f}x the epoch on {c.get('reference_world_size')} rank against "
            f"{c.get('reference')}: scaling efficiency {c.efficiency:.2f}{ci} on {ranks} ranks"]


def _answer(result: Record) -> list[str]:
    """The line a compiled run is for: how much faster than eager, with its CI, when it pays
    back, and whether it learns the same; or where an eager reference would come from."""
    cfg = result.config
    if not (cfg.compile or cfg.capture) or result.status != "ok":
        return []
    c = result.comparison
    pending = result.get("reference_pending")
    if not c and pending:
        return [f"  speedup: its eager run ({pending}) had not finished "
                "when this run did; the sweep's report compares them"]
    if not c:
        searched = ", ".join(result.get("reference_search") or []) or "no folder"
        return [f"  speedup: no eager run of this setting and seed found (searched {searched});"
                " run the same command with compile=false first, or add train.paired=true"]
    refs = c.reference_runs
    flagged = [(r.get("name"), ", ".join(r.get("flags"))) for r in refs if r.get("flags")]
    against = c.reference + (
        f" ({flagged[0][1]})" if len(refs) == 1 and flagged else
        f" ({'; '.join(f'{name}: {flags}' for name, flags in flagged)})" if flagged else "")
    first, others = _headline(c)
    lines = [f"  => {first} against {against}; " + "".join(f"{o}; " for o in others)
             + _paying(c) + f"; test accuracy {c.test_acc_delta:+.4f} vs eager"]
    if c.interval is not None and c.interval.level == "epochs":
        lines.append("  note: one run a side, so the interval covers epoch-to-epoch noise in "
                     "one process only; run-to-run variance (processes differ by far more) "
                     "was not measured: run several seeds (-m train.seed=0,1,2) of both, or "
                     "add train.paired=true to each")
    for note in c.reference_notes:
        lines.append(f"  warning: {note}" + ("; add train.paired=true to train an eager twin "
                                             "in the same process" if "unstable" in note else ""))
    return lines


def _ci(c: Speedup) -> str:
    low, high = c.speedup_ci95
    return f"95% CI {low:.2f}–{high:.2f}" if low is not None else "too few epochs for a CI"


def _headline(c: Comparison) -> tuple[str, list[str]]:
    """The train step's answer, and the other measures: a ratio whose interval contains
    1.0 is "no measurable difference", never a speedup."""
    what = "train step"
    if c.get("timed_epochs"):  # epochs timed in groups: train and eval in one graph
        what = f"train step and eval (epochs timed in groups of {c.get('timed_epochs')})"
    if c.measurable is False:
        first = f"no measurable difference in the {what} ({c.speedup:.2f}x, {_ci(c)})"
    else:
        first = f"{c.speedup:.2f}x the eager {what} [{_ci(c)}]"
    others = []
    for m, what in ((c.inference, "inference"), (c.epoch, "whole epoch")):
        if m:
            others.append(f"{what} no measurable difference" if m.measurable is False
                          else f"{what} {m.speedup:.2f}x")
    if c.end_to_end:
        others.append("end to end (data, compile, every epoch) "
                      f"{c.end_to_end.get('speedup'):.2f}x")
    if c.reference == "paired eager twin":  # said, so its absence is not a failure
        others.append(f"no whole-epoch figure ({PAIRED_EPOCH})")
    return first, others


def _paying(c: Comparison) -> str:
    """When compiling paid back, measured from the epochs where it did, else projected."""
    measured = [(state, found) for state, found in c.pays_back.items()
                if found.never < found.runs]
    if measured:
        return "; ".join(f"compiling paid back after {found.median_epoch:.0f} epochs "
                         f"({state if state != 'not recorded' else 'cache state not recorded'}"
                         f"{' cache' if state in ('cold', 'warm', 'mixed') else ''})"
                         for state, found in measured)
    if c.break_even_epochs is not None:
        return f"compiling pays back after {c.break_even_epochs:.0f} epochs (projected)"
    return "compiling never pays back here"
