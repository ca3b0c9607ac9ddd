"""The command line carries nothing from one command to the next: a notebook, a test or a
script that calls `gnnbench.cli.main()` several times in one process gets each command's
own exit status and messages (the outcome of a run or sweep travels by argument, return
value or the sweep's hand-off file, never by module-level state)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

from support.processes import clean_env

import gnnbench

TWICE = textwrap.dedent("""
    import sys
    from gnnbench.cli import main

    for args in sys.argv[1:]:
        sys.argv = ["gnnbench", *args.split()]
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code
        print("exit", code, flush=True)
""")


def test_a_good_run_after_a_failed_one_in_the_same_process_exits_zero(tmp_path):
    quick = "train.epochs=3 train.warmup_epochs=1 wandb.mode=disabled"
    (tmp_path / "tmp").mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", TWICE, f"{quick} train.lr=1e30 hydra.run.dir={tmp_path}/bad",
         f"{quick} hydra.run.dir={tmp_path}/good",
         f"-m {quick} train.lr=1e30 train.seed=0,1 hydra.sweep.dir={tmp_path}/sweep",
         f"{quick} hydra.run.dir={tmp_path}/good-again"],
        cwd=tmp_path, env=clean_env(tmp_path, TMPDIR=str(tmp_path / "tmp")),
        capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL)
    exits = [line for line in proc.stdout.splitlines() if line.startswith("exit ")]
    assert exits == ["exit 1", "exit 0", "exit 1", "exit 0"], proc.stderr[-3000:]
    assert not list((tmp_path / "tmp").glob("gnnbench-sweep-*"))  # hand-off files removed


def test_no_module_keeps_results_in_module_level_state():
    """What this guards against: an empty module-level container that code fills for other
    modules to read (a last sweep, the failed runs, the running sweep), and one module
    setting another's global (a progress mode)."""
    root = Path(gnnbench.__file__).parent
    modules = {p.stem for p in root.rglob("*.py")}
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(
                    node.value, (ast.Dict, ast.List, ast.Set)) and not any(
                    getattr(node.value, f, None) for f in ("elts", "keys")):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found += [f"{path.relative_to(root)}: {t.id} (empty container)"
                          for t in targets if isinstance(t, ast.Name)
                          and not t.id.startswith("_")]
        imported = {(a.asname or a.name).split(".")[-1] for n in ast.walk(tree)
                    if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names} & modules
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                found += [f"{path.relative_to(root)}: {ast.unparse(t)} (another module's)"
                          for t in node.targets if isinstance(t, ast.Attribute)
                          and isinstance(t.value, ast.Name) and t.value.id in imported]
    assert found == []
