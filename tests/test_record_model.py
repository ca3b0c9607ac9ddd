"""The run record is one declared type: every committed record loads through it and reads
back as written, the JSON Schema published for other tools is the declaration's own and
accepts those records, and a record that breaks the declaration is refused when it is made
or written, not found later by a reader."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import REPO
from pydantic import ValidationError

from gnnbench.config import compose_config
from gnnbench.records import model, store
from gnnbench.records.schema import upgrade

COMMITTED = sorted((REPO / "results").rglob("results.json"))


def test_committed_records_load_and_read_back_as_written():
    assert len(COMMITTED) > 400  # the reference sweeps are there
    for path in COMMITTED:
        raw = json.loads(path.read_text())
        record = model.parse(copy.deepcopy(raw))
        # Validating changes no value: what a reader sees is what the run wrote (upgraded).
        assert record.dump() == upgrade(copy.deepcopy(raw)), path
        assert record.config.as_dict == upgrade(copy.deepcopy(raw))["config"], path
        timing = raw.get("timing") or {}
        name = "train_s" if raw.get("schema_version", 1) >= 8 else "train_step_s"
        if raw["status"] == "ok" and timing.get(name):  # a serving record has no train time
            # written as train_step_s before schema 8, read as train_s
            written = timing[name]
            assert record.timing.train_s.median == written["median"]
            assert not record.timing.has("train_step_s")


def test_the_published_schema_is_the_declaration():
    on_disk = json.loads((REPO / "gnnbench/records" / model.SCHEMA_FILE).read_text())
    assert on_disk == model.json_schema(), (
        "regenerate it: python -m gnnbench.records.model --write")


def test_other_tools_can_check_records_against_the_published_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "gnnbench/records" / model.SCHEMA_FILE).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for path in COMMITTED[::10]:
        validator.validate(upgrade(json.loads(path.read_text())))
    bad = upgrade(json.loads(COMMITTED[0].read_text()))
    bad["epochs"][0]["train_s"] = "fast"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)


@pytest.fixture
def fresh() -> model.Record:
    return model.new_record(compose_config(["train.epochs=3"]), "gcn-synthetic-eager-s0")


def test_a_value_of_the_wrong_type_is_refused_when_it_is_set(fresh):
    with pytest.raises(ValidationError, match="warmup_epochs"):
        fresh.timing = {"warmup_epochs": True}
    with pytest.raises(ValidationError, match="status"):
        fresh.status = "fine"


def test_an_ok_record_without_its_measures_is_not_written(fresh, tmp_path):
    with pytest.raises(ValueError, match="timing is null, expected an object"):
        store.write(fresh, tmp_path)
    assert list(tmp_path.iterdir()) == []  # neither the record nor a temporary file
    fresh.status, fresh.reason = "error", "nothing ran"
    store.write(fresh, tmp_path)
    back = store.read(tmp_path)
    assert (back.status, back.reason, back.config.as_dict) == (
        "error", "nothing ran", fresh.config.as_dict)
