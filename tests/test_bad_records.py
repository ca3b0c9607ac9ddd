"""No record stops a report or a run: every results.json that no reader can use (a command
that never composed, a hand edit, a file cut short, a newer schema) is skipped wherever
records are read, with one warning line naming the file and its first problem. The bad
records are made by editing copies of a real one."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from support.processes import run

from gnnbench.records import model, schema, store

WARNING = "gnnbench: warning: skipping invalid record"


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("gnnbench: warning:")]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A folder whose D/b holds a real run, made by the command line."""
    root = tmp_path_factory.mktemp("bad-records").resolve()
    proc = run(["train.epochs=12", "hydra.run.dir=D/b"], root)
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.fixture
def good(base) -> dict:
    return json.loads((base / "D/b/results.json").read_text())


def edited(record: dict, key: str, value: object) -> dict:
    out = copy.deepcopy(record)
    *parents, last = key.split(".")
    node = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return out


# (what is wrong, the record made from a real one, the problem the warning names)
ODD_SHAPES = {
    "a top-level list": (lambda r: [r], "the file holds an array, expected an object"),
    "config null": (lambda r: edited(r, "config", None), "config is null, expected an object"),
    "config.model a string": (lambda r: edited(r, "config.model", "gcn"),
                              "config.model is a string, expected an object"),
    "status 5": (lambda r: edited(r, "status", 5), "status 5 is not one of ok, graph_break,"),
    "accuracy null": (lambda r: edited(r, "accuracy", None),
                      "accuracy is null, expected an object"),
}
MORE_PROBLEMS = {
    "a partial config": (lambda r: edited(r, "config.train", KeyError),
                         "config.train is missing"),
    "a string for a time": (lambda r: edited(r, "epochs.3.train_s", "fast"),
                            "epochs[3].train_s is a string, expected a number"),
    "a boolean for a count": (lambda r: edited(r, "timing.warmup_epochs", True),
                              "timing.warmup_epochs is a boolean, expected an integer"),
    "a newer schema": (lambda r: edited(r, "schema_version", schema.SCHEMA_VERSION + 1),
                       f"schema_version {schema.SCHEMA_VERSION + 1} is newer than this"),
    "an unknown schema": (lambda r: edited(r, "schema_version", "five"),
                          'schema_version "five" is not a version gnnbench knows'),
    "ok without steady epochs": (lambda r: edited(r, "epochs", r["epochs"][:2]),
                                 "status ok, but none of its 2 epochs is after its 10 warm-up"),
}


def write_record(folder: Path, record: object) -> Path:
    folder.mkdir(parents=True)
    path = folder / "results.json"
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize("make, problem", [*ODD_SHAPES.values(), *MORE_PROBLEMS.values()],
                         ids=[*ODD_SHAPES, *MORE_PROBLEMS])
def test_an_invalid_record_is_skipped_with_its_first_problem(tmp_path, good, capsys, make,
                                                              problem):
    write_record(tmp_path / "good", good)
    bad = write_record(tmp_path / "bad", make(good))
    assert [r.path for r in store.find([tmp_path])] == [str(tmp_path / "good/results.json")]
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"{WARNING} {bad} ({problem}")


@pytest.mark.parametrize("text, problem", [(None, "not JSON: "), ("", "an empty file")],
                         ids=["cut short", "empty"])
