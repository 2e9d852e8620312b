"""The folder rules of docs/architecture.md, held by reading every module's imports.

Each module belongs to a unit: a top-level folder, or a module the architecture names on a row
of its own (the command line). An import is an arrow from the importing module's unit to the
imported module's; `ast` finds them all, inside functions and under TYPE_CHECKING included.
The test fails on an arrow `ALLOWED` does not hold, on a folder with Python code no row names,
on a cycle among `testbed/`'s sub-packages and its own modules, on any import cycle between two
modules anywhere in the checkout (imports inside functions count, those under `if TYPE_CHECKING:`
do not), on a source module
over 400 lines, on a layer pyproject.toml's package lists leave out, and when
docs/architecture.md's tables name other arrows than the ones declared here.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import subprocess
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from tests.conftest import REPO

MAX_LINES = 400
ARCHITECTURE = REPO / "docs" / "architecture.md"
EVERYTHING = "everything"
# A module that belongs to another unit than its folder's: `python -m harness`, a thin entry point into the
# command line (faultline/) that nothing imports, so its arrow up to faultline/ is the command line's own.
MODULE_UNITS = {"harness/__main__.py": "faultline/"}

# unit -> the units it may import. The one declaration; docs/architecture.md's first table says the same.
ALLOWED: dict[str, frozenset[str] | str] = {
    "faultline/": frozenset({"harness/", "campaign/", "report/", "spark_analysis/", "nemesis/", "testbed/",
                             "checkers/"}),
    "campaign/": frozenset({"harness/", "report/", "workloads/", "testbed/", "checkers/"}),
    "harness/": frozenset({"report/", "nemesis/", "workloads/", "testbed/", "checkers/"}),
    "report/": frozenset({"nemesis/", "testbed/", "checkers/"}),
    "spark_analysis/": frozenset({"testbed/", "checkers/"}),
    "nemesis/": frozenset({"testbed/"}),
    "workloads/": frozenset({"testbed/", "checkers/"}),
    "testbed/": frozenset({"checkers/"}),
    "checkers/": frozenset(),
    "compose/": frozenset({"testbed/", "checkers/"}),
    "bench/": frozenset({"harness/", "campaign/", "report/", "spark_analysis/", "nemesis/", "workloads/",
                         "testbed/", "checkers/"}),
    "tests/": EVERYTHING,
}
# testbed's sub-package -> the sub-packages it may import (the architecture's second table).
TESTBED_ALLOWED: dict[str, frozenset[str]] = {
    "testbed/kafka/": frozenset({"testbed/runtime/", "testbed/dist/"}),
    "testbed/runtime/": frozenset({"testbed/dist/"}),
    "testbed/dist/": frozenset(),
}

Edges = dict[tuple[str, str], set[str]]  # (from unit, to unit) -> the files that import so


# --- reading the imports -----------------------------------------------------------------------------------


def python_files(root: Path) -> list[Path]:
    """Every .py file of the checkout that git tracks or would track (not .venv, results, build)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
                            cwd=root, capture_output=True, text=True, check=True).stdout.split()
    return sorted(root / name for name in listed if (root / name).is_file())


def module_of(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of every node under an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): imports never run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            skipped.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    return skipped


def imported_modules(root: Path, path: Path, run_time_only: bool = False) -> set[str]:
    """Every module `path` imports, by its full dotted name (`from a import b`: `a.b` when that is a module).

    With `run_time_only`, not those under `if TYPE_CHECKING:` (they are arrows, but never run)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_of(root, path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    skipped = type_checking_only(tree) if run_time_only else set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if is_module(root, sub) else module)
    return found


def is_module(root: Path, dotted: str) -> bool:
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def unit_of_path(rel: str) -> str:
    """The unit of a file (a path relative to the checkout): its module unit, else its top-level folder."""
    return MODULE_UNITS.get(rel) or rel.split("/", 1)[0] + "/"


def unit_of_module(root: Path, dotted: str) -> str | None:
    """The unit a dotted module name belongs to, or None when it is not this project's."""
    parts = dotted.split(".")
    if not (root / parts[0]).is_dir():
        return None
    path = root.joinpath(*parts)
    rel = str(path.with_suffix(".py").relative_to(root)) if path.with_suffix(".py").is_file() else ""
    return unit_of_path(rel) if rel in MODULE_UNITS else parts[0] + "/"


