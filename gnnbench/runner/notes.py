"""Library warnings that say nothing about the user's run go to the run's log
(`gnnbench.log`), not the console: the console is for the progress, warnings about the run,
and the summary. Every other warning is shown as before."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

# Matched against the start of a warning's message (whitespace ignored).
LIBRARY_NOTES = (
    # PyTorch's advice to turn TF32 on, on every fp32 compile on an Ampere or later GPU: a
    # run's precision is its setting (train.precision=tf32), not a mistake to point out.
    "TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled",
    # Inductor choosing a split reduction over its online softmax: a code-generation detail.
    "Online softmax is disabled on the fly",
)
LOG = logging.getLogger("gnnbench.library")


def is_library_note(message: object) -> bool:
    text = " ".join(str(message).split())
    return text.startswith(LIBRARY_NOTES)


@contextlib.contextmanager
def notes_to_log() -> Iterator[None]:
    """While a run runs, its library notes are logged at INFO under `gnnbench.library`,
    which Hydra's job logging writes to the run's gnnbench.log only (its console handler
    shows WARNING and up)."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if not is_library_note(message):
            return shown(message, category, filename, lineno, file, line)
        LOG.info("%s: %s (%s:%s)", category.__name__, " ".join(str(message).split()),
                 filename, lineno)
        return None

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
