"""The report's "Serving" section: each serving run's cases (variant, batch size) with the
closed loop's percentiles, the open loop's tail at its rate, shapes and recompilations;
from the records `python -m gnnbench.serve` wrote. Training rows never include them."""

from __future__ import annotations

from gnnbench.records.model import Record


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def serving_markdown(runs: list[Record]) -> str | None:
    runs = [r for r in runs if r.serving is not None]
    if not runs:
        return None
    lines = ["## Serving", "", "Latency per request (sampling its neighbourhood included), ms; "
             "closed loop: p50 [95 % interval], p95, p99, max; open loop: requests arriving at "
             "the rate shown (Poisson).", "",
             "| run | weights | variant | batch | p50 | p95 | p99 | max | req/s | open loop "
             "rate → p50 / p99 | shapes | recompiles | CUDA graphs recorded |",
             "|" + "---|" * 13]
    for run in sorted(runs, key=lambda r: r.name):
        for c in run.serving.cases:
            head = f"| {run.name} | {run.serving.weights} | {c.variant} | {c.batch_size} |"
            if c.status != "ok" or c.closed is None:
                lines.append(f"{head} {c.status}: {c.reason} |" + " |" * 8)
                continue
            lat, low_high = c.closed, c.closed.p50_ci_ms or [None, None]
            open_cell = (f"{c.open.rate_rps:.0f} → {_ms(c.open.latency.p50_ms)} / "
                         f"{_ms(c.open.latency.p99_ms)}" if c.open is not None else "–")
            lines.append(f"{head} {_ms(lat.p50_ms)} [{_ms(low_high[0])}–{_ms(low_high[1])}] | "
                         f"{_ms(lat.p95_ms)} | {_ms(lat.p99_ms)} | {_ms(lat.max_ms)} | "
                         f"{c.throughput_rps:.0f} | {open_cell} | {c.distinct_shapes} | "
                         f"{c.recompiles} | {c.cudagraph_recordings} |")
    return "\n".join(lines)
