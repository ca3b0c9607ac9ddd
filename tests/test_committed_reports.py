"""Every published number is made by today's code from the records it claims: each
`report.md` and `report.csv` under results/ equals what the report code makes from the
records beside it (or from the folders its `sources.txt` names, relative to results/).
`results/regenerate.sh` makes them all again."""

from pathlib import Path

import pytest

from gnnbench.report.cli import render

RESULTS = Path(__file__).resolve().parents[1] / "results"
REPORTS = sorted(p.parent for p in RESULTS.rglob("report.md"))


def sources(folder: Path) -> list[Path]:
    listed = folder / "sources.txt"
    if listed.is_file():
        return [RESULTS / line.strip() for line in listed.read_text().splitlines()
                if line.strip()]
    return [folder]


def test_there_are_reports_and_each_has_records():
    assert len(REPORTS) >= 10
    for folder in REPORTS:
        assert all(any(s.rglob("results.json")) for s in sources(folder)), folder


@pytest.mark.parametrize("folder", REPORTS, ids=lambda p: str(p.relative_to(RESULTS)))
def test_each_committed_report_is_what_its_records_give(folder):
    _, _, markdown, table = render(sources(folder), folder.name)
    assert (folder / "report.md").read_text() == markdown
    with open(folder / "report.csv", newline="") as committed:
        assert committed.read() == table


def test_a_report_over_an_incomplete_sweep_reads_the_same_wherever_it_is_remade(tmp_path):
    """The incomplete sweep is named by its path from the reported folder's parent, not by
    an absolute path: a copy of the folder anywhere else gives the committed report."""
    import shutil

    folder = RESULTS / "h200-graphs-4" / "gin-prefetch-3"
    copy = tmp_path / "elsewhere" / folder.name
    shutil.copytree(folder, copy)
    markdown = render([copy], folder.name)[2]
    assert "**Sweep incomplete: gin-prefetch-3**" in markdown and str(tmp_path) not in markdown
    assert markdown == (folder / "report.md").read_text()
