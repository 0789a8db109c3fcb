"""The project's layout keeps its promises: the library imports no UI, the explorer no gradio, every module says
what it is for, and no function of the page or the explorer is long."""

from __future__ import annotations

import ast
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


@pytest.mark.parametrize("path", modules("transformer"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_library_imports_neither_gradio_nor_plotly(path):
    assert not imported(path) & {"gradio", "plotly", "ui", "explorer", "benchmarks"}


@pytest.mark.parametrize("path", modules("explorer"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_explorer_imports_no_gradio(path):
    assert not imported(path) & {"gradio", "gradio_client", "ui", "benchmarks"}


@pytest.mark.parametrize(
    "path",
    [*modules("transformer", "explorer", "ui", "benchmarks"), ROOT / "app.py"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_module_opens_with_a_docstring(path):
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert docstring and len(docstring) > 20


@pytest.mark.parametrize("path", [*modules("explorer", "ui"), ROOT / "app.py"], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_of_the_page_or_the_explorer_is_long(path):
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long
