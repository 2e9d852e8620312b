"""Nothing outside `testbed/runtime/` compares a runtime kind's name: it asks the kind's record (`testbed.runtime.kinds`).

Read from the source (ast), so a new `if runtime == "ssh"` fails here rather than waiting for a reader: a
comparison with a kind's name (`==`, `!=`, `in`, `is`), membership in a literal tuple, list or set holding
one, a `case "ssh":`, a dict keyed by one, or a subscript by one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from testbed.runtime.kinds import KIND_NAMES
from tests.conftest import REPO

NOT_SOURCE = {"tests", "build", "results", "docs"}
RUNTIME_PACKAGE = Path("testbed") / "runtime"


def source_modules() -> list[Path]:
    """Every non-test Python module of the project outside the runtime package, relative to the repository."""
    found = []
    for path in REPO.rglob("*.py"):
        rel = path.relative_to(REPO)
        top = rel.parts[0]
        if top in NOT_SOURCE or top.startswith(".") or top.endswith(".egg-info") or rel.is_relative_to(RUNTIME_PACKAGE):
            continue
        found.append(rel)
    return sorted(found)


def _is_kind(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value in KIND_NAMES


def _holds_kind(node: ast.AST) -> bool:
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(_is_kind(e) for e in node.elts)


def kind_comparisons(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each place `source` compares or keys by a kind's name."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_kind(o) for o in operands):
                yield node.lineno, "compares a kind's name"
            elif any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(_holds_kind(o) for o in operands):
                yield node.lineno, "tests membership in kinds' names"
        elif isinstance(node, ast.MatchValue) and _is_kind(node.value):
            yield node.lineno, "matches a kind's name"
        elif isinstance(node, ast.Dict) and any(_is_kind(k) for k in node.keys):
            yield node.lineno, "keys a dict by a kind's name"
        elif isinstance(node, ast.Subscript) and _is_kind(node.slice):
            yield node.lineno, "looks up by a kind's name"


def test_the_rule_sees_every_way_of_comparing_a_kind() -> None:
    source = '''
if runtime == "ssh": pass
if "docker" != runtime: pass
if runtime in ("netns", "docker"): pass
if runtime not in ["ssh"]: pass
match runtime:
    case "ssh": pass
NETWORKS = {"netns": "198.18.0.0/24"}
x = NETWORKS["docker"]
'''
    assert sorted(line for line, _ in kind_comparisons(source)) == [2, 3, 4, 5, 7, 8, 9]


def test_the_rule_leaves_other_uses_of_the_words_alone() -> None:
    source = '''
subprocess.run(["ip", "netns", "list"])
settings = ClusterSettings(runtime="docker")
if fault == "power-off" and mode in ("assign", "group"): pass
manifest = {"runtime": "netns"}
'''
    assert list(kind_comparisons(source)) == []


def test_the_source_modules_are_found() -> None:
    modules = source_modules()
    assert Path("harness/spec.py") in modules and Path("bench/bench_cluster.py") in modules
    assert not any(m.is_relative_to(RUNTIME_PACKAGE) or m.parts[0] == "tests" for m in modules)


def test_no_module_outside_the_runtime_package_compares_a_kind() -> None:
    found = [f"{module}:{line}: {what}" for module in source_modules()
             for line, what in kind_comparisons((REPO / module).read_text())]
    assert not found, "ask testbed.runtime.kinds.kind(name) instead:\n" + "\n".join(found)