def test_a_truncated_or_empty_file_is_skipped_likewise(tmp_path, base, capsys, text, problem):
    whole = (base / "D/b/results.json").read_text()
    bad = tmp_path / "bad" / "results.json"
    bad.parent.mkdir()
    bad.write_text(whole[: len(whole) // 2] if text is None else text)
    assert store.find([tmp_path]) == []
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"{WARNING} {bad} ({problem}")


def test_reference_searches_skip_invalid_records(tmp_path, good, capsys):
    """A compiled run's eager reference and a DDP run's one-rank reference are found past an
    invalid record, which is named once per search."""
    write_record(tmp_path / "eager", good)
    bad = write_record(tmp_path / "typo", edited(good, "config", None))
    found = store.eager_references([tmp_path], model.parse(copy.deepcopy(good)))
    assert [r.name for r in found] == [good["name"]]
    ddp = edited(edited(good, "config.train.distributed", "ddp"), "config.train.world_size", 2)
    assert [r.name for r in store.scaling_references([tmp_path], model.parse(ddp))] == [
        good["name"]]
    assert capsys.readouterr().err.splitlines() == [
        f"{WARNING} {bad} (config is null, expected an object)"] * 2


def test_the_report_skips_the_record_of_a_command_that_never_composed(base):
    proc = run(["model=gat_typo", "hydra.run.dir=D/a"], base)
    assert proc.returncode != 0 and "unknown model 'gat_typo'" in proc.stderr
    report = run(["D", "--no-wandb"], base, module="gnnbench.report")
    assert report.returncode == 0, report.stderr
    assert warnings(report.stderr) == [
        f"{WARNING} {base / 'D/a/results.json'} (config is null, expected an object)"]
    assert "| gcn | synthetic | eager | 1/1 ok |" in (base / "D/report.md").read_text()


def test_the_report_survives_odd_shaped_records(tmp_path, good):
    folder = tmp_path / "E"
    write_record(folder / "good", good)
    bad = [write_record(folder / f"odd{i}", make(good))
           for i, (make, _) in enumerate(ODD_SHAPES.values())]
    report = run([str(folder), "--no-wandb"], tmp_path, module="gnnbench.report")
    assert report.returncode == 0, report.stderr
    found = warnings(report.stderr)
    assert len(found) == 5
    for path, (_, problem), line in zip(bad, ODD_SHAPES.values(), found, strict=True):
        assert line.startswith(f"{WARNING} {path} ({problem}")
    text = (folder / "report.md").read_text()
    assert "| gcn | synthetic | eager | 1/1 ok |" in text and "**Records**: 1:" in text


@pytest.mark.slow  # several gnnbench processes or a sweep of jobs: the tier rule
def test_a_sweep_resumes_past_an_invalid_record_and_reports_without_it(tmp_path, good):
    """A stray invalid record in a sweep's folder costs neither its end-of-run report nor its
    exit status; a job whose own record became invalid is run again on resume, not kept."""
    sweep = tmp_path / "S"
    stray = write_record(sweep / "stray", edited(good, "config", None))
    command = ["-m", "train.epochs=3", "train.warmup_epochs=1", "wandb.mode=disabled",
               f"hydra.sweep.dir={sweep}"]
    first = run(command, tmp_path)
    assert first.returncode == 0, first.stderr
    assert warnings(first.stderr) == [
        f"{WARNING} {stray} (config is null, expected an object)"]
    [job] = [p for p in sweep.glob("0_*/results.json")]
    job.write_text(json.dumps(edited(json.loads(job.read_text()), "accuracy", None)))

    again = run(command, tmp_path)
    assert again.returncode == 0, again.stderr
    assert "kept 0_" not in again.stdout
    assert warnings(again.stderr) == [
        f"{WARNING} {job} (accuracy is null, expected an object)",
        f"{WARNING} {stray} (config is null, expected an object)"]
    assert store.read(job).status == "ok" and (sweep / "report.md").is_file()


@pytest.mark.slow
def test_a_compiled_run_finds_no_reference_past_a_typo_and_still_records(tmp_path):
    """The record of a command that never composed sits beside every later run of the cwd;
    a compiled run's eager-reference search skips it and the run ends with its record."""
    typo = run(["model=GCN"], tmp_path)
    assert typo.returncode != 0
    [invalid] = (tmp_path / "outputs/runs").glob("*/results.json")
    compiled = run(["compile=true", "train.epochs=12"], tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    assert warnings(compiled.stderr) == [
        f"{WARNING} {invalid.resolve()} (config is null, expected an object)"]
    [record] = [store.read(p) for p in (tmp_path / "outputs/runs").glob("*/results.json")
                if p != invalid]
    assert record.status == "ok" and record.config.compile is True
