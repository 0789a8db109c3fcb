"""The README is the front door: its commands are the ones CI runs, in the order a new user needs them."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from benchmarks.real_app import CHROMIUM

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
SUITE = "python -m pytest -n auto --dist worksteal"  # the whole suite, a worker a core (tests/conftest.py)
TEST_COMMAND = f"pip install -r requirements-dev.txt && ruff check . && ruff format --check . && {SUITE}"


def code_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_the_virtual_environment_comes_before_the_two_commands():
    blocks = code_blocks(README[README.index("## Two commands") :])
    assert blocks[:3] == [
        "python3 -m venv .venv && source .venv/bin/activate",
        "pip install -r requirements-app.txt && python app.py",
        TEST_COMMAND,
    ]


def test_ci_runs_the_readmes_test_command_exactly():
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_says_how_to_get_a_public_link():
    assert "GRADIO_SHARE=True python app.py" in README


def layout_paths() -> list[str]:
    """The folders and files the "Project layout" of docs/architecture.md names: a folder at the start of a line, its
    modules indented under it (several may share a line), descriptions after two spaces."""
    layout = ARCHITECTURE[ARCHITECTURE.index("## Project layout") :]
    layout = layout[layout.index("```") + 3 :]
    layout = layout[layout.index("\n") + 1 : layout.index("```")]
    paths, folder = [], ""
    for line in layout.splitlines():
        names = line.strip().split("  ")[0].split()
        if not line.startswith(" "):  # a folder or a top-level file
            folder = names[0] if names[0].endswith("/") else ""
            paths.append(names[0])
        elif line.startswith("  ") and not line.startswith("   "):  # modules of the folder
            paths += [folder + name for name in names]
    return paths


def test_every_module_the_project_layout_names_exists():
    paths = layout_paths()
    assert "transformer/model.py" in paths and "ui/page.py" in paths and "benchmarks/" in paths
    missing = [path for path in paths if not (ROOT / path).exists()]
    assert not missing


def test_a_space_downloads_the_default_model_at_build_time():
    from explorer.registry import HUB_DEFAULT

    front = README.split("---")[1]
    assert f"preload_from_hub:\n  - {HUB_DEFAULT} " in front
    assert "pytorch_model.bin" in front and "config.json" in front  # what loading it needs, nothing more


def test_the_readme_says_how_to_choose_the_port():
    assert "GRADIO_SERVER_PORT=8080 python app.py" in README and "GRADIO_SERVER_NAME=0.0.0.0" in README


def test_the_readmes_memory_under_a_class_is_the_measured_one():
    """The figure comes from the classroom benchmark's own record (`docs/classroom/`, a class of 60 for 10 minutes):
    its last sample, and how far above its level at minute 3 it ended. The README and docs/benchmarks.md give it,
    and no page gives another."""
    import json

    record = json.loads((ROOT / "docs" / "classroom" / "after-60-students-10-minutes.json").read_text())
    samples = record["memory_mb"]
    last = round(samples[-1][1])
    at_3 = min(samples, key=lambda sample: abs(sample[0] - 180))[1]  # the sample nearest minute 3
    said = f"ends at {last} MB, {100 * (samples[-1][1] / at_3 - 1):.1f}% above its level at minute 3"
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert said in README and said in benchmarks
    for text in (README, *(path.read_text(encoding="utf-8") for path in DOCS)):
        assert set(re.findall(r"ends at ([\d,]+) MB, [\d.]+% above", text)) <= {str(last)}


def relative_links(text: str) -> list[str]:
    """The targets of a page's Markdown links and images and of its <img src=…>, outside code blocks, without
    #anchors; web and mail addresses left out."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    targets = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    targets += re.findall(r"<img\b[^>]*?\ssrc=[\"']?([^\"'\s>]+)", text)
    targets = [target.split("#")[0] for target in targets]
    return [target for target in targets if target and not re.match(r"(https?|mailto):", target)]


def test_every_relative_link_of_the_readme_and_docs_points_at_a_file():
    pages = [ROOT / "README.md", *DOCS]
    assert len(relative_links(README)) > 10  # the screenshots and the docs the README links to
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in pages
        for target in relative_links(page.read_text(encoding="utf-8"))
        if not (page.parent / target).exists()
    ]
    assert not broken


def test_the_readme_links_every_page_of_docs():
    linked = {(ROOT / target).resolve() for target in relative_links(README)}
    assert not [path.name for path in DOCS if path.resolve() not in linked]


FAST = "not slow and not browser"  # the README's selection of the fast tests


def test_the_readme_gives_the_number_of_tests_the_suite_collects(request):
    """ "runs N tests": the number of tests the suite collects (the README said 640 when 671 ran), wherever the
    README or a page of docs/ says it; and the number of fast tests the README's command for them runs. Counted from
    this run's own collection (every worker of pytest-xdist collects them all), so in a run of the whole suite, or of
    the fast tests alone."""
    fast = re.search(rf"`python -m pytest -m \"{FAST}\"(?: -n auto)?`\s+\(([\d,]+) tests", README)
    assert fast, "the README says how to run the fast tests, and how many there are"
    pages = (README, *(path.read_text(encoding="utf-8") for path in DOCS))
    said_as = rf"`(?:python -m pytest|{re.escape(SUITE)})` runs ([\d,]+) tests"
    counts = [n for text in pages for n in re.findall(said_as, text)]
    said = {int(n.replace(",", "")) for n in counts}
    assert said, "the README says how many tests there are"
    config, items = request.config, request.session.items
    if config.args_source != pytest.Config.ArgsSource.TESTPATHS or config.option.keyword:
        pytest.skip("counted in a run of the whole suite or of the fast tests, not of some files")
    if config.option.markexpr == FAST:
        assert int(fast[1].replace(",", "")) == len(items)
        return
    if config.option.markexpr:
        pytest.skip("counted in a run of the whole suite or of the fast tests")
    is_fast = [item.get_closest_marker("slow") is None and item.get_closest_marker("browser") is None for item in items]
    assert int(fast[1].replace(",", "")) == sum(is_fast)
    if not (Path(CHROMIUM).exists() and importlib.util.find_spec("playwright")):
        pytest.skip("the browser tests are skipped here: the whole count is CI's")
    assert said == {len(items)}
