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


@pytest.fixture(scope="module")
def gradio_client_js() -> str:
    """The script of Gradio's page that holds its client (the one that reads the stream of answers)."""
    clients = [p for p in GRADIO_ASSETS.glob("index-*.js") if "close_stream" in p.read_text(encoding="utf-8")]
    assert len(clients) == 1, clients
    return clients[0].read_text(encoding="utf-8")


def test_gradios_client_marks_its_stream_closed_on_close_stream_and_opens_one_after_a_join_only_when_none_is(
    gradio_client_js,
):
    """`STREAM_KEEPER_JS`: what the keeper stands between. The client reads `close_stream` as the end of its stream;
    after a join's answer it opens a stream only when it holds none open; it reads the stream through `fetch`, at
    `…/queue/data?session_hash=…`, and sends its events to `…/queue/join`."""
    assert re.search(r"\.msg===`close_stream`\)\{\w+\(", gradio_client_js)
    assert re.search(r"\w+\.open\|\|await this\.open_stream\(\)", gradio_client_js)
    assert re.search(r"new URLSearchParams\(\{session_hash:this\.session_hash\}\)", gradio_client_js)
    assert "`queue/data`" in gradio_client_js and "`queue/join`" in gradio_client_js
    assert re.search(r"\bfetch\(\w+,\{headers:\w+,credentials", gradio_client_js)  # window.fetch, read at each call


def test_gradios_server_ends_a_pages_stream_once_no_event_of_it_waits():
    """`STREAM_KEEPER_JS`: the server sends `close_stream` after an answer that leaves none of the page's events
    waiting, and keeps the page's answers for its next stream (it drops them only when the page is gone)."""
    import inspect

    from gradio import routes

    source = inspect.getsource(routes)
    assert re.search(r"message = CloseStreamMessage\(\)", source)
    assert re.search(r"pending_event_ids_session\[\s*session_hash\s*\]\s*\)\s*==\s*0", source)
    assert "def queue_data(" in source and "session_hash: str," in source


def test_the_keeper_goes_in_the_pages_head():
    import app

    assert browser_internals.STREAM_KEEPER_JS in app.LAUNCH_OPTIONS["head"]


def test_gradios_status_tracker_runs_its_timer_in_a_loop_of_frames_that_only_its_status_stops():
    """`IDLE_TIMER`: in the installed status tracker, `ze` asks for the next frame while `W` holds, `W` is set false
    only as the status leaves "pending" (never as the component goes), and `U` is the tracker's element, bound as it
    mounts. The mend is found once, and the script mended has the loop stop once that element is gone."""
    mend = browser_internals.IDLE_TIMER
    trackers = [path for path in GRADIO_ASSETS.glob("*.js") if mend.applies_to(f"/assets/{path.name}")]
    assert len(trackers) == 1, trackers
    script = trackers[0].read_text(encoding="utf-8")
    loop = r"function ze\(\)\{me\(\(\)=>\{F\(Pe,\(performance\.now\(\)-w\(de\)\)/1e3\),W&&ze\(\)\}\)\}"
    assert re.search(loop, script)
    assert re.search(r"function He\(\)\{[^}]*W&&=!1\}", script) and "W=!0,ze()" in script
    assert re.search(r"\bme=typeof window<`u`\?window\.requestAnimationFrame", script)
    assert ",e=>U=e,()=>U)" in script  # bind:this
    assert script.count(mend.before) == 1
    mended = browser_internals.mended(f"/assets/{trackers[0].name}", script.encode()).decode()
    assert mended.count(mend.after) == 1 and mend.before not in mended
    assert mended.replace(mend.after, mend.before) == script  # nothing else changed


