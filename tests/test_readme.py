"""The README is checked against today's code: its example outputs are what the commands
print now (modulo times, paths and the machine's load), and it opens where a newcomer
starts."""

from pathlib import Path

import pytest
from support import readme_examples

README = Path(__file__).resolve().parents[1] / "README.md"


def test_set_up_comes_first():
    lines = README.read_text().splitlines()
    assert "## Set-up" in lines[:40]
    setup = lines.index("## Set-up")
    assert lines[setup + 2].strip().startswith("pip install")
    assert lines[setup + 3].strip().startswith("pytest")


def test_every_example_block_is_in_the_readme_and_filled():
    blocks = readme_examples.blocks(README.read_text())
    assert set(blocks) == set(readme_examples.EXAMPLES)
    assert all(body.strip().startswith("$ python -m gnnbench") for body in blocks.values())


def test_normalise_keeps_what_matters_and_drops_what_varies():
    a = ("    => 1.07x the eager train step [95% CI 1.03–1.14] against e-s0 (e-s0: unstable); "
         "compiling paid back after 12 epochs (cold cache); test accuracy -0.0120 vs eager\n"
         "      warning: load 3.0 per CPU\n")
    b = ("    => no measurable difference in the train step (0.97x, 95% CI 0.90–1.04) against "
         "e-s0; compiling never pays back here; test accuracy +0.0010 vs eager\n")
    assert readme_examples.normalise(a) == readme_examples.normalise(b)
    assert readme_examples.normalise(a) != readme_examples.normalise(a.replace("test", "val"))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(readme_examples.EXAMPLES))
def test_each_example_is_what_its_commands_print_today(name):
    shown = readme_examples.blocks(README.read_text())[name]
    made = readme_examples.run_example(name)
    assert readme_examples.normalise(made) == readme_examples.normalise(shown), made
