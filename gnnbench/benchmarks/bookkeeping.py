"""The runner's own bookkeeping per epoch, measured on its own, in µs.

Against a bare loop (benchmarks/overhead.py) the runner's few tens of µs drown in an
epoch's noise; here the train step, the eval forward and the accuracy read-out answer at
once, in the runner's epoch loop (runner/loop.train_epochs, with its trainer's timers and
epoch records) and in a bare loop calling the same stand-ins. What the runner takes beyond
the bare loop is its bookkeeping: timers, building the epoch's record, progress, the
divergence and signal checks between epochs, and at the run's end validating the records,
the stability checks and the summaries (reported apart, and amortised over the epochs).

    python -m gnnbench.benchmarks.bookkeeping --device cpu --epochs 200 --rounds 5 --out b.json
    python -m gnnbench.benchmarks.bookkeeping --device cpu --profile   # where it goes
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import itertools
import json
import pstats
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from gnnbench import config, data
from gnnbench.benchmarks import parse_with_tiny
from gnnbench.measure import dynamo
from gnnbench.measure.timer import synchronize
from gnnbench.records.model import new_record
from gnnbench.runner import loop
from gnnbench.training import steps

TINY = {"epochs": 20, "rounds": 2}


class StandIns:
    """The train step, the eval forward and the accuracy read-out (`steps`) as ones that
    return at once what a real epoch returns: a loss on the device, predictions, three
    accuracies. Each train step notes the time: the gaps between two are whole epochs of
    the loop that called them, with nothing in them but that loop's own work."""

    def __init__(self, device: torch.device) -> None:
        self.loss = torch.ones((), device=device)
        self.accs: dict[str, float] = {}
        self.stamps: list[int] = []
        self.real_accuracy = steps.split_accuracy

    def train_step(self, *_: object) -> torch.Tensor:
        self.stamps.append(time.perf_counter_ns())
        return self.loss

    def predict(self, _forward: object, _model: object, task: data.Task,
                *_: object) -> torch.Tensor:
        return task.y

    def split_accuracy(self, pred: torch.Tensor, task: data.Task) -> dict[str, float]:
        if not self.accs:  # the real read-out once, for accuracies of the right kind
            self.accs.update(self.real_accuracy(pred, task))
        return self.accs

    def bare_epoch(self, task: data.Task) -> dict[str, float]:
        """A user's epoch over the stand-ins (benchmarks/overhead.py's bare loop)."""
        loss = steps.train_step(None, None, None, task, None, None)
        acc = steps.split_accuracy(steps.predict(None, None, task, None, None), task)
        loss.item()
        return acc


@contextlib.contextmanager
def trivial_work(device: torch.device) -> Iterator[StandIns]:
    """`steps` answer with the stand-ins; the data and the trainer are built once for every
    run inside (their cost is per run and not the runner's: a user's loop pays it too)."""
    work = StandIns(device)
    names = ("train_step", "predict", "split_accuracy")
    saved = [getattr(steps, name) for name in names]
    real_load, real_trainer, built = data.load_task, loop.make_trainer, {}

    def once(key: str, make: Callable) -> Callable:
        return lambda *a, **k: built.get(key) or built.setdefault(key, make(*a, **k))

    try:
        for name in names:
            setattr(steps, name, getattr(work, name))
        data.load_task, loop.make_trainer = once("task", real_load), once("trainer", real_trainer)
        yield work
    finally:
        for name, fn in zip(names, saved, strict=True):
            setattr(steps, name, fn)
        data.load_task, loop.make_trainer = real_load, real_trainer


def _gaps_ns(stamps: list[int]) -> list[int]:
    return [b - a for a, b in itertools.pairwise(stamps)]


def runner_run(cfg: DictConfig, device: torch.device, work: StandIns) -> tuple[float, float]:
    """One run of the runner's epoch loop (train_epochs): the median epoch and what the run
    took after its last epoch (validating the records, the summaries), both in ns."""
    record = new_record(cfg, config.run_name(cfg))
    recorder = dynamo.DynamoRecorder() if cfg.compile else contextlib.nullcontext()
    work.stamps.clear()
    with recorder as active:
        loop.train_epochs(cfg, device, record, active, live_progress=False)
        ended = time.perf_counter_ns()
    assert record.status == "ok", record.reason  # noqa: S101  a stand-in that diverged
    epoch = statistics.median(_gaps_ns(work.stamps))
    return epoch, ended - work.stamps[-1] - epoch


