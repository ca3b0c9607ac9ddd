"""The README's "Benchmark your own model" outputs, made by running the walk-through as a user
would: examples/mymodel.py copied into a fresh folder outside the checkout, offline, no W&B
credentials.

    python tests/support/own_model_example.py --write README.md   # regenerate the blocks
    python tests/support/own_model_example.py                     # print what they would be

Each block sits in README.md between `<!-- own-model:NAME -->` and `<!-- own-model:end -->`:
the command after `$ `, then what it printed (stdout, then stderr)."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from support.processes import clean_env  # noqa: E402

COMMON = ["model=custom", "dataset=cora", "compile=true", "train.paired=true"]
EXAMPLES = {
    "broken": COMMON[:1] + ["model._target_=mymodel.BrokenNet"] + COMMON[1:],
    "fixed": COMMON[:1] + ["model._target_=mymodel.FixedNet"] + COMMON[1:],
}
PROGRESS = re.compile(r"^\[[^\]]+\] epoch \d+/\d+")
BLOCK = re.compile(r"<!-- own-model:(?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- own-model:end -->",
                   re.DOTALL)


def run_example(name: str, folder: Path) -> str:
    args = EXAMPLES[name]
    proc = subprocess.run([sys.executable, "-m", "gnnbench", *args], cwd=folder,
                          env=clean_env(folder), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=3600)
    output = (proc.stdout + proc.stderr).replace(str(folder), ".")
    shown = [line for line in output.rstrip("\n").splitlines()
             if not PROGRESS.match(line)]  # the progress lines on stderr
    lines = [f"$ python -m gnnbench {' '.join(args)}", *shown]
    return "\n".join(f"    {line}".rstrip() for line in lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, metavar="README")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gnnbench-own-model-") as tmp:
        folder = Path(tmp)
        shutil.copy(REPO / "examples" / "mymodel.py", folder / "mymodel.py")
        made = {name: run_example(name, folder) for name in EXAMPLES}
    if not args.write:
        for name, body in made.items():
            print(f"<!-- own-model:{name} -->\n{body}<!-- own-model:end -->")
        return
    text = args.write.read_text()
    missing = set(made) - {m["name"] for m in BLOCK.finditer(text)}
    if missing:
        raise SystemExit(f"{args.write} has no block for: {', '.join(sorted(missing))}")
    args.write.write_text(BLOCK.sub(lambda m: f"<!-- own-model:{m['name']} -->\n"
                                              f"{made[m['name']]}<!-- own-model:end -->", text))


if __name__ == "__main__":
    main()
