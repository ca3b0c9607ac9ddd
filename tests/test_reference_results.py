"""The committed reference results agree with the code and configs that claim them: what
each run's record claims is what its command composes today (keys added since then are
declared with the default that keeps the old behaviour), the committed report is what the
report code makes of the runs, and the README's headline is what the headline code makes of
it. Records are history: none of this needs the sweep to be re-run."""

import json
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf
from support import record_claims

from gnnbench import config
from gnnbench.records import identity, schema, store
from gnnbench.records.model import Record
from gnnbench.report import headline
from gnnbench.report.rows import Row, build_rows

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results" / "h200-reference"
RUNS = sorted(RESULTS.rglob("results.json"))
# Where the device put its data cache; not part of what a run measures.
MACHINE_KEYS = ("data_dir", "data_mirror")


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return build_rows(store.find([RESULTS]))


def test_the_sweep_is_the_whole_preset_once():
    """Every model x workload x variant x seed of `experiment=reference`, each run once."""
    configs = [json.loads(p.read_text())["config"] for p in RUNS]
    made = sorted((c["model"]["name"], c["dataset"]["name"], config.variant_label(c),
                   c["train"]["seed"]) for c in configs)
    variants = ["eager", "compile-default", "compile-reduce-overhead",
                "compile-max-autotune-no-cudagraphs", "compile-reduce-overhead step"]
    assert made == sorted((m, d, v, s) for m in ("gcn", "sage")
                          for d in ("cora", "citeseer", "synthetic-arxiv", "synthetic-products")
                          for v in variants for s in (0, 1, 2))
    assert all(json.loads(p.read_text())["status"] == "ok" for p in RUNS)


def composed_today(path: Path, extra: tuple[str, ...] = ()) -> dict:
    overrides = yaml.safe_load((path.parent / "overrides.yaml").read_text())
    assert "experiment=reference" in overrides
    kept = [o for o in overrides if o.split("=")[0] not in MACHINE_KEYS]
    return OmegaConf.to_container(config.compose_config([*kept, *extra]), resolve=True)


def record_problems(record: dict, composed: dict) -> list[str]:
    """Everything the record claims about what it measured composes today; every measured
    key it lacks is declared in ADDED_KEYS with the value that reproduces what it measured.
    Keys that measure nothing (paths, W&B) may change freely."""
    measured = {k for k, _ in record_claims.leaves(identity.setting(composed, "any"))}
    return (record_claims.claim_mismatches(record["config"], composed, ignore=identity.NOT_MEASURED)
            + record_claims.unregistered_additions(record["config"], composed, measured,
                                            ignore=identity.NOT_MEASURED))


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.parent.name)
def test_each_run_claims_what_the_preset_composes_today(path):
    assert record_problems(store.read(path).dump(), composed_today(path)) == []


def test_a_new_key_with_a_default_keeps_committed_records_valid(monkeypatch):
    """A knob added after the sweep (here a temporary one) invalidates no committed run once
    declared with the default that keeps the old behaviour; undeclared, or declared with
    another default, the check says which key. An old eager record then still matches a
    compiled run of today that composes the default."""
    path = RUNS[0]
    composed = composed_today(path, ("+train.tmp_knob=0",))
    record = json.loads(path.read_text())
    assert record_problems(record, composed) == [
        "train.tmp_knob: added without an ADDED_KEYS entry"]
    monkeypatch.setitem(schema.ADDED_KEYS, "train.tmp_knob", (schema.SCHEMA_VERSION + 1, 1))
    assert record_problems(record, composed) == [
        "train.tmp_knob: composes 0, but ADDED_KEYS says old records mean 1"]
    monkeypatch.setitem(schema.ADDED_KEYS, "train.tmp_knob", (schema.SCHEMA_VERSION + 1, 0))
    assert record_problems(record, composed) == []
    upgraded = Record.model_validate(schema.upgrade(json.loads(path.read_text())))
    assert upgraded.config.train.tmp_knob == 0
    device = identity.device_type(upgraded)
    assert identity.record_setting_key(upgraded) == identity.setting_key(composed, device)
    # Without the upgrade the old record would not match: the declaration is what keeps it.
    assert identity.record_setting_key(Record.model_validate(record)) != identity.setting_key(
        composed, device)


def test_readme_headline_is_made_from_the_report():
    """The reference sweep's rows, and a graph-level and a heterogeneous workload's."""
    sources = (REPO / "results" / "headline" / "sources.txt").read_text().split()
    assert sources[0] == "h200-reference" and len(sources) == 3
    made = build_rows(store.find([REPO / "results" / s for s in sources]))
    assert {r.dataset for r in made} >= {"synthetic-graphs", "synthetic-mag", "cora"}
    page = (REPO / "results" / "README.md").read_text()
    block = page.split(headline.START, 1)[1].split(headline.END, 1)[0].strip()
    assert block == headline.to_markdown(made, "headline/report.md")


def test_whole_step_rows_keep_the_published_accuracy(rows):
    """Cora GCN, Kipf & Welling: 81.5 %; a faster step must not learn something else."""
    by_key = {(r.model, r.dataset, r.variant): r for r in rows}
    whole = by_key[("gcn", "cora", "compile-reduce-overhead step")]
    assert whole.runs == "3/3 ok"
    assert 0.79 <= whole.test_acc_mean <= 0.84
    assert abs(whole.test_acc_delta) <= 0.01


def test_update_readme_needs_its_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    with pytest.raises(ValueError, match="headline:start"):
        headline.update_readme(readme, "| table |")
    readme.write_text(f"intro\n{headline.START}\nold\n{headline.END}\nrest\n")
    headline.update_readme(readme, "| new |")
    assert readme.read_text() == f"intro\n{headline.START}\n| new |\n{headline.END}\nrest\n"


def test_the_report_shows_the_cold_compile_beside_the_median(rows):
    """Autotuning pays minutes once per machine, seconds once cached: a median over seeds
    alone would hide the first run's cost, so the report carries the max too."""
    by_key = {(r.model, r.dataset, r.variant): r for r in rows}
    autotuned = by_key[("gcn", "synthetic-arxiv", "compile-max-autotune-no-cudagraphs")]
    assert autotuned.compile_overhead_max_s > 60 > autotuned.compile_overhead_s
    for row in rows:
        if row.compile_overhead_s is not None:
            assert row.compile_overhead_max_s >= row.compile_overhead_s
