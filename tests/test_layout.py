"""The package's layout rules, read from the source: no entry point imports another, and no module
writes into a registry that another module owns."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ttt"
ENTRY_POINTS = ("ttt.train", "ttt.benchmark", "ttt.play", "ttt.perf", "ttt.plot", "ttt.tactics", "ttt.serve",
                "ttt.calibration")
# ttt.tactics is also a library: training's evaluations measure the tactics suites with it, and hints
# ask it for a player's network alone
LIBRARY_USES = {"training": {"ttt.tactics"}, "human": {"ttt.tactics"}}
REGISTRIES = {"PLAYERS": "players/__init__.py", "AGENTS": "agents/__init__.py"}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_no_entry_point_imports_another(entry):
    path = PACKAGE / f"{entry.split('.')[1]}.py"
    others = set(ENTRY_POINTS) - {entry}
    assert not imported_modules(ast.parse(path.read_text())) & others
    for other_path, tree in modules():  # nor does any other module reach an entry point
        if other_path.stem not in {e.split(".")[1] for e in ENTRY_POINTS}:
            allowed = LIBRARY_USES.get(other_path.stem, set())
            assert not (imported_modules(tree) & set(ENTRY_POINTS)) - allowed, other_path


def test_registries_are_written_only_where_they_are_defined():
    for path, tree in modules():
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    owner = REGISTRIES.get(target.value.id)
                    assert owner is None or path == PACKAGE / owner, f"{path} writes into {target.value.id}"
