"""Read back what W&B wrote for an offline run, straight from its `run-<id>.wandb` file.

Why: in offline mode wandb 0.31 writes no wandb-summary.json and no config.yaml; the
`.wandb` record log (what `wandb sync` uploads later) is the only copy of config, history and
summary, and tests and reports need to check what W&B really recorded.

Format, as wandb-core 0.31 writes it (a leveldb log with a file header): 7 bytes
`b":W&B" + u16le 0xBEE1 + version 0`, then 32 KiB blocks (block 0 includes the header). Each
record chunk is `<crc u32le, length u16le, type u8>` + payload, type 1 FULL, 2 FIRST,
3 MIDDLE, 4 LAST; a block tail shorter than 7 bytes is zero padding. The CRC is plain
`zlib.crc32(type byte + payload)` (IEEE, not leveldb's masked crc32c). Reassembled payloads
are `wandb_internal_pb2.Record` messages; item values are JSON in `value_json`.
"""

from __future__ import annotations

import json
import os
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # importing wandb.proto imports all of wandb (~1 s): do it only when reading
    from wandb.proto.wandb_internal_pb2 import Record

MAGIC = b":W&B" + struct.pack("<H", 0xBEE1)
VERSION = 0
FILE_HEADER_LEN = 7
CHUNK_HEADER_LEN = 7
BLOCK_LEN = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def _chunks(data: bytes, name: str, strict: bool) -> Iterator[tuple[int, bytes, int]]:
    """Yield (type, payload, offset) for each CRC-checked chunk, skipping block padding."""
    pos = FILE_HEADER_LEN
    while pos < len(data):
        left = BLOCK_LEN - pos % BLOCK_LEN
        if left < CHUNK_HEADER_LEN:  # the writer zero-pads a block tail too small for a header
            pos += left
            continue
        if pos + CHUNK_HEADER_LEN > len(data):
            if strict:
                raise ValueError(f"{name}: truncated chunk header at byte {pos}")
            return
        crc, length, kind = struct.unpack_from("<IHB", data, pos)
        end = pos + CHUNK_HEADER_LEN + length
        if kind not in (FULL, FIRST, MIDDLE, LAST) or length > left - CHUNK_HEADER_LEN:
            raise ValueError(f"{name}: corrupt chunk header at byte {pos} (type {kind})")
        if end > len(data):
            if strict:
                raise ValueError(f"{name}: truncated chunk at byte {pos}")
            return
        payload = data[pos + CHUNK_HEADER_LEN : end]
        if zlib.crc32(payload, zlib.crc32(bytes([kind]))) != crc:
            raise ValueError(f"{name}: CRC mismatch in chunk at byte {pos}")
        yield kind, payload, pos
        pos = end


def read_records(path: str | os.PathLike[str], strict: bool = True) -> Iterator[Record]:
    """Yield every Record in file order. Corruption raises ValueError; with strict=False an
    incomplete final record (a run killed mid-write, or still running) just ends the log."""
    from google.protobuf.message import DecodeError
    from wandb.proto.wandb_internal_pb2 import Record

    data = Path(path).read_bytes()
    name = str(path)
    if len(data) < FILE_HEADER_LEN or data[:6] != MAGIC:
        raise ValueError(f"{name}: not a .wandb file (bad header {data[:FILE_HEADER_LEN]!r})")
    if data[6] != VERSION:
        raise ValueError(f"{name}: unsupported .wandb version {data[6]}")
    parts: list[bytes] | None = None
    for kind, payload, pos in _chunks(data, name, strict):
        if kind in (FULL, FIRST) and parts is not None:
            raise ValueError(f"{name}: record at byte {pos} starts inside another record")
        if kind in (MIDDLE, LAST) and parts is None:
            raise ValueError(f"{name}: continuation chunk at byte {pos} without a FIRST")
        if kind == FIRST:
            parts = [payload]
            continue
        if kind == MIDDLE:
            parts.append(payload)  # type: ignore[union-attr]
            continue
        blob = payload if kind == FULL else b"".join([*parts, payload])  # type: ignore[misc]
        parts = None
        record = Record()
        try:
            record.ParseFromString(blob)
        except DecodeError as err:
            raise ValueError(f"{name}: undecodable record ending at byte {pos}") from err
        yield record
    if parts is not None and strict:
        raise ValueError(f"{name}: log ends inside a record")


def find_runs(root: str | os.PathLike[str]) -> list[Path]:
    """All `.wandb` files below root, sorted; does not follow wandb's `latest-run` symlink."""
    found = []
    for dirpath, _, files in os.walk(root):  # followlinks=False: latest-run would duplicate
        found += [Path(dirpath, f) for f in files if f.endswith(".wandb")]
    return sorted(found)


