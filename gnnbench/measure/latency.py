"""Latency of requests, as a service's users see it: percentiles (p50, p95, p99, max) with
bootstrap intervals, and the arrival times of an open loop.

A tail percentile from a few hundred requests is itself uncertain (p99 of 100 requests is
the second-slowest one), so each comes with the interval a bootstrap over the requests
gives; a reader sees how far to trust it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PERCENTILES = (50, 95, 99)


def latency_summary(seconds: Sequence[float], resamples: int = 1000, seed: int = 0) -> dict:
    """p50, p95, p99 (ms, linear interpolation), each with a 95 % percentile-bootstrap
    interval over the requests, the slowest, the mean and how many requests."""
    values = np.asarray(seconds, dtype=float) * 1e3
    if values.size == 0:
        return {"n": 0}
    draws = np.random.default_rng(seed).choice(values, size=(resamples, values.size))
    out: dict = {"n": int(values.size), "mean_ms": float(values.mean()),
                 "max_ms": float(values.max())}
    for q in PERCENTILES:
        boot = np.percentile(draws, q, axis=1)
        out[f"p{q}_ms"] = float(np.percentile(values, q))
        out[f"p{q}_ci_ms"] = [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))]
    return out


def poisson_arrivals(rate: float, count: int, seed: int = 0) -> list[float]:
    """`count` arrival times (seconds from the start) of requests arriving at `rate` per
    second on average, independently (exponential gaps): an open loop's load, which does
    not wait for the service the way a closed loop's next request does."""
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=count)
    return np.cumsum(gaps).tolist()