def test_gradio_finds_a_node_by_walking_its_tree_for_every_loading_status_at_every_message():
    """`NODE_LOOKUP`: in the installed core script, `Z(root, id)` walks the tree; `update_state`, `get_state` and a
    rerender find nodes with it from the root; and at each status message Gradio sets the loading status of every
    component that has one (`update_loading_stati_state`). The mend is found once, and nothing else changes (that it
    finds what `Z` finds: `tests/test_browser.py`)."""
    mend = browser_internals.NODE_LOOKUP
    cores = [path for path in GRADIO_ASSETS.glob("*.js") if mend.applies_to(f"/assets/{path.name}")]
    assert len(cores) == 1, cores
    script = cores[0].read_text(encoding="utf-8")
    assert script.count(mend.before) == 1
    assert "async update_state(e,t,n=!0){let r=Z(this.root,e)" in script
    assert "async get_state(e){let t=this.#s.get(e),n=Z(this.root,e)" in script
    assert "a=Z(this.root,i.id);if(!a)throw Error(`Rerender failed" in script
    blocks = [path for path in GRADIO_ASSETS.glob("Blocks-*.js") if "update_loading_stati_state" in path.read_text()]
    assert len(blocks) == 1, blocks
    every = "Object.entries(this.loading_stati.current).map(([e,t])=>this.update_state_cb(Number(e),{loading_status:t}"
    assert every in blocks[0].read_text(encoding="utf-8")
    mended = browser_internals.mended(f"/assets/{cores[0].name}", script.encode()).decode()
    assert mended.count(mend.after) == 1 and mend.before not in mended
    other = browser_internals.ATTACHED_EVENTS  # the core script's other mend
    assert mended.replace(mend.after, mend.before).replace(other.after, other.before) == script
    assert not mend.applies_to("/assets/index-abc.js") and mend.applies_to("/assets/core-Ab1-2.js")


def test_gradio_gives_each_node_its_events_by_looking_through_every_event_for_it():
    """`ATTACHED_EVENTS`: in the installed core script, `find_attached_events` goes through every event's targets for
    each node as the tree is built, with the list of events the layout was given when it was made or loaded anew (a
    new list each time). The mend is found once, and nothing else changes (the events it gives:
    `tests/test_browser.py`)."""
    mend = browser_internals.ATTACHED_EVENTS
    cores = [path for path in GRADIO_ASSETS.glob("*.js") if mend.applies_to(f"/assets/{path.name}")]
    script = cores[0].read_text(encoding="utf-8")
    assert script.count(mend.before) == 1
    assert "e=>this.find_attached_events(e,this.#n)" in script
    assert script.count("this.#n=n") == 2 and script.count("this.#n=") == 2  # set as the layout is made or reloaded
    mended = browser_internals.mended(f"/assets/{cores[0].name}", script.encode()).decode()
    assert mended.count(mend.after) == 1 and mend.before not in mended
    others = browser_internals.NODE_LOOKUP
    assert mended.replace(mend.after, mend.before).replace(others.after, others.before) == script


def test_a_script_a_mend_does_not_name_or_does_not_match_is_sent_as_it_is(caplog, monkeypatch):
    """Another Gradio's tracker goes unmended, with a warning: the page works without the mend, at its old cost."""
    monkeypatch.setattr(browser_internals, "_unmended", set())  # warned once a process: not yet in this one
    other = b"function ze(){W&&ze()})}"
    assert browser_internals.mended("/assets/index-abc.js", other) is other
    unlike = b"a script of another Gradio"
    assert browser_internals.mended("/assets/statustracker-abc.js", unlike) == unlike
    assert "not mended" in caplog.text


def test_gradio_takes_its_first_language_from_the_browsers_as_its_page_starts():
    """`PAGE_LANGUAGE`: Gradio's page has one `<head>`, before its own scripts, where the script goes; and Gradio reads
    the browser's language from `navigator.language` (else the first of `navigator.languages`)."""
    page = (GRADIO_ASSETS.parent / "index.html").read_text(encoding="utf-8")
    assert page.count(browser_internals.PAGE_LANGUAGE.before) == 1
    assert page.index("<head>") < page.index('<script type="module"')
    runtimes = [p for p in GRADIO_ASSETS.glob("runtime-*.js") if "navigator.language" in p.read_text(encoding="utf-8")]
    assert len(runtimes) == 1, runtimes
    assert "window.navigator.language||window.navigator.languages[0]" in runtimes[0].read_text(encoding="utf-8")
    assert browser_internals.PAGE_LANGUAGE.applies_to("/") and not browser_internals.PAGE_LANGUAGE.applies_to("/x")