def _resolve(path: str | os.PathLike[str]) -> Path:
    """A .wandb file, a run dir, or a dir holding exactly one wandb/offline-run-* (or run-*)."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise ValueError(f"{path}: no such file or directory")
    for pattern in ("run-*.wandb", "wandb/*run-*/run-*.wandb"):  # not latest-run
        candidates = sorted(path.glob(pattern))
        if len(candidates) == 1:
            return candidates[0]
        if candidates:
            listing = "\n  ".join(str(c) for c in candidates)
            raise ValueError(f"{path}: {len(candidates)} runs, pass one of:\n  {listing}")
    raise ValueError(f"{path}: no run-*.wandb here or in wandb/*run-*/")


def _key(item: Any) -> list[str]:
    return list(item.nested_key) or [item.key]


def _apply(target: dict, updates: Any = (), removes: Any = ()) -> None:
    """Apply config/summary items: a nested_key path sets one leaf inside nested dicts."""
    for item in updates:
        *parents, leaf = _key(item)
        node = target
        for k in parents:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]
        node[leaf] = json.loads(item.value_json)
    for item in removes:
        *parents, leaf = _key(item)
        node = target
        for k in parents:
            node = node.get(k) if isinstance(node.get(k), dict) else {}
        node.pop(leaf, None)


def load_table(run_dir: str | os.PathLike[str], ref: dict) -> list[dict]:
    """Rows of a logged wandb.Table: offline, the `table-file` ref's `path` is relative to
    the run dir's files/ folder, and that JSON holds `columns` and `data` (list of rows)."""
    if ref.get("_type") != "table-file":
        raise ValueError(f"not a table-file reference: _type={ref.get('_type')!r}")
    table = json.loads((Path(run_dir) / "files" / ref["path"]).read_text())
    return [dict(zip(table["columns"], row, strict=True)) for row in table["data"]]


def _table_refs(values: dict, prefix: str = "") -> Iterator[tuple[str, dict]]:
    for key, value in values.items():
        if isinstance(value, dict) and value.get("_type") == "table-file":
            yield prefix + key, value
        elif isinstance(value, dict):
            yield from _table_refs(value, f"{prefix}{key}.")


@dataclass
class OfflineRun:
    """What one offline run recorded. `summary` mirrors wandb-summary.json (so it includes
    `_step`, `_runtime`, `_timestamp`, `_wandb`); `tables` maps a summary key (dotted when
    nested) to the rows of the last Table logged under it."""

    path: Path
    run_id: str = ""
    project: str = ""
    entity: str = ""
    name: str = ""
    group: str = ""
    job_type: str = ""
    tags: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    tables: dict[str, list[dict]] = field(default_factory=dict)

    @property
    def run_dir(self) -> Path:
        return self.path.parent


def read_run(path_or_run_dir: str | os.PathLike[str], strict: bool = True,
             wait: float = 0.0) -> OfflineRun:
    """Replay the record log into config, history rows, final summary and exit code.

    wandb 0.31's run.finish() returns before wandb-core has flushed the file (it can still be
    the bare 7-byte header): in the same process pass wait=seconds (or call wandb.teardown()
    first). With wait, re-read until the exit record is there or the time is up."""
    path = _resolve(path_or_run_dir)
    deadline = time.monotonic() + wait
    while True:
        try:
            run = _replay(path, strict)
            if run.exit_code is not None or time.monotonic() >= deadline:
                return run
        except ValueError:
            if time.monotonic() >= deadline:
                raise
        time.sleep(0.01)


def _replay(path: Path, strict: bool) -> OfflineRun:
    run = OfflineRun(path=path)
    for record in read_records(run.path, strict=strict):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            r = record.run  # a full snapshot; e.g. `run.name = ...` later writes another one
            run.run_id, run.project, run.entity = r.run_id, r.project, r.entity
            run.name, run.group, run.job_type = r.display_name, r.run_group, r.job_type
            run.tags = list(r.tags)
            _apply(run.config, r.config.update, r.config.remove)
            _apply(run.summary, r.summary.update, r.summary.remove)
        elif kind == "config":
            _apply(run.config, record.config.update, record.config.remove)
        elif kind == "summary":
            _apply(run.summary, record.summary.update, record.summary.remove)
        elif kind == "history":
            row: dict[str, Any] = {}
            _apply(row, record.history.item)
            run.history.append(row)
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
    run.config.pop("_wandb", None)
    run.tables = {k: load_table(run.run_dir, ref) for k, ref in _table_refs(run.summary)}
    return run
