"""Shared fixtures: real Planetoid files from the read-only mirror, configs composed by
Hydra from conf/ exactly as the CLI composes them, and one run helper."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from support.fs import read_only

from gnnbench import config
from gnnbench.records.model import Record
from gnnbench.runner import run_experiment

REPO = Path(__file__).resolve().parents[1]


def _find_mirror() -> Path | None:
    """The Planetoid raw files: a mirror named by the environment, else the copies that ship
    inside the package (so a fresh clone tests Cora and CiteSeer offline)."""
    for candidate in (os.environ.get("GNNBENCH_TEST_MIRROR"), REPO / "gnnbench/data/builtin"):
        if candidate and (Path(candidate) / "Cora/raw/ind.cora.graph").is_file():
            return Path(candidate)
    return None


MIRROR = _find_mirror()


def pytest_configure(config):  # noqa: ARG001 - pytest's signature
    """W&B's own files (settings, cache, staging) go to a temp dir, never to $HOME. Under
    pytest-xdist each worker has its own device leases (two workers' sweeps would otherwise
    queue for one CPU slot) and an equal share of the cores for torch's threads."""
    home = tempfile.mkdtemp(prefix="gnnbench-wandb-")
    for var in ("WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_CONFIG_DIR"):
        os.environ.setdefault(var, home)
    os.environ.pop("WANDB_API_KEY", None)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("GNNBENCH_LEASE_DIR", tempfile.mkdtemp(prefix="gnnbench-leases-"))
        share = max(1, (os.cpu_count() or 1) // workers)
        torch.set_num_threads(share)
        # The gnnbench processes a test starts take the same share: two workers' runs with
        # every core's thread each spun against each other (a 40-epoch Cora run on a busy
        # 2-core machine: 54 s with 2 threads, 23 s with 1).
        os.environ.setdefault("OMP_NUM_THREADS", str(share))


# Files whose module-scoped fixture is a cache of runs that the tests hardly share: their
# tests spread over the workers like any other. test_pyg_models: keyed by the test's own
# model. test_matrix: only the two layout tests share one 60-epoch Cora run; kept on one
# worker, GAT, GIN and the layouts were the suite's longest unit (415 + 192 + 122 s of
# 865 s measured on a loaded 2-core machine).
SPREAD = {"test_pyg_models", "test_matrix"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (--dist loadgroup) the tests of a file that share a module-scoped
    fixture (a sweep, a trained model) stay on one worker, which makes it once; the rest
    spread one test at a time, `slow` ones first: the workers hand out tests in this order,
    and long tests started last would leave one worker running alone at the end (the
    suite's wall time on CI's two cores). Without CUDA, `gpu` tests skip."""
    for item in items:
        module = item.module.__name__ if getattr(item, "module", None) else ""
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else ()
        if "module" in {d[-1].scope for d in defs if d} and module not in SPREAD:
            item.add_marker(pytest.mark.xdist_group(module))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # each worker sorts alike: a stable sort
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # not keywords: "gpu" may be an id
            item.add_marker(skip)


# The tiers mean what they say: a test that calls torch.compile in this process (gnnbench's
# runner or the test itself, any backend) must be marked `slow`, so that
# `pytest -m "not slow"` stays a quick loop. Commands run in subprocesses are not seen here.
_COMPILE_CALLS: list[str] = []


def _counting(compile_fn):
    @functools.wraps(compile_fn)
    def counted(*args, **kwargs):
        _COMPILE_CALLS.append(repr(args[0]) if args else "a decorator")
        return compile_fn(*args, **kwargs)

    return counted


torch.compile = _counting(torch.compile)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Fails a test outside the `slow` tier that called torch.compile."""
    _COMPILE_CALLS.clear()
    result = yield
    if _COMPILE_CALLS and item.get_closest_marker("slow") is None:
        pytest.fail(f"called torch.compile ({_COMPILE_CALLS[0][:80]}): mark it "
                    "@pytest.mark.slow", pytrace=False)
    return result


@pytest.fixture(scope="session")
def mirror() -> Path:
    assert MIRROR is not None, "gnnbench/data/builtin lacks the Planetoid raw files"
    return MIRROR


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """One dataset cache for the session, so Planetoid is processed once."""
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def read_only_mirror(tmp_path_factory, mirror) -> Iterator[Path]:
    """A copy of the mirror on a read-only mount (root cannot write it either), as on a
    shared one."""
    root = tmp_path_factory.mktemp("mirror") / "planetoid"
    shutil.copytree(mirror, root)
    with read_only(root):
        yield root


def make_config(overrides: list[str]):
    return config.compose_config(overrides)


@pytest.fixture
def run(tmp_path, data_dir, mirror):
    """Run one experiment in-process with Hydra-composed config; returns its Record.
    W&B is off unless a test turns it on (tests/test_tracking.py does)."""

    def _run(*overrides: str) -> Record:
        cfg = make_config([f"data_dir={data_dir}", f"data_mirror={mirror}",
                           "train.device=cpu", "wandb.mode=disabled", *overrides])
        return run_experiment(cfg, tmp_path / f"run{len(list(tmp_path.iterdir()))}")

    return _run


@pytest.fixture
def run_in(tmp_path):
    """Like `run`, with a data_dir of the test's own (tmp_path/data, empty at first), for
    tests that damage or race on the cache; `out=` names the run's folder."""
    count = iter(range(1000))

    def _run(*overrides: str, out: Path | None = None) -> Record:
        cfg = make_config([f"data_dir={tmp_path / 'data'}", "train.device=cpu",
                           "train.warmup_epochs=1", "wandb.mode=disabled", *overrides])
        return run_experiment(cfg, out or tmp_path / f"run{next(count)}")

    return _run
