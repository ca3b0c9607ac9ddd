"""The cache state a compiled run starts with (`compiler.cache`), made as the name says:

- cold: an empty Inductor cache directory and in-process caches cleared;
- warm: a copy of the directory that a priming run of the same setting filled, in a
  separate process (nothing of it in this process's memory);
- portable: an empty directory into which the artifacts the priming run saved with
  `torch.compiler.save_cache_artifacts` are loaded (`load_cache_artifacts`), as a cache
  shipped to another machine would be.

A priming run trains the same setting for a couple of epochs (enough to compile every graph
the run compiles: the train step, the eval forward and their recompilations) in a child
process (`python -m gnnbench.runner.priming`), and is kept in `<root>/primed/<setting>`, so
a warm and a portable run of one setting (a sweep over `compiler.cache`) share it. Its time
is recorded apart and not counted in the measured run's wall time: a user's cache was
filled by another process, earlier.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from gnnbench import config, data
from gnnbench.config import variant_slug
from gnnbench.records import identity
from gnnbench.training import caches
from gnnbench.training.precision import matmul_precision

PRIMED = "primed"
INFO_FILE = "prime.json"
# Epochs a priming run trains: the first compiles the train step and the eval forward, the
# second any recompilation a changed input causes (a later batch's shape).
PRIME_EPOCHS = 2
# What a priming ignores: runs that differ only here compile the same graphs.
SAME_GRAPHS = {"compiler": {"cache": "as-is"}, "train": {"paired": False}}


def requested(cfg: DictConfig) -> str:
    """The cache state a run asks for; `as-is` for an eager run (nothing compiles)."""
    return cfg.compiler.get("cache", "as-is") if cfg.compile else "as-is"


def prime_key(cfg: DictConfig, device: torch.device) -> str:
    """Runs whose compiled graphs are the same share a priming: the setting, how it is
    compiled (the variant without the cache state) and the torch that compiles it."""
    plain = OmegaConf.to_container(OmegaConf.merge(OmegaConf.to_container(cfg, resolve=True),
                                                   SAME_GRAPHS))
    digest = hashlib.sha256(f"{identity.setting_key(plain, device.type)} {torch.__version__}"
                            .encode()).hexdigest()[:12]
    return f"{variant_slug(plain)}-{digest}"


def _prime_in_child(cfg: DictConfig, device: torch.device, target: Path) -> None:
    """Run the priming in a separate process; its last error line on failure."""
    target.mkdir(parents=True)
    OmegaConf.save(cfg, target / "config.yaml", resolve=True)
    done = subprocess.run([sys.executable, "-m", "gnnbench.runner.priming",
                           str(target / "config.yaml"), str(device), str(target)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise RuntimeError(f"the priming run of compiler.cache failed: "
                           f"{lines[-1] if lines else f'exit {done.returncode}'}")


def primed(cfg: DictConfig, device: torch.device, root: Path) -> tuple[Path, bool]:
    """The priming of this run's setting under `root` (made now if missing) and whether this
    call made it. Two runs priming the same setting at once both prime; the first to finish
    keeps its folder."""
    final = root / PRIMED / prime_key(cfg, device)
    if (final / INFO_FILE).is_file():
        return final, False
    work = root / PRIMED / f".{final.name}.{os.getpid()}"
    _prime_in_child(cfg, device, work)
    try:
        os.rename(work, final)
    except OSError:  # another run primed it first: use theirs
        shutil.rmtree(work, ignore_errors=True)
    return final, True


@contextmanager
def compile_cache(cfg: DictConfig, device: torch.device, root: Path) -> Iterator[dict | None]:
    """The cache state the run asked for, around its training; yields what the record keeps
    of it (None for `as-is`: the process's caches, untouched, as before the axis existed):
    the state, the priming's own compile time and artifact size, and `setup_s`, the time
    spent preparing it outside the run (priming, copying), left out of its wall time."""
    state = requested(cfg)
    if state == "as-is":
        yield None
        return
    started = time.perf_counter()
    setup: dict = {"state": state}
    with caches.fresh_dir("gnnbench-inductor-") as fresh:
        if state != "cold":
            folder, made = primed(cfg, device, root)
            info = json.loads((folder / INFO_FILE).read_text())
            setup.update(primed_now=made, prime_compile_s=info.get("compile_s"),
                         prime_wall_s=info.get("wall_s"),
                         artifacts_bytes=info["artifacts"]["bytes"])
            if state == "warm":
                caches.copy_tree(folder / "inductor", fresh)
        setup.update(setup_s=time.perf_counter() - started)
        with caches.cache_dir(fresh):
            if state == "portable":
                loaded_at = time.perf_counter()
                loaded = caches.load_artifacts(folder / caches.ARTIFACTS_FILE)
                setup.update(artifacts_loaded=loaded["entries"],
                             load_s=time.perf_counter() - loaded_at)
            yield setup


def prime(cfg: DictConfig, device: torch.device, target: Path) -> dict:
    """In the child: train the setting for PRIME_EPOCHS epochs with its caches in
    `target/inductor` (empty at first), then save the portable artifacts beside it."""
    from gnnbench.measure.dynamo import DynamoRecorder
    from gnnbench.runner.loop import make_trainer

    started = time.perf_counter()
    cfg.compiler.cache = "as-is"
    cfg.train.paired = False  # the eager twin compiles nothing
    with caches.cache_dir(target / "inductor"), DynamoRecorder() as recorder, \
            matmul_precision(cfg.train.get("precision", "fp32")):
        torch.manual_seed(cfg.train.seed)
        task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
        trainer = make_trainer(cfg, task, device)
        for epoch in range(min(PRIME_EPOCHS, cfg.train.epochs)):
            trainer.epoch(epoch)
        artifacts = caches.save_artifacts(target / caches.ARTIFACTS_FILE)
        times = recorder.compile_times()
    info = {"epochs": min(PRIME_EPOCHS, cfg.train.epochs), "artifacts": artifacts,
            "compile_s": times.get("total_s"), "wall_s": time.perf_counter() - started}
    (target / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return info


if __name__ == "__main__":
    config.register_resolvers()
    prime(OmegaConf.load(sys.argv[1]), torch.device(sys.argv[2]), Path(sys.argv[3]))
