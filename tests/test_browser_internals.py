"""`ui.browser_internals` holds what the page's scripts use of Gradio's and plotly.js's internals in the browser:
these tests read the installed Gradio's and plotly's own scripts, and fail when one changes under it.

When one fails after an upgrade, read `ui/browser_internals.py` again against the new version's source, and update
`GRADIO_VERSION` or `PLOTLY_JS_VERSION` with it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import gradio as gr
import pytest

from ui import browser_internals
from ui.browser_internals import INTERNALS
from ui.plot import PLOTLY_JS

GRADIO_ASSETS = Path(gr.__file__).resolve().parent / "templates" / "frontend" / "assets"


@pytest.fixture(scope="module")
def plotly_js() -> str:
    return PLOTLY_JS.read_text(encoding="utf-8")


def test_the_scripts_were_written_against_the_installed_gradio_and_plotly_js(plotly_js):
    assert gr.__version__ == browser_internals.GRADIO_VERSION, "read ui/browser_internals.py again"
    shipped = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", plotly_js[:200])
    assert shipped and shipped[1] == browser_internals.PLOTLY_JS_VERSION, "read ui/browser_internals.py again"


def test_gradios_core_script_is_found_as_the_page_loads_it_and_exports_change_locale():
    """`CHANGE_LOCALE`: one `assets/core-*.js` of gradio's that its page loads, which exports `changeLocale`."""
    found = browser_internals.GRADIO_CORE
    cores = [path for path in GRADIO_ASSETS.glob("*.js") if re.search(found, f"/assets/{path.name}")]
    assert len(cores) == 1, cores
    assert re.search(r"export\s*\{[^}]*\bas changeLocale\b", cores[0].read_text(encoding="utf-8"))
    loaders = [path for path in GRADIO_ASSETS.glob("index-*.js") if cores[0].name in path.read_text(encoding="utf-8")]
    assert loaders, "no script of gradio's page loads its core module"
    assert f"new RegExp({json.dumps(found)})" in INTERNALS["CHANGE_LOCALE"]  # the script finds it by that expression


def test_plotly_js_keeps_the_points_under_the_pointer_in_hoverdata(plotly_js):
    """`HOVERED_POINTS`: plotly.js sets `_hoverdata` to the points it shows a hover label for, and clears it."""
    assert re.search(r"\b\w+\._hoverdata=\w+;", plotly_js) and "._hoverdata=[]" in plotly_js
    assert "._hoverdata" in INTERNALS["HOVERED_POINTS"]


def test_plotly_js_finds_a_plots_area_by_the_nsewdrag_class(plotly_js):
    """`PLOT_AREA`: plotly.js itself finds the drag box over a plot's area between its axes by its class."""
    assert plotly_js.count('draglayer.select(".nsewdrag")') >= 1
    assert '".nsewdrag"' in INTERNALS["PLOT_AREA"]


def test_plotly_js_keeps_the_layout_it_drew_in_full_layout_and_drops_it_on_purge(plotly_js):
    """`DRAWN_LAYOUT`: set when a plot is drawn, deleted when it is purged (`ui.plot` purges only a drawn plot)."""
    assert re.search(r"\b\w+\._fullLayout=\{\}", plotly_js) and "delete e._fullLayout" in plotly_js
    assert "._fullLayout" in INTERNALS["DRAWN_LAYOUT"]


def test_plotly_js_keeps_a_plots_listeners_in_ev_and_drops_them_on_purge(plotly_js):
    """`PLOT_LISTENERS`: a plot's listeners live in `_ev`, which plotly.js's `purge` deletes with them."""
    assert re.search(r"purge:function\((\w)\)\{return delete \1\._ev,", plotly_js)
    assert "._ev" in INTERNALS["PLOT_LISTENERS"]


def test_every_internal_is_used_by_a_script_of_the_page_and_every_script_has_its_internals_written_in():
    from ui.i18n import SET_LOCALE_JS
    from ui.plot import DRAW_JS
    from ui.tabs.inside import DIAGRAM_JS
    from ui.tabs.train import REPLAY_JS
    from ui.tabs.why import CENSUS_CLICK_JS

    scripts = [SET_LOCALE_JS, DRAW_JS, DIAGRAM_JS, REPLAY_JS, CENSUS_CLICK_JS]
    for function in INTERNALS.values():
        assert any(f"({function})" in script for script in scripts), function
    for name in INTERNALS:
        assert not any(f"__{name}__" in script for script in scripts), name