def unit_in_testbed(root: Path, rel_or_dotted: str) -> str:
    """Inside testbed/: a sub-package (`testbed/kafka/`) or one of testbed's own modules (`testbed/state.py`)."""
    parts = rel_or_dotted.removesuffix(".py").replace(".", "/").split("/")
    if len(parts) < 2 or parts[1] == "__init__":
        return "testbed/__init__.py"
    return f"testbed/{parts[1]}/" if (root / "testbed" / parts[1]).is_dir() else f"testbed/{parts[1]}.py"


def import_edges(root: Path, files: Iterable[Path]) -> tuple[Edges, Edges]:
    """The arrows between units, and those inside testbed/ (between its sub-packages and own modules)."""
    units: Edges = defaultdict(set)
    inside: Edges = defaultdict(set)
    for path in files:
        rel = str(path.relative_to(root))
        source = unit_of_path(rel)
        for dotted in imported_modules(root, path):
            target = unit_of_module(root, dotted)
            if target is None:
                continue
            if target != source:
                units[(source, target)].add(rel)
            if source == target == "testbed/":
                a, b = unit_in_testbed(root, rel), unit_in_testbed(root, dotted)
                if a != b and b != "testbed/__init__.py":
                    inside[(a, b)].add(rel)
    return dict(units), dict(inside)


def module_graph(root: Path, files: Iterable[Path]) -> dict[str, set[str]]:
    """Module -> the modules of this project it imports when it runs (inside functions too, not TYPE_CHECKING).

    `from pkg import name` with `name` no module is an arrow to `pkg` (its `__init__`); the packages an import
    passes through on its way (`a` of `a.b`) are not arrows: they hold no module's code but their own."""
    graph: dict[str, set[str]] = {}
    for path in files:
        source = module_of(root, path)
        graph[source] = {dotted for dotted in imported_modules(root, path, run_time_only=True)
                         if dotted != source and is_module(root, dotted)}
    return graph


def module_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The import cycles between modules: each strongly connected set of two or more, sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for start in sorted(graph):
        if start not in index:
            visit(start)
    return sorted(found)


def cycle_lines(graph: Mapping[str, set[str]], cycles: Iterable[list[str]]) -> list[str]:
    """One line per cycle, naming its arrows (`a -> b`), for a failure message a reader can act on."""
    lines = []
    for members in cycles:
        inside = set(members)
        arrows = [f"{a} -> {b}" for a in members for b in sorted(graph.get(a, set()) & inside)]
        lines.append(f"{{{', '.join(members)}}}: {'; '.join(arrows)}")
    return lines


# --- the rules ---------------------------------------------------------------------------------------------


def may_import(allowed: Mapping[str, frozenset[str] | str], source: str, target: str) -> bool:
    rule = allowed.get(source)
    return rule == EVERYTHING or (isinstance(rule, frozenset) and target in rule)


def forbidden(edges: Edges, allowed: Mapping[str, frozenset[str] | str] = ALLOWED) -> list[str]:
    """One line per arrow the table does not allow (or from a unit it does not name)."""
    return [f"{a} -> {b} ({', '.join(sorted(files))})" for (a, b), files in sorted(edges.items())
            if not may_import(allowed, a, b)]


def forbidden_inside_testbed(inside: Edges, allowed: Mapping[str, frozenset[str]] = TESTBED_ALLOWED) -> list[str]:
    """Arrows between testbed's sub-packages that its table does not allow."""
    return [f"{a} -> {b} ({', '.join(sorted(files))})" for (a, b), files in sorted(inside.items())
            if a.endswith("/") and b.endswith("/") and b not in allowed.get(a, frozenset())]


def find_cycle(edges: Iterable[tuple[str, str]]) -> list[str] | None:
    """One cycle of the graph (its nodes, the first repeated at the end), or None."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        graph[a].append(b)
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def declared_arrows(allowed: Mapping[str, frozenset[str] | str]) -> list[tuple[str, str]]:
    return [(a, b) for a, rule in allowed.items() if isinstance(rule, frozenset) for b in rule]


# --- the architecture's tables ------------------------------------------------------------------------------


def table_rows(text: str, first_header: str) -> list[list[str]]:
    """The body rows of the Markdown table whose header row starts with `| first_header |`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def rule_of(cell: str) -> frozenset[str] | str:
    """A "may import" cell: `everything`, `nothing`, or the units it names (folders, the command line)."""
    if cell == EVERYTHING:
        return EVERYTHING
    return frozenset(name for name in names(cell) if name.endswith("/") or name in MODULE_UNITS)


