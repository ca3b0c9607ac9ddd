"""Two parts of a report at once: one in this process, one in a forked child.

A report over thousands of records is CPU-bound in Python (the bootstrap of each compiled
row, the plots, the sweep's completeness check), and reading the records again in another
process would cost what it saves: unpickling a record takes as long as validating it. A
forked child shares every record already read, does its part, and sends back only its
small result (rows' comparisons, what a plot drew). Used only where forking is safe and
pays: a POSIX system, more than one core, and no torch in the process (a sweep's own
report runs in a process with torch, perhaps CUDA, and its threads: it stays serial).
Whatever goes wrong in the child, the part is done again here, so the report is the same
either way."""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable
from typing import TypeVar

A = TypeVar("A")
B = TypeVar("B")


def can_fork() -> bool:
    return hasattr(os, "fork") and (os.cpu_count() or 1) > 1 and "torch" not in sys.modules


class _Child:
    """`part()` run in a forked child, its pickled result read back by `result()`."""

    def __init__(self, part: Callable[[], B]) -> None:
        self.part = part
        sys.stdout.flush()  # nothing buffered is written twice
        sys.stderr.flush()
        read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: do the part, send it, leave without clean-up,
            try:  # whatever happens (it must never go on with the parent's program)
                os.close(read)
                try:
                    payload = pickle.dumps(part(), protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException:  # noqa: BLE001 - the parent does it again and raises
                    payload = b""
                with os.fdopen(write, "wb") as pipe:
                    pipe.write(payload)
            finally:
                os._exit(0)
        os.close(write)
        self.read = read

    def discard(self) -> None:
        """The parent failed first: stop listening (a child blocked on a full pipe then
        fails its write and exits) and reap it."""
        os.close(self.read)
        os.waitpid(self.pid, 0)

    def result(self) -> B:
        with os.fdopen(self.read, "rb") as pipe:
            payload = pipe.read()
        os.waitpid(self.pid, 0)
        try:
            return pickle.loads(payload)
        except Exception:  # the child failed or was killed: do the part here
            return self.part()


def both(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """(first(), second()), `second` in a forked child where `can_fork()`."""
    if not can_fork():
        return first(), second()
    child = _Child(second)
    try:
        done = first()
    except BaseException:
        child.discard()
        raise
    return done, child.result()
