"""Ctrl-C and SIGTERM end a run with a record, not a traceback: the first signal lets the
current epoch finish, then the run is saved as `interrupted` with the epochs it completed;
a second signal stops at once (still saving what is there, without W&B).

Handlers are installed by the command line only (a library caller keeps its own), and only
in the main thread, where Python delivers signals.

A sweep whose jobs run in other processes (the GPU pool's workers, submitit's jobs, a
cluster's nodes) hears of a signal through a stop file in its folder: the process that
launched the sweep writes it on the first signal (`broadcast_to`), and each job reads it
between epochs as if the signal had reached it too (`follow`)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

SIGNALS = (signal.SIGINT, signal.SIGTERM)
STOP_FILE = ".gnnbench-stop"  # in a sweep's folder: the name of the signal that stops it
_requested: int | None = None
_broadcast: Path | None = None
_followed: Path | None = None


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
    if _broadcast is not None:
        try:
            _broadcast.write_text(signal.Signals(signum).name + "\n")
        except OSError as exc:
            print(f"gnnbench: warning: cannot tell the sweep's other processes to stop "
                  f"({_broadcast}: {exc.strerror or exc})", file=sys.stderr)
    print(f"gnnbench: {signal.Signals(signum).name} received: finishing this epoch and saving "
          "the results (send it again to stop at once)", file=sys.stderr, flush=True)


def install() -> None:
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, _handle)


def broadcast_to(path: Path) -> None:
    """This process launched a sweep whose jobs may run elsewhere: a signal it receives is
    written to `path` for them. A stop file left by an earlier, stopped run of the sweep is
    removed (the sweep is being resumed)."""
    global _broadcast
    _broadcast = Path(path)
    _broadcast.unlink(missing_ok=True)


def follow(path: Path) -> None:
    """This process runs a job of a sweep launched elsewhere: `requested()` also reports a
    signal that the launching process wrote to `path`."""
    global _followed
    _followed = Path(path)


def requested() -> int | None:
    """The signal received, if any: runs stop after their current epoch, sweeps start no job.
    One `stat` of the stop file when following a sweep: cheap enough for every epoch."""
    global _requested
    if _requested is None and _followed is not None and os.path.exists(_followed):
        try:
            _requested = signal.Signals[_followed.read_text().strip()].value
        except (OSError, KeyError):
            _requested = signal.SIGTERM.value
    return _requested


def name(signum: int) -> str:
    return signal.Signals(signum).name


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + signum