def bare_run(work: StandIns, task: data.Task, epochs: int, device: torch.device) -> float:
    """The bare loop of benchmarks/overhead.py over the stand-ins: its median epoch, ns."""
    work.stamps.clear()
    times = []
    for _ in range(epochs):
        synchronize(device)
        started = time.perf_counter()
        work.bare_epoch(task)
        synchronize(device)
        times.append(time.perf_counter() - started)
    return statistics.median(_gaps_ns(work.stamps))


def measure(cfg: DictConfig, device: torch.device, epochs: int, rounds: int) -> dict:
    """The runner's bookkeeping (µs), median over rounds of a runner's run and a bare loop of
    `epochs` epochs: per epoch (the runner's median epoch less the bare loop's), at the
    run's end (after its last epoch), and both together per epoch of such a run."""
    cfg = OmegaConf.merge(cfg, {"train": {"epochs": epochs, "warmup_epochs": min(
        cfg.train.warmup_epochs, epochs // 2)}})
    per_epoch, at_end, bare = [], [], []
    with trivial_work(device) as work:
        runner_run(cfg, device, work)  # builds the data and the trainer, warms every path
        task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
        for _ in range(rounds):
            epoch, end = runner_run(cfg, device, work)
            floor = bare_run(work, task, epochs, device)
            per_epoch.append((epoch - floor) / 1e3)
            at_end.append(end / 1e3)
            bare.append(floor / 1e3)
    result = {"epochs": epochs, "rounds": rounds, "bare_epoch_us": statistics.median(bare),
              "per_epoch_us": statistics.median(per_epoch),
              "at_end_us": statistics.median(at_end), "per_epoch_us_rounds": per_epoch}
    result.update(amortised_us=result.get("per_epoch_us") + result.get("at_end_us") / epochs)
    return result


def profile(cfg: DictConfig, device: torch.device, epochs: int, top: int = 25) -> None:
    """cProfile of one run of the runner's loop over the stand-ins: where the time goes."""
    cfg = OmegaConf.merge(cfg, {"train": {"epochs": epochs}})
    with trivial_work(device) as work:
        runner_run(cfg, device, work)
        profiler = cProfile.Profile()
        profiler.runcall(runner_run, cfg, device, work)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def describe(result: dict, bare_epoch_s: float | None = None) -> str:
    """One line; `bare_epoch_s`: a real epoch's time, to give the bookkeeping as its share."""
    share = (f" = {result.get('amortised_us') / (bare_epoch_s * 1e6):.3%} of the bare epoch "
             f"({bare_epoch_s * 1e3:.3f} ms)" if bare_epoch_s else "")
    return (f"runner bookkeeping {result.get('amortised_us'):.1f} µs/epoch{share}: "
            f"{result.get('per_epoch_us'):.1f} between epochs + {result.get('at_end_us'):.0f} "
            f"at the end of a {result.get('epochs')}-epoch run (median of "
            f"{result.get('rounds')} rounds; an epoch of the bare loop over the same stand-ins "
            f"{result.get('bare_epoch_us'):.1f} µs)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--case", default="dataset=cora", help="overrides, comma-separated")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data-dir", default=str(Path(config.project_dir()) / "data"))
    parser.add_argument("--profile", action="store_true", help="cProfile one run instead")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--tiny", action="store_true", help="a few short rounds")
    return parse_with_tiny(parser, TINY, argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    cfg = config.compose_config([*args.case.split(","), f"compile={str(args.compile).lower()}",
                                 f"train.device={args.device}", "wandb.mode=disabled",
                                 f"data_dir={args.data_dir}"])
    device = config.resolve_device(cfg.train.device)
    if args.profile:
        profile(cfg, device, args.epochs)
        return
    result = measure(cfg, device, args.epochs, args.rounds)
    print(describe(result))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "command": "python -m gnnbench.benchmarks.bookkeeping",
            "args": {k: str(v) for k, v in vars(args).items()}, "device": str(device),
            "torch": torch.__version__, **result}, indent=2) + "\n")


if __name__ == "__main__":
    main()
