"""The package's shape, checked from its source: imports only go down the layers, no module
imports itself back through others, and test-only helpers stay out of the package."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "gnnbench"
# Lower layers never import higher ones; packages of one rank never import each other.
LAYERS = {"config": 0, "data": 1, "models": 1, "measure": 2, "training": 3, "records": 4,
          "runner": 5, "report": 5, "cli": 6, "serve": 6, "__main__": 7, "benchmarks": 7}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """Every gnnbench module `name` imports, at any depth of its code (a function-level
    import is still an import)."""
    tree = ast.parse(MODULES[name].read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("gnnbench")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("gnnbench"):
            for alias in node.names:  # `from gnnbench import config` imports a module
                child = f"{node.module}.{alias.name}"
                found.add(child if child in MODULES else node.module)
    return {m for m in found if m in MODULES}


def layer(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_module_has_a_layer():
    assert {layer(m) for m in MODULES} - {"__init__"} == set(LAYERS)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_down_the_layers(name):
    if layer(name) == "__init__":
        assert imports_of(name) == set()
        return
    for target in imports_of(name):
        if layer(target) != layer(name):
            assert LAYERS[layer(target)] < LAYERS[layer(name)], f"{name} imports {target}"


def test_no_import_cycles():
    graph = {name: imports_of(name) for name in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, "import cycle: " + " -> ".join([*path, node, nxt])
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


def uses(name: str, prefixes: tuple[str, ...]) -> bool:
    tree = ast.parse(MODULES[name].read_text())
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names.append(f"{node.value.id}.{node.attr}")
        if any(n == p or n.startswith(p + ".") for n in names for p in prefixes):
            return True
    return False


def test_only_records_imports_wandb():
    assert {m for m in MODULES if uses(m, ("wandb",))} == {"gnnbench.records.publish"}


def test_only_measurement_and_compilation_touch_dynamo():
    touching = {m for m in MODULES if uses(m, ("torch._dynamo", "torch._inductor"))}
    assert touching == {"gnnbench.measure.dynamo", "gnnbench.training.compilation",
                        "gnnbench.training.caches"}


def test_test_helpers_are_not_in_the_package():
    assert importlib.util.find_spec("gnnbench.wandb_file") is None
    assert not any("write_ogb_raw" in p.read_text() for p in MODULES.values())
    assert (REPO / "tests" / "support" / "wandb_file.py").is_file()


def test_one_config_location():
    """The package reads the top-level conf/ (through its link), and nothing else."""
    from gnnbench import config

    assert config.CONF_DIR.resolve() == (REPO / "conf").resolve()
    assert not list(PACKAGE.rglob("*.yaml")) or (PACKAGE / "conf").is_symlink()
