"""The README is the front door: its commands are the ones CI runs, in the order a new user needs them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TEST_COMMAND = "pip install -r requirements-dev.txt && ruff check . && ruff format --check . && python -m pytest"


def code_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_the_virtual_environment_comes_before_the_two_commands():
    blocks = code_blocks(README[README.index("## Two commands") :])
    assert blocks[:3] == [
        "python3 -m venv .venv && source .venv/bin/activate",
        "pip install -r requirements.txt && python app.py",
        TEST_COMMAND,
    ]


def test_ci_runs_the_readmes_test_command_exactly():
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_says_how_to_get_a_public_link():
    assert "GRADIO_SHARE=True python app.py" in README


def test_every_module_the_project_layout_names_exists():
    layout = README[README.index("## Project layout") :]
    layout = layout[: layout.index("```", layout.index("```") + 3)]
    folder = ""
    for line in layout.splitlines():
        first = line.split("  ")[0].strip()
        if first.endswith("/"):
            folder = first if not line.startswith(" ") else folder
            assert (ROOT / first).is_dir(), first
        elif line.startswith("  ") and first:
            for name in first.split():
                assert (ROOT / folder / name).is_file(), folder + name
