"""What the page's scripts use of Gradio's and plotly.js's internals in the browser, written against Gradio
`GRADIO_VERSION` and plotly.js `PLOTLY_JS_VERSION` (the one the plotly package ships, `ui.plot.PLOTLY_JS`).

Each internal is one small JavaScript function here, named, that the page's scripts call by its name between double
underscores (`__PLOT_AREA__(plot)`); `with_internals` writes the function in its place. No script of the page
reaches into Gradio or plotly.js itself: `tests/test_layout.py` fails on one that does, and
`tests/test_browser_internals.py` checks each internal in the installed Gradio's and plotly's own scripts. A new
version of either means reading these again against its source.
"""

from __future__ import annotations

import json

# The versions these were written against: requirements-app.txt pins Gradio, requirements-base.txt plotly, whose
# package ships plotly.js (`plotly/package_data/plotly.min.js`, which the page loads: `ui.plot`).
GRADIO_VERSION = "6.31.0"
PLOTLY_JS_VERSION = "4.1.1"

# Gradio's script file that holds its translations and `changeLocale` (its Settings panel's language switch), as the
# page loaded it: `assets/core-<hash>.js` (`CHANGE_LOCALE` finds it by this expression). A dynamic import of the same
# address is the same module.
GRADIO_CORE = r"/assets/core-[\w-]+\.js$"

INTERNALS = {
    # Gradio shows its own text and the page's fixed text (`ui.i18n.T`) in the language `tag` ("en", "zh-CN");
    # a promise, kept (never rejected) when the page has no such module.
    "CHANGE_LOCALE": r"""(tag) => {
        const core = performance.getEntriesByType("resource").map((entry) => entry.name)
            .find((name) => new RegExp("""
    + json.dumps(GRADIO_CORE)
    + r""").test(name));
        if (!core) return Promise.resolve();
        return import(core).then((module) => module.changeLocale(tag)).catch(() => {});
    }""",
    # The points under the pointer of a plotly.js plot (`_hoverdata`: what its hover label shows), or none.
    "HOVERED_POINTS": """(plot) => (plot && plot._hoverdata) || []""",
    # The element over a plotly.js plot's area between its axes (the `nsewdrag` drag box, which takes its clicks),
    # or null.
    "PLOT_AREA": """(plot) => plot.querySelector(".nsewdrag")""",
    # The layout plotly.js drew a plot with (`_fullLayout`: its sizes worked out), or undefined before it drew one
    # or after it was purged.
    "DRAWN_LAYOUT": """(plot) => plot._fullLayout""",
    # The object that holds a plotly.js plot's event listeners (`_ev`), which plotly.js drops with them when it purges
    # the plot (a mark set on it goes with the listeners), or undefined before it has any.
    "PLOT_LISTENERS": """(plot) => plot._ev""",
}


def with_internals(script: str) -> str:
    """`script` with each internal it names (`__PLOT_AREA__`) written in, as a function it calls in place."""
    for name, function in INTERNALS.items():
        script = script.replace(f"__{name}__", f"({function})")
    return script
