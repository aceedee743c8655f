"""The package's layout rules, read from the source: every module belongs to a layer and imports only
from its own layer or the layers below it (at module level and inside functions alike), no entry point
imports another, no module writes into a registry that another module owns, no module is long, and
ttt/'s root holds few modules (the entry points and what every part shares; the rest in subpackages)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ttt"
ENTRY_POINTS = ("ttt.train", "ttt.benchmark", "ttt.play", "ttt.perf", "ttt.plot", "ttt.tactics", "ttt.serve",
                "ttt.calibration", "ttt.recalibrate")
# the layers, lowest first: a module may import from its own layer and the layers before it
LAYERS = (
    # the harness's clock, curves and event file import nothing of ttt above the base: they stay in it
    ("base", ("ttt.checkpoint", "ttt.cli", "ttt.device", "ttt.harness.clock", "ttt.harness.curves",
              "ttt.harness.event_file")),
    ("games", ("ttt.games",)),
    ("config", ("ttt.config",)),
    ("nets", ("ttt.nets",)),
    ("players", ("ttt.players", "ttt.interop")),
    ("evaluation", ("ttt.evaluation",)),
    ("agents", ("ttt.agents",)),
    # the environments load their opponents by spec (ttt.harness.specs): above the rest of ttt.interop
    ("harness", ("ttt.harness", "ttt.interop.envs", "ttt.web")),
    ("entry points", ENTRY_POINTS),
)
REGISTRIES = {"PLAYERS": "players/__init__.py", "AGENTS": "agents/__init__.py", "PARTS": "agents/dqn/parts/__init__.py"}
MAX_LINES = 500
MAX_ROOT_MODULES = 15  # ttt/'s own .py files, __init__ included: the entry points and what all of ttt shares
# modules over MAX_LINES, each to be split: the test fails when one is missing here or a new one appears
OVER_MAX_LINES: set[str] = set()


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(tree: ast.AST) -> set[str]:
    """Every module ``tree`` imports, anywhere in it (inside functions and ``if`` blocks too)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def layer(name: str) -> int | None:
    """The index of the layer of module ``name`` (its longest listed prefix); None outside ``ttt``."""
    best, index = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, index = len(prefix), i
    return index


def test_every_module_has_a_layer():
    for path, _ in modules():
        name = module_name(path)
        assert name == "ttt" or layer(name) is not None, f"{name} belongs to no layer"


def test_layers_classify_modules_by_prefix():
    assert LAYERS[layer("ttt.agents.dqn.td")][0] == "agents"
    assert LAYERS[layer("ttt.games.exact")][0] == "games"
    assert LAYERS[layer("ttt.harness.training")][0] == "harness" and layer("numpy") is None


def test_no_module_imports_from_a_higher_layer():
    upward = []
    for path, tree in modules():
        here = layer(module_name(path))
        for imported in imported_modules(tree):
            there = layer(imported)
            if here is not None and there is not None and there > here:
                upward.append(f"{module_name(path)} ({LAYERS[here][0]}) imports {imported} ({LAYERS[there][0]})")
    assert not upward, "\n".join(sorted(upward))


def test_the_layer_check_sees_imports_inside_functions():
    tree = ast.parse("def f():\n    if True:\n        from ttt.harness.training import Run\n")
    assert "ttt.harness.training.Run" in imported_modules(tree)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_no_entry_point_imports_another(entry):
    path = PACKAGE / f"{entry.split('.')[1]}.py"
    others = set(ENTRY_POINTS) - {entry}
    assert not imported_modules(ast.parse(path.read_text())) & others


def test_registries_are_written_only_where_they_are_defined():
    for path, tree in modules():
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    owner = REGISTRIES.get(target.value.id)
                    assert owner is None or path == PACKAGE / owner, f"{path} writes into {target.value.id}"


def test_no_module_is_over_the_line_limit():
    long = {module_name(p) for p, _ in modules() if len(p.read_text().splitlines()) > MAX_LINES}
    assert long == OVER_MAX_LINES


LEARNER = PACKAGE / "agents" / "dqn"
MAX_FUNCTION_LINES, MAX_FUNCTION_IFS = 50, 6  # under the learner's package
MAX_CORE_LINES = 300  # the core, the design's algorithm in one file (ttt/agents/dqn/trainer.py)


def function_sizes(tree: ast.AST):
    """``(name, first line, lines, ifs)`` of every function in ``tree``, nested ones too; ``ifs`` counts ``if``
    statements and ``x if c else y`` expressions alike."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ifs = sum(isinstance(n, (ast.If, ast.IfExp)) for n in ast.walk(node))  # statements and expressions
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1, ifs


def test_the_learners_functions_are_short_and_branch_little():
    big = [f"{path.relative_to(PACKAGE)}:{line} {name}: {lines} lines, {ifs} ifs"
           for path in sorted(LEARNER.rglob("*.py"))
           for name, line, lines, ifs in function_sizes(ast.parse(path.read_text()))
           if lines > MAX_FUNCTION_LINES or ifs > MAX_FUNCTION_IFS]
    assert not big, "\n".join(big)


def test_the_function_size_check_sees_a_long_branching_function():
    ifs = "".join(f"    if x == {i}:\n        x += 1\n" for i in range(6))
    source = "def f(x):\n" + ifs + "    return 1 if x else 0\n"
    assert [(n, lines, ifs) for n, _, lines, ifs in function_sizes(ast.parse(source))] == [("f", 14, 7)]


def test_the_core_fits_in_one_reading():
    assert len((LEARNER / "trainer.py").read_text().splitlines()) <= MAX_CORE_LINES


def test_the_root_of_the_package_holds_few_modules():
    root = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} modules at ttt/'s root: {', '.join(root)}"


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_is_at_the_root(entry):
    assert (PACKAGE / f"{entry.split('.')[1]}.py").is_file()  # the README runs it as python -m ttt.NAME


def learner_names() -> tuple[str, ...]:
    from ttt.agents import AGENTS

    return tuple(AGENTS)


@pytest.mark.parametrize("path", sorted((PACKAGE / "harness").glob("*.py")), ids=lambda p: p.name)
def test_the_harness_names_no_learner(path):
    """What is one learner's (its retired settings, its network alone) lives in that learner's module: the
    harness asks the learner a config names. Player specs (``specs.py``) tell a user in prose which learner's
    players take a checkpoint option; there, no learner's name may be a value the code compares or looks up."""
    source = path.read_text()
    if path.name != "specs.py":
        named = re.findall(rf"\b({'|'.join(learner_names())})\b", source)
        assert not named, f"{path.name} names the learners {sorted(set(named))}"
    constants = {n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant)}
    assert not constants & set(learner_names())

