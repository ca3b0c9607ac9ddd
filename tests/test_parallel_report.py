"""The report's two-process split (report/parallel.py) with real forks: the same answer as
one process, a failing child's part done again here, a failing parent leaving no child."""

from __future__ import annotations

import os

import pytest

from gnnbench.report import parallel

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2,
                                reason="needs fork and two cores")


@pytest.fixture(autouse=True)
def forking(monkeypatch):
    """This process has torch (conftest): the report command has not, and forks."""
    monkeypatch.setattr(parallel, "can_fork", lambda: True)


def test_a_process_with_torch_does_both_parts_itself(monkeypatch):
    monkeypatch.undo()
    here = os.getpid()
    assert parallel.both(os.getpid, os.getpid) == (here, here)


def test_the_second_part_runs_in_another_process_and_comes_back_whole():
    here = os.getpid()
    first, (pid, values) = parallel.both(lambda: os.getpid(),
                                         lambda: (os.getpid(), list(range(100_000))))
    assert first == here and pid != here
    assert values == list(range(100_000))  # more than a pipe's buffer


def test_a_part_that_fails_in_the_child_is_done_again_here_and_raises_here():
    calls = []

    def second():
        calls.append(os.getpid())
        raise ValueError("bad part")

    with pytest.raises(ValueError, match="bad part"):
        parallel.both(lambda: 1, second)
    assert calls == [os.getpid()]  # the child's call is not seen here; this one is


def test_a_parent_that_fails_first_reaps_its_child():
    def first():
        raise KeyError("first")

    with pytest.raises(KeyError):
        parallel.both(first, lambda: list(range(1_000_000)))  # the child's pipe fills
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind
