"""The README's example outputs, made by running their commands as a user would (a fresh
folder, offline, no W&B credentials), so that they cannot go stale.

    python tests/support/readme_examples.py --write README.md   # regenerate the blocks
    python tests/support/readme_examples.py                     # print what they would be

Each example is a block in README.md between `<!-- example:NAME -->` and
`<!-- example:end -->`: the commands, each after `$ `, then what the last one printed.
`tests/test_readme.py` runs the commands again and compares with the README modulo what
varies with the machine (`normalise`)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.processes import clean_env  # noqa: E402

# name: (commands run in one fresh folder, in order; the stream of the last one shown)
EXAMPLES: dict[str, tuple[list[list[str]], str]] = {
    "main-job": ([[]], "stdout"),
    "one-run": ([["model=sage", "dataset=cora"],
                 ["model=sage", "dataset=cora", "compile=true"]], "stdout"),
    "bad-model": ([["model=GCN"]], "stderr"),
    "bad-key": ([["+train.epoch=5"]], "stderr"),
    "bad-value": ([["train.lr=abc"]], "stderr"),
}
BLOCK = re.compile(r"<!-- example:(?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- example:end -->",
                   re.DOTALL)


def run_example(name: str) -> str:
    """The block's text: each command after `$ `, then the last one's output, indented."""
    commands, stream = EXAMPLES[name]
    with tempfile.TemporaryDirectory(prefix="gnnbench-readme-") as folder:
        cwd = Path(folder)
        for args in commands:
            proc = subprocess.run([sys.executable, "-m", "gnnbench", *args], cwd=cwd,
                                  env=clean_env(cwd), stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=600)
        output = getattr(proc, stream).replace(folder, ".")
    shown = [f"$ python -m gnnbench {' '.join(args)}".rstrip() for args in commands]
    lines = shown + output.rstrip("\n").splitlines()
    return "\n".join(f"    {line}".rstrip() for line in lines) + "\n"


def normalise(text: str) -> str:
    """What may differ between two machines or two runs of the same example: numbers
    (times, sizes, accuracies), folder names, W&B ids, warnings about the machine's load,
    and whether a ratio's interval held 1.0 (which noise on a loaded CPU decides)."""
    lines = [line for line in text.splitlines() if "warning:" not in line]
    text = "\n".join(lines)
    text = re.sub(r"outputs/runs/[^/\s]+", "outputs/runs/RUN", text)
    text = re.sub(r"offline-run-[\w-]+", "offline-run-ID", text)
    text = re.sub(r"no measurable difference in the train step \(([^,]+), ([^)]+)\)",
                  r"\1 the eager train step [\2]", text)
    text = re.sub(r"(inference|whole epoch) no measurable difference", r"\1 Nx", text)
    text = re.sub(r" against (\S+) \([^()]*\)", r" against \1", text)
    text = re.sub(r"compiling (paid back after [^;]*|pays back after [^;]*|never pays back "
                  r"here)", "compiling PAYS", text)
    return re.sub(r"[+-]?\d+(\.\d+)?", "N", text)


def blocks(readme: str) -> dict[str, str]:
    return {m["name"]: m["body"] for m in BLOCK.finditer(readme)}


def write(readme: Path, made: dict[str, str]) -> None:
    text = readme.read_text()
    missing = set(made) - set(blocks(text))
    if missing:
        raise SystemExit(f"{readme} has no block for: {', '.join(sorted(missing))}")
    readme.write_text(BLOCK.sub(lambda m: f"<!-- example:{m['name']} -->\n"
                                          f"{made.get(m['name'], m['body'])}"
                                          "<!-- example:end -->", text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, metavar="README")
    parser.add_argument("names", nargs="*", default=list(EXAMPLES))
    args = parser.parse_args()
    made = {name: run_example(name) for name in args.names}
    if args.write:
        write(args.write, made)
    else:
        for name, body in made.items():
            print(f"<!-- example:{name} -->\n{body}<!-- example:end -->")


if __name__ == "__main__":
    main()
