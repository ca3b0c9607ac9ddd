"""Is a run's timing trustworthy? A median quoted from a busy or changing machine looks
as precise as any other, so (like pyperf) every run checks its own steady epochs and the
machine it ran on, and says in one line per problem what it saw.

Thresholds (README, "Timing stability"); each was chosen against the H200 reference sweep
(120 runs, `results/h200-reference`) and the busy-machine runs that prompted the checks:

- SPREAD_MAX 0.25: IQR / median, what Gaussian noise with a coefficient of variation of
  about 18 % gives; the noisiest reference run (2.5 ms launch-bound epochs) has 0.23, the busy
  run that alternated 10-50 ms and 450-500 ms epochs had 2.6.
- DRIFT_MAX 0.10: |median of the second half - median of the first| / median. A 10 % step
  in the middle of a run is as large as many speedups gnnbench reports; 13 of the 120
  reference runs (Cora/CiteSeer, 2-3 ms launch-bound epochs) exceed it: SAGE/CiteSeer
  max-autotune seed 0, for one, steps from about 2.3 to 2.0 to 2.6 ms mid-run.
- SLOW_SHARE_MAX 0.05 of epochs slower than SLOW_FACTOR (2) x the median: a few hiccups
  (garbage collection, a page fault) move no median; a twentieth of the run means something
  else ran in bursts. The reference runs have at most 1.6 %.
- LOAD_PER_CPU_MAX 1.0: the 1-minute load average, at the start or end of the epoch loop,
  above the CPU count: more threads wanted a CPU than there were CPUs. The run's own
  threads count too, so a CPU run that uses every core is flagged when anything competes.
- RUN_MEDIANS_RATIO_MAX 1.5: across the seeds of one report row, the slowest run's median
  over the fastest's. Catches a run that sat wholly in a slow stretch (steady in itself, so
  no check above fires); the reference rows reach 1.32.

Fewer than MIN_STEADY_EPOCHS steady epochs give no timing verdict (the checks are None):
halves of two epochs have no median worth comparing.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence

from gnnbench.measure.stats import summarize

SPREAD_MAX = 0.25
DRIFT_MAX = 0.10
SLOW_FACTOR = 2.0
SLOW_SHARE_MAX = 0.05
LOAD_PER_CPU_MAX = 1.0
RUN_MEDIANS_RATIO_MAX = 1.5
MIN_STEADY_EPOCHS = 6

THRESHOLDS = {"spread": SPREAD_MAX, "drift": DRIFT_MAX, "slow_factor": SLOW_FACTOR,
              "slow_share": SLOW_SHARE_MAX, "load_per_cpu": LOAD_PER_CPU_MAX,
              "min_steady_epochs": MIN_STEADY_EPOCHS}

# NVML's clock-event (throttle) reasons that mean the GPU slowed itself down. A software
# power cap is left out: it is the normal state of a busy GPU and holds for the whole run.
SLOWDOWNS = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
             "hw_power_brake_slowdown")
_NVML_REASONS = {"gpu_idle": "GpuIdle", "applications_clocks": "ApplicationsClocksSetting",
                 "sw_power_cap": "SwPowerCap", "hw_slowdown": "HwSlowdown",
                 "sync_boost": "SyncBoost", "sw_thermal_slowdown": "SwThermalSlowdown",
                 "hw_thermal_slowdown": "HwThermalSlowdown",
                 "hw_power_brake_slowdown": "HwPowerBrakeSlowdown"}


def _gpu_state(device: object) -> dict | None:
    """SM clock, temperature and throttle reasons from NVML, when the run is on CUDA and
    pynvml is importable; None otherwise, or if NVML fails (it is a nicety, never a cost)."""
    if getattr(device, "type", None) != "cuda":
        return None
    try:
        import pynvml
        import torch

        pynvml.nvmlInit()
        # By UUID: NVML numbers every GPU of the host, CUDA only the visible ones.
        uuid = str(torch.cuda.get_device_properties(device).uuid)
        handle = pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}".encode())
        reasons_of = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = reasons_of(handle)
        reasons = []
        for name, suffix in _NVML_REASONS.items():
            bit = getattr(pynvml, f"nvmlClocksEventReason{suffix}", None) or \
                getattr(pynvml, f"nvmlClocksThrottleReason{suffix}", 0)
            if mask & bit:
                reasons.append(name)
        return {"sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                "max_sm_clock_mhz": pynvml.nvmlDeviceGetMaxClockInfo(handle,
                                                                     pynvml.NVML_CLOCK_SM),
                "temperature_c": pynvml.nvmlDeviceGetTemperature(handle,
                                                                 pynvml.NVML_TEMPERATURE_GPU),
                "throttle_reasons": reasons}
    except Exception:  # no pynvml, no NVML, an old driver: the load check still stands
        return None


def machine_state(device: object = None) -> dict:
    """What else the machine was doing, sampled at the start and end of the epoch loop:
    the 1-minute load average against the CPU count (None where the OS has no load
    average), and on CUDA with pynvml the GPU's clock and throttle reasons."""
    try:
        load: float | None = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = None
    state = {"load_1min": load, "cpu_count": os.cpu_count()}
    gpu = _gpu_state(device)
    if gpu is not None:
        state.update(gpu=gpu)
    return state


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _timing_checks(steady_s: Sequence[float]) -> tuple[dict, list[str]]:
    if len(steady_s) < MIN_STEADY_EPOCHS:
        return {"steady_epochs": len(steady_s), "spread": None, "drift": None,
                "slow_share": None}, []
    median = statistics.median(steady_s)
    if median <= 0:
        return {"steady_epochs": len(steady_s), "spread": None, "drift": None,
                "slow_share": None}, []
    iqr = summarize(steady_s)["iqr"]
    half = len(steady_s) // 2
    first, second = statistics.median(steady_s[:half]), statistics.median(steady_s[-half:])
    slow = sum(s > SLOW_FACTOR * median for s in steady_s)
    spread, drift, slow_share = iqr / median, (second - first) / median, slow / len(steady_s)
    warnings = []
    if spread > SPREAD_MAX:
        warnings.append(
            f"spread: epoch-time IQR {_ms(iqr)} is {spread:.0%} of the median {_ms(median)} "
            f"(threshold {SPREAD_MAX:.0%}): the median is not a stable number on this machine")
    if abs(drift) > DRIFT_MAX:
        warnings.append(
            f"drift: the median epoch went from {_ms(first)} in the first half of the steady "
            f"epochs to {_ms(second)} in the second, {abs(drift):.0%} of the run's "
            f"median (threshold {DRIFT_MAX:.0%}): the machine's speed changed during the run")
    if slow_share > SLOW_SHARE_MAX:
        warnings.append(
            f"slow epochs: {slow} of {len(steady_s)} steady epochs ({slow_share:.0%}) took "
            f"over {SLOW_FACTOR:g}x the median (threshold {SLOW_SHARE_MAX:.0%}): something "
            "else ran in bursts")
    return {"steady_epochs": len(steady_s), "spread": spread, "drift": drift,
            "slow_share": slow_share}, warnings


