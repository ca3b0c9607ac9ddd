"""Whether W&B really saved a run logged offline. wandb-core reports a failed write (a full
disk) only in its own debug log, which may not fit on the disk either, and `run.finish()`
returns as if all went well: gnnbench reads the run's transaction log (`run-<id>.wandb`,
what `wandb sync` uploads) and calls the run saved only when the log is whole up to the
run's exit record, which wandb writes last.

Format (wandb-core 0.31, a leveldb log; tests/support/wandb_file.py reads all of it): a
7-byte header `:W&B` + u16le 0xBEE1 + version 0, then 32 KiB blocks of chunks
`<crc32 u32le, length u16le, type u8>` + payload (1 full, 2 first, 3 middle, 4 last; a block
tail shorter than a chunk header is padding). Payloads are `wandb_internal_pb2.Record`."""

from __future__ import annotations

import shutil
import struct
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from gnnbench.config import files

MAGIC = b":W&B" + struct.pack("<H", 0xBEE1)
HEADER = 7  # the file's header and each chunk's
BLOCK = 32768
FULL_WAIT_S = 2.0  # how long a log on a full disk is given to end after all


def _records(data: bytes) -> list[bytes]:
    """The whole records of a log, in order; stops at the first chunk that is cut short,
    fails its checksum or is not a chunk (the rest never reached the disk)."""
    records, parts, pos = [], None, HEADER
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:
            pos += left
            continue
        crc, length, kind = struct.unpack_from("<IHB", data, pos)
        payload = data[pos + HEADER:pos + HEADER + length]
        if kind not in (1, 2, 3, 4) or len(payload) < length or \
                zlib.crc32(payload, zlib.crc32(bytes([kind]))) != crc:
            break
        if kind in (1, 2):
            parts = [payload]
        elif parts is not None:
            parts.append(payload)
        if kind in (1, 4) and parts is not None:
            records.append(b"".join(parts))
            parts = None
        pos += HEADER + length
    return records


def _ends_with_exit(data: bytes, record_type: Callable[[bytes], str | None]) -> bool:
    if data[:len(MAGIC)] != MAGIC:
        return False
    return any(record_type(blob) == "exit" for blob in reversed(_records(data)))


def _free(folder: Path) -> int | None:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def not_saved(run_dir: str | Path, record_type: Callable[[bytes], str | None],
              wait_s: float = 10.0) -> str | None:
    """None when the offline run's log (in W&B's `run_dir`) holds the whole run; else why it
    does not, for one line (a full disk: how much is free). `record_type`: a record's kind
    (W&B's own parser, from records/publish.py, the one module that imports wandb).
    `run.finish()` returns before wandb-core has flushed the log: it is read again until its
    exit record is there, for up to `wait_s` (a full disk, which will not take the rest: a
    few seconds)."""
    logs = sorted(Path(run_dir).glob("run-*.wandb"))
    path = logs[0] if logs else Path(run_dir) / "run-*.wandb"
    started = time.monotonic()
    while True:
        try:
            if _ends_with_exit(path.read_bytes(), record_type):
                return None
            cause = None
        except OSError as exc:
            cause = f"{path.name}: {exc.strerror or exc}"
        free = _free(path.parent)
        full = free is not None and free < files.FULL_BELOW
        if time.monotonic() - started >= (min(wait_s, FULL_WAIT_S) if full else wait_s):
            break
        time.sleep(0.05)
    if full:
        return f"no space left on device: {free // 1024} KiB free"
    return cause or f"its log {path.name} is incomplete"
