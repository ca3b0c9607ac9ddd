"""The .wandb reader (tests/support/wandb_file.py) against real wandb runs in offline mode,
in-process: what we read back from the .wandb log must be exactly what was logged."""

from __future__ import annotations

from pathlib import Path

import pytest

wandb = pytest.importorskip("wandb")

from support import wandb_file  # noqa: E402 - after the importorskip
from support.wandb_file import find_runs, load_table, read_records, read_run  # noqa: E402

CONFIG = {"lr": 0.01, "model": {"name": "gcn", "hidden": 16, "layers": [1, 2]}, "seed": 0}
ROWS = [{"epoch": e, "loss": 1.0 / (e + 1), "acc": 0.5 + e / 10} for e in range(5)]
TABLE = [{"model": "gcn", "ms": 1.5}, {"model": "sage", "ms": 2.25}, {"model": "gat", "ms": 3.0}]
WAIT = 30.0  # seconds for wandb-core to flush after finish(); normally milliseconds


@pytest.fixture
def wandb_dir(tmp_path, monkeypatch):
    """Every wandb path in tmp_path, offline, quiet, and no credentials to find."""
    for var in ("WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(var, str(tmp_path))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    for var in ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_ENTITY", "WANDB_PROJECT",
                "WANDB_RUN_ID", "WANDB_RESUME", "WANDB_RUN_GROUP", "WANDB_TAGS"):
        monkeypatch.delenv(var, raising=False)
    yield tmp_path
    if wandb.run is not None:  # a failed test must not leave a run open for the next one
        wandb.run.finish(exit_code=1)
    wandb.teardown()  # stop wandb-core: the next test starts it afresh under its own env


def _init(root, **kwargs):
    # mode explicitly: wandb caches settings from the environment at its first use in the
    # process, so WANDB_MODE set here can come too late when other tests used wandb first.
    return wandb.init(dir=root, mode="offline", settings=wandb.Settings(x_disable_stats=True),
                      **kwargs)


def _finish(run, exit_code: int = 0) -> Path:
    """Finish; return the .wandb file once wandb-core has flushed it, which can be after
    finish() returns (then the file may still be the bare 7-byte header)."""
    path = Path(run.settings.sync_file)
    run.finish(exit_code=exit_code)
    assert read_run(path, wait=WAIT).exit_code == exit_code
    return path


def test_full_run_reads_back_what_was_logged(wandb_dir):
    run = _init(wandb_dir, project="gnnbench-test", name="cora-gcn", group="sweep-1",
                job_type="train", tags=["cora", "gcn"], config=CONFIG)
    run.define_metric("epoch")
    run.define_metric("*", step_metric="epoch")
    for row in ROWS:
        run.log(row)
    run.summary["best_acc"] = 0.9
    run.summary["timing"] = {"compile_s": 12.5, "step_ms": 3.25}
    run.log({"bench": wandb.Table(columns=["model", "ms"],
                                  data=[list(r.values()) for r in TABLE])})
    run_id = run.id
    path = _finish(run)

    got = read_run(wandb_dir)  # the dir that holds wandb/offline-run-*/
    assert got.path == path and got.run_dir == path.parent
    assert (got.run_id, got.project, got.name, got.group, got.job_type) == (
        run_id, "gnnbench-test", "cora-gcn", "sweep-1", "train")
    assert got.tags == ["cora", "gcn"] and got.entity == ""  # offline, no entity given
    assert got.config == CONFIG
    assert got.exit_code == 0

    # 5 metric rows, then the Table's row (which step_sync stamps with the last epoch)
    assert len(got.history) == 6
    for i, (row, want) in enumerate(zip(got.history, ROWS, strict=False)):
        assert {k: row[k] for k in want} == want
        assert row["_step"] == i and "_runtime" in row and "_timestamp" in row
    assert got.history[5]["epoch"] == 4 and got.history[5]["bench"]["_type"] == "table-file"

    assert got.summary["best_acc"] == 0.9
    assert got.summary["timing"] == {"compile_s": 12.5, "step_ms": 3.25}
    assert {k: got.summary[k] for k in ROWS[-1]} == ROWS[-1]  # last logged values win
    assert got.summary["_step"] == 5

    ref = got.summary["bench"]
    assert ref["path"].startswith("media/table/") and ref["nrows"] == 3 and ref["ncols"] == 2
    assert (got.run_dir / "files" / ref["path"]).is_file()
    assert got.tables == {"bench": TABLE}
    assert load_table(got.run_dir, got.history[5]["bench"]) == TABLE
    assert read_run(path.parent).summary == read_run(path).summary == got.summary


def test_exit_code_one(wandb_dir):
    run = _init(wandb_dir, project="gnnbench-test")
    run.log({"loss": float("nan")})
    got = read_run(_finish(run, exit_code=1))
    assert got.exit_code == 1
    assert got.history[0]["loss"] != got.history[0]["loss"]  # NaN survives as NaN


def test_two_runs_in_one_process(wandb_dir):
    paths = []
    for seed in (1, 2):
        run = _init(wandb_dir, project="gnnbench-test", config={"seed": seed})
        run.log({"seed_logged": seed})
        paths.append(_finish(run))
    assert find_runs(wandb_dir) == sorted(paths)  # latest-run symlink not counted twice
    for seed, path in zip((1, 2), paths, strict=True):
        got = read_run(path)
        assert got.config == {"seed": seed} and got.history[0]["seed_logged"] == seed
    with pytest.raises(ValueError, match="2 runs") as err:
        read_run(wandb_dir)
    assert all(str(p) in str(err.value) for p in paths)


def test_record_larger_than_a_block(wandb_dir):
    big = "".join(chr(ord("a") + i % 26) for i in range(100_000))  # > 3 blocks of 32 KiB
    run = _init(wandb_dir, project="gnnbench-test", config={"big": big, "n": 1})
    run.log({"text": big[::-1]})
    path = _finish(run)
    data = path.read_bytes()
    kinds = {kind for kind, _, _ in wandb_file._chunks(data, str(path), strict=True)}
    assert {wandb_file.FIRST, wandb_file.MIDDLE, wandb_file.LAST} <= kinds
    got = read_run(path)
    assert got.config == {"big": big, "n": 1}
    assert got.history[0]["text"] == big[::-1] and got.exit_code == 0


def test_corruption_raises(wandb_dir, tmp_path):
    run = _init(wandb_dir, project="gnnbench-test", config=CONFIG)
    run.log({"loss": 0.5})
    data = bytearray(_finish(run).read_bytes())
    assert len(list(read_records(_write(tmp_path / "ok.wandb", data)))) > 3

    flipped = bytearray(data)
    flipped[wandb_file.FILE_HEADER_LEN + wandb_file.CHUNK_HEADER_LEN + 3] ^= 0x40  # 1st payload
    with pytest.raises(ValueError, match="CRC mismatch"):
        list(read_records(_write(tmp_path / "flipped.wandb", flipped)))

    with pytest.raises(ValueError, match="not a .wandb file"):
        read_run(_write(tmp_path / "header.wandb", data[:5]))

    truncated = _write(tmp_path / "killed.wandb", data[:-3])  # as if killed mid-write
    with pytest.raises(ValueError, match="truncated"):
        read_run(truncated)
    partial = read_run(truncated, strict=False)
    assert partial.config == CONFIG and partial.exit_code is None


def _write(path, data):
    path.write_bytes(bytes(data))
    return path
