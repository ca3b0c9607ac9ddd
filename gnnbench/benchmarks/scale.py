"""Does gnnbench keep up with big sweeps? Two waits a user sits through, each timed as the
user meets it, in a fresh process:

- the first job: from starting `python -m gnnbench -m train.seed=range(N) ...` to the line
  where Hydra names job #0 (the sweep is then stopped);
- the report: `python -m gnnbench.report DIR --no-wandb` over N records, start to exit.

    python -m gnnbench.benchmarks.scale --seeds 300,3000 --records 500,2000 \\
        --out results/cpu-scale/scale.json

The records are real ones, multiplied: the sweep of results/h200-own-gnn/cora (54 records,
18 settings x 3 seeds, its multirun.yaml and job folders) re-seeded to as many seeds as N
records need (N rounded up to whole seeds), each job in its own folder with the overrides
Hydra would have written, so the report reads them as one complete sweep. Each time is
printed with the 1-minute load average before it: on a shared machine, compare figures
taken at a similar load. `--tiny` (to check that it runs): 20 seeds, 4 records of gcn.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from gnnbench import config
from gnnbench.benchmarks import parse_with_tiny
from gnnbench.records import sweep
from gnnbench.records.model import Record, parse
from gnnbench.records.schema import SCHEMA_VERSION

SOURCE = Path(config.project_dir()) / "results" / "h200-own-gnn" / "cora"
TINY = {"seeds": "20", "records": "4", "repeats": 1, "models": "gcn"}
FIRST_JOB = re.compile(r"#0 : ")


def _load(path: Path) -> object:
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _seedless(overrides: list[str]) -> frozenset[str]:
    return frozenset(o for o in overrides if not o.startswith("train.seed="))


def make_records(out: Path, n: int, source: Path = SOURCE,
                 models: list[str] | None = None) -> int:
    """A sweep folder at `out` holding at least `n` records: `source`'s sweep with its seed
    list replaced by range(K), K the fewest seeds that give `n` (`models`: its model list
    too); every job's record is its setting's record from `source` with the seed, name and
    start time of the new job, read and written as today's records. Returns how many
    records were written."""
    multirun = _load(source / "multirun.yaml")
    task = [o for o in multirun["hydra"]["overrides"]["task"]
            if not o.startswith("train.seed=") and not (models and o.startswith("model="))]
    task += [f"model={','.join(models)}"] if models else []
    templates = {}
    for job in source.iterdir():
        if (job / "results.json").is_file():
            overrides = _seedless(_load(job / ".hydra" / "overrides.yaml"))
            if not models or any(f"model={m}" in overrides for m in models):
                # As today's gnnbench writes it: a sweep made now holds today's schema.
                today = parse(json.loads((job / "results.json").read_text())).dump()
                templates.setdefault(overrides, {**today, "schema_version": SCHEMA_VERSION})
    seeds = math.ceil(n / len(templates))
    multirun["hydra"]["overrides"]["task"] = [*task, f"train.seed=range({seeds})"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "multirun.yaml").write_text(yaml.safe_dump(multirun, sort_keys=False))
    jobs = sweep.planned_jobs(out / "multirun.yaml")
    for num, overrides in enumerate(jobs):
        seed = int(next(o for o in overrides if o.startswith("train.seed=")).split("=")[1])
        record = Record.model_validate(copy.deepcopy(templates[_seedless(overrides)]))
        record.config.train.seed = seed
        record.name = f"{record.name.rsplit('-s', 1)[0]}-s{seed}"
        if record.started_at is not None:
            record.started_at += seed
        job = out / f"{num}_{record.name}"
        (job / ".hydra").mkdir(parents=True, exist_ok=True)
        (job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
        (job / "results.json").write_text(json.dumps(record.dump()))
    return len(jobs)


def _sizes(text: str) -> list[int]:
    """"300,3000" -> [300, 3000]; "" -> [] (that part not measured)."""
    return [int(v) for v in text.split(",") if v.strip()]


def _load_average() -> float:
    return os.getloadavg()[0]


def time_first_job(seeds: int, device: str, workdir: Path, limit_s: float) -> float | None:
    """Seconds from starting a sweep over `seeds` seeds to the line naming its job #0; None
    when that line had not come after `limit_s` seconds (the sweep is stopped either way)."""
    args = [sys.executable, "-m", "gnnbench", "-m", f"train.seed=range({seeds})",
            "train.epochs=12", "train.warmup_epochs=1", f"train.device={device}",
            "wandb.mode=disabled", f"hydra.sweep.dir={workdir / f'sweep-{seeds}'}"]
    started = time.perf_counter()
    proc = subprocess.Popen(args, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    timer = threading.Timer(limit_s, os.killpg, (proc.pid, signal.SIGKILL))
    timer.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if FIRST_JOB.search(line):
                return time.perf_counter() - started
        if time.perf_counter() - started >= limit_s:
            return None
        raise RuntimeError(f"the sweep ended without starting a job:\n{''.join(lines)[-2000:]}")
    finally:
        timer.cancel()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def time_report(folder: Path, out: Path) -> float:
    """Seconds `python -m gnnbench.report` takes over `folder`, start to exit."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gnnbench.report", str(folder), "--no-wandb",
                           "--out", str(out)], capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"the report failed:\n{proc.stderr[-2000:]}")
    return elapsed


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="300,3000",
                        help="sweep sizes to time to the first job (comma-separated; empty: "
                             "none)")
    parser.add_argument("--records", default="500,2000",
                        help="record counts to time the report over (comma-separated; "
                             "empty: none)")
    parser.add_argument("--limit-s", type=float, default=600,
                        help="give up waiting for a sweep's first job after this long")
    parser.add_argument("--repeats", type=int, default=2, help="times each measurement runs")
    parser.add_argument("--device", default="cpu", help="train.device of the sweep's jobs")
    parser.add_argument("--source", type=Path, default=SOURCE,
                        help="the sweep folder whose records are multiplied")
    parser.add_argument("--models", help="narrow the source sweep to these models "
                                         "(comma-separated; default: all of its models)")
    parser.add_argument("--tiny", action="store_true",
                        help="20 seeds, 4 records of one model, one repeat")
    parser.add_argument("--out", type=Path)
    return parse_with_tiny(parser, TINY, argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    first_job, report = [], []
    with tempfile.TemporaryDirectory(prefix="gnnbench-scale-") as tmp:
        work = Path(tmp)
        for seeds in _sizes(args.seeds):
            for _ in range(args.repeats):
                load = _load_average()
                seconds = time_first_job(seeds, args.device, work, args.limit_s)
                first_job.append({"seeds": seeds, "seconds": seconds, "load_1min": load,
                                  "limit_s": args.limit_s})
                said = f"{seconds:6.2f} s" if seconds is not None else \
                    f"more than {args.limit_s:.0f} s"
                print(f"sweep of {seeds:5d} seeds: first job after {said} (load {load:.1f})",
                      flush=True)
        for n in _sizes(args.records):
            folder = work / f"records-{n}"
            written = make_records(folder, n, args.source,
                                   args.models.split(",") if args.models else None)
            for _ in range(args.repeats):
                load = _load_average()
                seconds = time_report(folder, work / f"report-{n}")
                report.append({"records": written, "seconds": seconds,
                               "ms_per_record": seconds / written * 1e3, "load_1min": load})
                print(f"report over {written:5d} records: {seconds:6.2f} s, "
                      f"{seconds / written * 1e3:.2f} ms a record (load {load:.1f})", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        command = "python -m gnnbench.benchmarks.scale " + " ".join(argv or sys.argv[1:])
        args.out.write_text(json.dumps({
            "command": command.strip(), "args": {k: str(v) for k, v in vars(args).items()},
            "cpus": os.cpu_count(), "python": sys.version.split()[0],
            "first_job": first_job, "report": report}, indent=2) + "\n")


if __name__ == "__main__":
    main()
