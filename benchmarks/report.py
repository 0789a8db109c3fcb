"""BENCHMARKS.md: the templates `report.md.j2` (sections 1 to 5, then the rest) and `app.md.j2` (sections 6 and 7),
filled from the one dict of a run's numbers that `benchmarks.bench` also writes as JSON (docs/benchmarks.json)."""

from __future__ import annotations

from pathlib import Path

import jinja2

HERE = Path(__file__).resolve().parent

# Block tags on lines of their own leave no trace, so the templates read as the Markdown they write.
TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE),
    undefined=jinja2.StrictUndefined,  # a number the template names and the run lacks is an error, not a blank
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,  # Markdown, not HTML
)
TEMPLATES.filters.update(
    mark=lambda met: "met" if met else "**missed**",
    thousands="{:,}".format,
    kb=lambda n_bytes: f"{n_bytes / 1000:.1f}",
)
# What a run may leave out: the shipped model (a quick run of a checkout without it), the app (`--no-app`), and the
# texts that a full run adds from docs/ (the classroom's section 8, the Why? tab's 9, the notes).
OPTIONAL = ("greedy_shipped", "app", "classroom", "why", "notes")


def render(results: dict) -> str:
    """The whole of BENCHMARKS.md from the numbers of `benchmarks.bench.run` (and the texts that a full run adds)."""
    return TEMPLATES.get_template("report.md.j2").render({**dict.fromkeys(OPTIONAL), **results})


def render_app(app: dict) -> str:
    """Sections 6 and 7 alone, from `benchmarks.app_bench.measure_app`'s numbers."""
    return TEMPLATES.get_template("app.md.j2").render(app=app)


def write(results: dict, path: Path) -> str:
    """Render BENCHMARKS.md into `path`; returns its text."""
    text = render(results)
    path.write_text(text, encoding="utf-8")
    return text
