"""`python -m gnnbench.serve [overrides]`: inference serving with the training config's groups
(conf/serve.yaml adds the `serve` keys), recorded like a run (runner/serving.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from gnnbench import config
from gnnbench.config.compose import unique_tag
from gnnbench.records.model import Record


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _ci(latency, q: int) -> str:
    low, high = latency.get(f"p{q}_ci_ms") or (None, None)
    return f"{_ms(latency.get(f'p{q}_ms'))} [{_ms(low)}-{_ms(high)}]"


def summary(record: Record, path: str) -> str:
    """What a serving run answered: per variant and batch size, the closed loop's p50, p95,
    p99 (95 % intervals) and max, the open loop's rate and tail, shapes and recompiles."""
    device = record.env.device if record.env is not None else "?"
    lines = [f"gnnbench {record.name}: {record.config.model.name} on "
             f"{record.config.dataset.name}, serving, device {device} -> status {record.status}"]
    if record.reason:
        lines.append(f"  reason: {record.reason}")
    serving = record.serving
    if serving is not None:
        lines.append(f"  weights: {serving.weights}"
                     + (" (declared: latency does not depend on them)"
                        if serving.weights == "random" else "")
                     + f"; fan-outs {serving.fanouts}; precision {serving.precision}")
        for c in serving.cases:
            head = f"  {c.variant:15s} batch {c.batch_size:5d}"
            if c.status != "ok":
                lines.append(f"{head}  {c.status}: {c.reason}")
                continue
            lat = c.closed
            line = (f"{head}  p50 {_ci(lat, 50)} p95 {_ci(lat, 95)} p99 {_ci(lat, 99)} "
                    f"max {_ms(lat.max_ms)} ms; {c.throughput_rps:.0f} req/s")
            if c.open is not None:
                line += (f"; open loop {c.open.rate_rps:.0f} req/s: p50 "
                         f"{_ms(c.open.latency.p50_ms)}, p99 {_ms(c.open.latency.p99_ms)} ms"
                         + ("" if c.open.kept_up else " (fell behind)"))
            line += (f"; {c.distinct_shapes} shapes, {c.recompiles} recompilation(s)"
                     + (f", {c.cudagraph_recordings} CUDA graph(s) recorded"
                        if c.cudagraph_recordings else "")
                     + f", first request {_ms(c.first_request_ms)} ms"
                     + (f", bucket shapes warmed in {_ms(c.warm_shapes_ms)} ms"
                        if c.warm_shapes_ms is not None else ""))
            lines.append(line)
    lines.append(f"  results: {path}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Compose conf/serve.yaml with the overrides, serve, print the summary; 1 when the
    command or a variant failed."""
    from omegaconf import OmegaConf

    from gnnbench.runner.serving import run_name, serve

    argv = sys.argv[1:] if argv is None else argv
    try:  # the training keys and groups checked as `python -m gnnbench` checks them
        config.check_overrides([a for a in argv if not a.lstrip("+~").startswith("serve.")])
    except config.ConfigError as exc:
        print(f"gnnbench.serve: error: {exc}", file=sys.stderr)
        return 1
    try:
        cfg = config.compose_config(argv, name="serve")
    except Exception as exc:  # Hydra's composition errors: one line
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"gnnbench.serve: error: {message}", file=sys.stderr)
        return 1
    OmegaConf.set_struct(cfg, False)
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    try:
        name = run_name(cfg)
    except Exception:  # a bad name is the run's error to record
        name = "serve"
    out_dir = Path("outputs/serve") / f"{stamp}_{name}_{unique_tag()}"
    record = serve(cfg, out_dir)
    if record.input_error:
        print(f"gnnbench.serve: error: {record.reason}", file=sys.stderr)
        return 1
    print(summary(record, str(out_dir / "results.json")), flush=True)
    return 0 if record.status == "ok" else 1