def documented_rules(text: str) -> tuple[dict[str, frozenset[str] | str], dict[str, frozenset[str]]]:
    """The architecture's two tables as rules: unit -> what it may import (a row's paths name one unit)."""
    layers: dict[str, frozenset[str] | str] = {}
    for row in table_rows(text, "layer"):
        paths = names(row[1])
        for path in paths:  # a row of two folders (nemesis/, workloads/): one rule each
            layers[MODULE_UNITS.get(path, path)] = rule_of(row[3])
    testbed: dict[str, frozenset[str]] = {}
    for row in table_rows(text, "sub-package"):
        rule = rule_of(row[2])
        assert isinstance(rule, frozenset)
        testbed[names(row[0])[0]] = rule
    return layers, testbed


# --- the tests ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def edges() -> tuple[Edges, Edges]:
    return import_edges(REPO, python_files(REPO))


def test_every_folder_with_code_has_a_row() -> None:
    folders = {unit_of_path(str(p.relative_to(REPO))) for p in python_files(REPO) if "/" in str(p.relative_to(REPO))}
    assert folders <= set(ALLOWED), f"folders no row of docs/architecture.md names: {sorted(folders - set(ALLOWED))}"


def test_no_arrow_the_architecture_forbids(edges: tuple[Edges, Edges]) -> None:
    assert forbidden(edges[0]) == []


def test_no_arrow_between_testbed_sub_packages_it_forbids(edges: tuple[Edges, Edges]) -> None:
    assert forbidden_inside_testbed(edges[1]) == []


def test_no_cycle_inside_testbed(edges: tuple[Edges, Edges]) -> None:
    assert find_cycle(edges[1]) is None


def test_no_import_cycle_between_modules() -> None:
    """No module imports itself back through others (imports inside functions count; TYPE_CHECKING ones do not)."""
    graph = module_graph(REPO, python_files(REPO))
    cycles = module_cycles(graph)
    assert cycle_lines(graph, cycles) == []


def test_the_declared_layers_have_no_cycle() -> None:
    assert find_cycle(declared_arrows(ALLOWED)) is None
    assert find_cycle(declared_arrows(TESTBED_ALLOWED)) is None


def test_the_architecture_names_the_same_arrows() -> None:
    layers, testbed = documented_rules(ARCHITECTURE.read_text(encoding="utf-8"))
    assert layers == ALLOWED
    assert testbed == TESTBED_ALLOWED