def _load_per_cpu(state: Mapping) -> float:
    return state["load_1min"] / state["cpu_count"]


def _machine_checks(start: Mapping | None, end: Mapping | None) -> tuple[dict, list[str]]:
    warnings = []
    loads = [(when, s) for when, s in (("start", start), ("end", end))
             if s and s.get("load_1min") is not None and s.get("cpu_count")]
    load_per_cpu = None
    if loads:
        when, worst = max(loads, key=lambda item: _load_per_cpu(item[1]))
        load_per_cpu = _load_per_cpu(worst)
        if load_per_cpu > LOAD_PER_CPU_MAX:
            warnings.append(
                f"machine load: 1-min load average {worst['load_1min']:.1f} on "
                f"{worst['cpu_count']} CPUs at the {when} of training (threshold "
                f"{LOAD_PER_CPU_MAX:g} per CPU; this run's own threads count too): other "
                f"processes competed for the CPU")
    checks: dict = {"load_per_cpu": load_per_cpu}
    gpu = (end or {}).get("gpu")
    if gpu:
        slowed = [r for r in gpu["throttle_reasons"] if r in SLOWDOWNS]
        checks.update(gpu_slowdowns=slowed)
        if slowed:
            warnings.append(
                f"gpu: clocks slowed at the end of training ({', '.join(slowed)}; SM "
                f"{gpu['sm_clock_mhz']} of {gpu['max_sm_clock_mhz']} MHz, "
                f"{gpu['temperature_c']} C)")
    return checks, warnings


def assess(steady_s: Sequence[float], start: Mapping | None = None,
           end: Mapping | None = None) -> dict:
    """The verdict on one run: `steady_s` are its train times after the warm-up, `start`
    and `end` its `machine_state` around the epoch loop (None: not sampled, e.g. a record
    written before these checks). `ok` is False when any warning fired."""
    timing, warnings = _timing_checks(list(steady_s))
    machine, machine_warnings = _machine_checks(start, end)
    warnings += machine_warnings
    return {"ok": not warnings, "warnings": warnings, "checks": {**timing, **machine},
            "thresholds": dict(THRESHOLDS), "machine": {"start": start, "end": end}}


def across_runs(medians: Mapping[str, float]) -> list[str]:
    """A warning when the runs of one setting and variant (seeds) disagree: each can be
    steady in itself while one sat wholly in a slow stretch of the machine."""
    if len(medians) < 2:
        return []
    fast = min(medians, key=medians.__getitem__)
    slow = max(medians, key=medians.__getitem__)
    ratio = medians[slow] / medians[fast]
    if ratio <= RUN_MEDIANS_RATIO_MAX:
        return []
    return [f"runs disagree: median epoch {_ms(medians[fast])} ({fast}) to "
            f"{_ms(medians[slow])} ({slow}), {ratio:.1f}x apart (threshold "
            f"{RUN_MEDIANS_RATIO_MAX:g}x): a run sat in a slow stretch of the machine"]
