"""Human-readable views of results: the few lines a run prints when it ends."""

from __future__ import annotations


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.2f} ms"


def _bytes(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.1f} MiB"


def variant(cfg: dict) -> str:
    if cfg["compile"] is not True:
        return "eager"
    c = cfg["compiler"]
    return (f"compile mode={c['mode']} dynamic={c['dynamic']} fullgraph={c['fullgraph']} "
            f"backend={c['backend']}")


def format_summary(result: dict, where: str | None = None) -> str:
    cfg = result["config"]
    device = result["env"]["device"] or "n/a"
    lines = [f"gnnbench {result['name']}: {cfg['model']['name']} on {cfg['dataset']['name']}, "
             f"{variant(cfg)}, device {device} -> status {result['status']}"]
    if result["reason"]:
        lines.append(f"  reason: {result['reason']}")
    t = result.get("timing") or {}
    if "train_step_s" in t:
        step, ev = t["train_step_s"], t["eval_s"]
        lines.append(f"  train step: median {_ms(step['median'])} (IQR {_ms(step['iqr'])}, "
                     f"n={step['n']} epochs after {t['warmup_epochs']} warm-up); "
                     f"eval: median {_ms(ev['median'])}")
        first = f"  first epoch: {t['first_epoch_s']:.2f} s"
        if t.get("compile_overhead_s") is not None:
            first += f"; compile overhead {t['compile_overhead_s']:.2f} s"
        lines.append(first)
    if result.get("compile"):
        c = result["compile"]
        lines.append(f"  dynamo: {c['graphs']} graph(s), {c['graph_breaks']} graph break(s), "
                     f"{c['recompiles']} recompilation(s)")
    if result.get("accuracy"):
        a = result["accuracy"]
        lines.append(f"  accuracy: test {a['test_at_best_val']:.4f} at best val "
                     f"{a['best_val']:.4f} (epoch {a['best_epoch']}); final test "
                     f"{a['final']['test']:.4f}")
    if result.get("memory"):
        m = result["memory"]
        lines.append(f"  peak memory: {_bytes(m['peak_bytes'])} ({m['kind']})")
    lines.append(f"  wall time {t.get('wall_s', 0):.1f} s"
                 + (f"; results: {where}" if where else ""))
    return "\n".join(lines)
