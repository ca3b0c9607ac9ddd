"""Ctrl-C and SIGTERM end a run with a record, not a traceback: the first signal lets the
current epoch finish, then the run is saved as `interrupted` with the epochs it completed;
a second signal stops at once (still saving what is there, without W&B).

Handlers are installed by the command line only (a library caller keeps its own), and only
in the main thread, where Python delivers signals."""

from __future__ import annotations

import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_requested: int | None = None


class Interrupted(BaseException):
    """Raised by a second signal. A BaseException, like KeyboardInterrupt, so that no
    `except Exception` on the way (W&B, a loader) swallows the user's request."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _handle(signum: int, frame: object) -> None:
    global _requested
    if _requested is not None:
        raise Interrupted(signum)
    _requested = signum
    print(f"gnnbench: {signal.Signals(signum).name} received: finishing this epoch and saving "
          "the results (send it again to stop at once)", file=sys.stderr, flush=True)


def install() -> None:
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, _handle)


def requested() -> int | None:
    """The signal received, if any: runs stop after their current epoch, sweeps start no job."""
    return _requested


def name(signum: int) -> str:
    return signal.Signals(signum).name


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + signum