def test_every_layer_is_installed_and_type_checked() -> None:
    """A layer folder the package lists leave out would import from a checkout but not once installed."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    layers = {unit.removesuffix("/") for unit in ALLOWED if unit.endswith("/")} - {"tests", "bench", "compose"}
    included = config["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {layer for layer in layers if any(fnmatch.fnmatchcase(layer, pattern) for pattern in included)} == layers
    assert set(config["tool"]["mypy"]["packages"]) == layers


def test_no_source_module_over_400_lines() -> None:
    long = [f"{p.relative_to(REPO)}: {n}" for p in python_files(REPO) if not str(p.relative_to(REPO)).startswith("tests/")
            and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert long == []


# --- the rules can fail ------------------------------------------------------------------------------------


def write(root: Path, rel: str, text: str = "") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_an_upward_import_inside_a_function_is_found_and_refused(tmp_path: Path) -> None:
    write(tmp_path, "harness/__init__.py")
    write(tmp_path, "harness/leadership.py")
    write(tmp_path, "checkers/__init__.py")
    write(tmp_path, "checkers/x.py", "def f():\n    from harness.leadership import g\n    return g\n")
    write(tmp_path, "spark_analysis/__init__.py")
    write(tmp_path, "spark_analysis/y.py", "from harness import leadership\nimport checkers.x\n")
    files = sorted(tmp_path.rglob("*.py"))
    units, _ = import_edges(tmp_path, files)
    assert set(units) == {("checkers/", "harness/"), ("spark_analysis/", "harness/"), ("spark_analysis/", "checkers/")}
    assert forbidden(units) == ["checkers/ -> harness/ (checkers/x.py)", "spark_analysis/ -> harness/ (spark_analysis/y.py)"]


def test_the_command_line_sits_on_top_and_harness_main_belongs_to_it(tmp_path: Path) -> None:
    write(tmp_path, "faultline/__init__.py")
    write(tmp_path, "faultline/cli.py", "from campaign import command\nfrom harness import run\n")
    write(tmp_path, "harness/__init__.py")
    write(tmp_path, "harness/__main__.py", "from faultline.cli import main\n")
    write(tmp_path, "harness/run.py", "import campaign.command\n")
    write(tmp_path, "harness/spec.py", "from faultline import cli\n")
    write(tmp_path, "campaign/__init__.py")
    write(tmp_path, "campaign/command.py", "from harness import run\n")
    units, _ = import_edges(tmp_path, sorted(tmp_path.rglob("*.py")))
    assert forbidden(units) == ["harness/ -> campaign/ (harness/run.py)", "harness/ -> faultline/ (harness/spec.py)"]


def test_a_cycle_inside_testbed_is_found(tmp_path: Path) -> None:
    write(tmp_path, "testbed/__init__.py")
    write(tmp_path, "testbed/runtime/__init__.py")
    write(tmp_path, "testbed/runtime/netns.py", "from testbed.kafka import dist\nfrom testbed import state\n")
    write(tmp_path, "testbed/state.py")
    write(tmp_path, "testbed/kafka/__init__.py")
    write(tmp_path, "testbed/kafka/dist.py")
    write(tmp_path, "testbed/kafka/cluster.py", "from testbed.processes import Group\n")
    write(tmp_path, "testbed/processes.py", "from testbed.runtime import netns\n")
    _, inside = import_edges(tmp_path, sorted(tmp_path.rglob("*.py")))
    assert forbidden_inside_testbed(inside) == ["testbed/runtime/ -> testbed/kafka/ (testbed/runtime/netns.py)"]
    assert find_cycle(inside) == ["testbed/kafka/", "testbed/processes.py", "testbed/runtime/", "testbed/kafka/"]


def test_a_cycle_between_modules_is_found_through_a_chain_and_inside_a_function(tmp_path: Path) -> None:
    write(tmp_path, "workloads/__init__.py")
    write(tmp_path, "workloads/history.py", "from workloads.history_stray import stray_rows\n")
    write(tmp_path, "workloads/history_stray.py", "from workloads import history_rows\n")
    write(tmp_path, "workloads/history_rows.py", "def build():\n    from workloads.history import Build\n")
    write(tmp_path, "workloads/journal.py", "import workloads.history\n")  # into the cycle, not part of it
    graph = module_graph(tmp_path, sorted(tmp_path.rglob("*.py")))
    cycles = module_cycles(graph)
    assert cycles == [["workloads.history", "workloads.history_rows", "workloads.history_stray"]]
    assert cycle_lines(graph, cycles) == [
        "{workloads.history, workloads.history_rows, workloads.history_stray}: workloads.history -> "
        "workloads.history_stray; workloads.history_rows -> workloads.history; workloads.history_stray -> "
        "workloads.history_rows"]


def test_a_type_checking_only_back_import_is_no_cycle(tmp_path: Path) -> None:
    write(tmp_path, "campaign/__init__.py")
    write(tmp_path, "campaign/outputs.py", "from campaign.page import render_index\n")
    write(tmp_path, "campaign/page.py", "from __future__ import annotations\nimport typing\n"
                                        "from typing import TYPE_CHECKING\n"
                                        "if TYPE_CHECKING:\n    from campaign.outputs import CampaignReport\n"
                                        "if typing.TYPE_CHECKING:\n    import campaign.outputs\n")
    graph = module_graph(tmp_path, sorted(tmp_path.rglob("*.py")))
    assert graph["campaign.page"] == set() and module_cycles(graph) == []
    write(tmp_path, "campaign/page.py", "from campaign.outputs import CampaignReport\n")  # the same, at run time
    assert module_cycles(module_graph(tmp_path, sorted(tmp_path.rglob("*.py")))) == [
        ["campaign.outputs", "campaign.page"]]


def test_a_table_that_drifted_is_noticed() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| across runs | `spark_analysis/` |"))
    drifted = text.replace(row, row.replace("| `testbed/`, `checkers/` |", "| `harness/`, `testbed/`, `checkers/` |"))
    assert drifted != text
    layers, _ = documented_rules(drifted)
    assert layers != ALLOWED and layers["spark_analysis/"] == {"harness/", "testbed/", "checkers/"}
