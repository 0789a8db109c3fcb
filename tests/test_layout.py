"""The project's layout keeps its promises: each layer imports only what docs/architecture.md allows it, every
module says what it is for, and no function is long."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_FUNCTION_LINES = 80


def modules(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))


def imported(path: Path) -> set[str]:
    """The top-level package of every import in the module, wherever it is (functions included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


PROJECT = ("transformer", "explorer", "ui", "benchmarks", "app")
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def module_name(path: Path) -> str:
    """transformer/training/train.py -> "transformer.training.train"; a package's __init__.py -> the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module the file imports, by its full name (relative imports resolved), wherever the import is."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                above = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*above, *([node.module] if node.module else [])])
            found |= {f"{base}.{alias.name}" for alias in node.names} if node.module is None else {base}
    return found


def architecture_table(kind: str) -> dict[str, set[str]]:
    """The table of docs/architecture.md in its ```kind block: package -> the modules it names."""
    block = re.search(rf"```{kind}\n(.*?)```", ARCHITECTURE.read_text(encoding="utf-8"), re.S)
    assert block, f"docs/architecture.md has no {kind} table"
    table = {}
    for line in block.group(1).splitlines():
        package, _, names = line.strip().partition(" ")
        table[package] = {name.strip() for name in names.split(",") if name.strip() not in ("", "—")}
    return table


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def rule_for(table: dict[str, set[str]], module: str) -> set[str] | None:
    """The most specific rule of `table` for `module` (None: no rule)."""
    packages = [package for package in table if within(module, package)]
    return table[max(packages, key=len)] if packages else None


CODE = [*modules("transformer", "explorer", "ui", "benchmarks"), ROOT / "app.py"]


@pytest.mark.parametrize("path", CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_module_imports_only_the_layers_docs_architecture_allows(path):
    name = module_name(path)
    allowed, never = rule_for(architecture_table("imports"), name), rule_for(architecture_table("never"), name) or set()
    assert allowed is not None, f"docs/architecture.md says nothing of {name}"
    ours = {module for module in imports(path) if module.split(".")[0] in PROJECT}
    assert not {module for module in ours if not any(within(module, package) for package in allowed)}
    assert not {module for module in imports(path) if any(within(module, package) for package in never)}


def import_graph() -> dict[str, set[str]]:
    """Each of the project's modules -> the project's modules it imports (its package's `__init__` for a name the
    package exports), wherever the import is: inside a function or under `if TYPE_CHECKING:` too."""
    names = {module_name(path): path for path in CODE}

    def module_of(imported: str) -> str | None:  # "transformer.model.Transformer" -> "transformer.model"
        parts = imported.split(".")
        return next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in names), None)

    return {name: {m for i in imports(path) if (m := module_of(i)) not in (None, name)} for name, path in names.items()}


def test_no_module_imports_itself_through_others():
    """No import circle anywhere: the layers stack, and within a layer the modules do too (a circle hidden by an
    import inside a function still fails)."""
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as error:
        pytest.fail("an import circle: " + " -> ".join(error.args[1]))


def test_the_import_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert "transformer.model" in graph["transformer.decoding"]
    assert "transformer.training.corpus.tsv" in graph["transformer.training.evaluate"]  # imported in a function


def test_the_architecture_tables_catch_what_they_forbid():
    """The rules read as meant: a tab reaching into the page, or the library into gradio, is caught."""
    imports_table, never = architecture_table("imports"), architecture_table("never")
    assert not any(within("ui.page", package) for package in rule_for(imports_table, "ui.tabs.attention"))
    assert "gradio" in rule_for(never, "transformer.model") and "plotly" in rule_for(
        never, "transformer.training.train"
    )
    assert "gradio.blocks" in rule_for(never, "ui.page") and not rule_for(never, "ui.gradio_patch")
    assert "_plotly_utils" in rule_for(never, "explorer.figures.base")
    assert not rule_for(never, "explorer.figures.plotly_internals")
    assert imports(ROOT / "ui" / "tabs" / "walkthrough.py") >= {"ui.panel", "ui.tabs.inside"}  # relative, resolved


# What the page uses of Gradio's and Plotly's internals, and the one module ("door") each may be used in: each door
# has its version and a test per internal that fails when the library changes under it (docs/architecture.md).
DOORS = {
    r"\._id\b": "ui/gradio_patch.py",  # a block's id
    r"_plotly_utils": "explorer/figures/plotly_internals.py",
    r"changeLocale|\bcore-": "ui/browser_internals.py",  # gradio's core script in the browser
    r"_hoverdata|nsewdrag|_fullLayout|_fullData|\._ev\b": "ui/browser_internals.py",  # plotly.js's
    r"statustracker": "ui/browser_internals.py",  # a script of gradio's page, mended as it is sent
}


@pytest.mark.parametrize("path", CODE, ids=lambda path: str(path.relative_to(ROOT)))
def test_gradios_and_plotlys_internals_are_used_only_behind_their_door(path):
    text = path.read_text(encoding="utf-8")
    named = path.relative_to(ROOT).as_posix()
    for pattern, door in DOORS.items():
        if named != door:
            assert not re.search(pattern, text), f"{named} uses {pattern}: only {door} may"


def test_the_doors_are_where_the_internals_are_used():
    for pattern, door in DOORS.items():
        assert re.search(pattern, (ROOT / door).read_text(encoding="utf-8")), (pattern, door)


@pytest.mark.parametrize(
    "path",
    [*modules("transformer", "explorer", "ui", "benchmarks"), ROOT / "app.py"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_module_opens_with_a_docstring(path):
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert docstring and len(docstring) > 20


@pytest.mark.parametrize("path", CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_is_long(path):
    """Every package, the library and the benchmarks too. The longest are the paper's own algorithms, read top to
    bottom: `transformer.worked.work_through` (one step, stage by stage) and `BeamSearch._beam_step`."""
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long


# The tracked tree travels whole to a GPU machine with the wheels a run there needs (64 MiB together): it stays under
# this, leaving 8 MiB for them (issue 40 §6). Corpora are xz, screenshots quantized (`pngquant --quality 80-98`).
TREE_LIMIT_MIB = 56


def test_the_tracked_tree_leaves_room_for_a_gpu_runs_wheels():
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    paths = [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    sizes = {path: path.stat().st_size for path in paths if path.is_file()}
    total = sum(sizes.values()) / 2**20
    largest = sorted(sizes, key=sizes.get, reverse=True)[:5]
    assert total <= TREE_LIMIT_MIB, (
        f"the tracked tree is {total:.1f} MiB, over {TREE_LIMIT_MIB}; its largest files: "
        + ", ".join(f"{p.relative_to(ROOT)} ({sizes[p] / 2**20:.1f} MiB)" for p in largest)
    )


def test_the_long_tests_open_the_workers_shares():
    """`conftest.in_running_order`: pytest-xdist gives each of two workers half the tests in their order; the long
    tests that work open the first half, those that mostly wait the second, the others keep their order."""
    from types import SimpleNamespace

    from conftest import in_running_order

    def item(name: str, waits: bool | None = None):
        mark = None if waits is None else SimpleNamespace(kwargs={"waits": True} if waits else {})
        return SimpleNamespace(name=name, get_closest_marker=lambda _name: mark)

    items = [item("a"), item("b"), item("browser", waits=False), item("c"), item("class", waits=True), item("d")]
    names = [i.name for i in in_running_order(items, workers=2)]
    assert names == ["browser", "a", "b", "class", "c", "d"]  # the second worker's half starts at the third
    assert [i.name for i in in_running_order(items, workers=1)] == ["browser", "class", "a", "b", "c", "d"]
    assert sorted(i.name for i in in_running_order(items[:3], workers=4)) == ["a", "b", "browser"]  # none lost
