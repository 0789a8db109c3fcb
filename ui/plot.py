"""The page's figures: a Plotly figure drawn in place, on the same div from one step to the next (`Plot`).

Gradio 6.31's own `gr.Plot` makes a new div for every new value (a `{#key}` block) and draws the figure there from
nothing, after drawing it once more on the old div, then lays it out a third time with `Plotly.Plots.resize`. For the
heatmap a Step redraws, a drawing from nothing takes 100 ms in Chromium on the project's machine; `Plotly.react` on
the div that shows the previous step's figure takes 38 ms, as Plotly then works out only what changed
(`docs/benchmark-notes.md`). `Plot` is a `gr.HTML` (public API: a template, `js_on_load`, `watch`) whose value is the
figure's JSON: its template is one div that never changes, so gradio leaves it alone, and its script draws every new
value on that div. It also:
- draws nothing while it is hidden (a closed tab): the figure is drawn when the plot is shown, at the size it has;
- draws what is in view first: a figure out of view (further down a long tab, below a phone's screen) is drawn once
  the page is idle, or as soon as it is scrolled near, whichever comes first;
- lays the figure out again only when its place changes size (a `ResizeObserver`), not at every window event;
- loads Plotly itself, from the plotly package the server already has (the same version that writes the figures),
  once for the page, from the app's own address (no internet).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import plotly

from .browser_internals import with_internals

# plotly.js as the Python package ships it (`plotly/package_data/plotly.min.js`): served by the app, which makes it one
# of gradio's static paths (`app.py`), by an address relative to the page (it works behind a proxy's path).
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
PLOTLY_SCRIPT = f'<script src="gradio_api/file={PLOTLY_JS.as_posix()}"></script>'

# The plot's script, run once when gradio shows the component (`element` is the component's root; `props.value`
# the figure's JSON, or "" for none; `watch` calls back after each new value).
DRAW_JS = with_internals("""
const div = element.querySelector(".live-plot");
let drawn = null;  // the JSON of the figure on the div
let waiting = null;  // the idle callback that will draw a figure out of view
const shown = () => div.getClientRects().length > 0;  // not in a hidden tab or a hidden block
const NEAR_PX = 300;  // "in view": within this many pixels of the window (drawn before it is scrolled to)
const near = () => {
    const box = div.getBoundingClientRect();
    return box.bottom > -NEAR_PX && box.top < window.innerHeight + NEAR_PX;
};
// `data-drawn`: whether the div shows the plot's latest figure (the benchmarks wait for it).
const mark = () => { div.dataset.drawn = String((props.value || "") === drawn); };
const drawNow = () => {
    const figure = props.value || "";
    if (figure === drawn || !shown()) return mark();  // a hidden plot is drawn when it is shown (below)
    drawn = figure;
    if (!figure) {
        if (__DRAWN_LAYOUT__(div)) window.Plotly.purge(div);
        div.style.height = "";
        return mark();
    }
    const {data, layout, config} = JSON.parse(figure);
    div.style.height = layout.height ? `${layout.height}px` : "";  // its place kept while Plotly draws
    const options = {displaylogo: false, ...(config || {})};
    Promise.resolve(window.Plotly.react(div, data, {...layout, autosize: true}, options)).then(mark);
};
// A figure in view is drawn at once; one out of view (further down a long tab, or below a phone's screen) once the
// page is idle, after what the user sees, or as soon as it comes near the window, whichever is first.
const draw = () => {
    if ((props.value || "") === drawn || !shown() || near() || div.dataset.eager) return drawNow();
    mark();
    if (waiting === null) waiting = requestIdleCallback(() => { waiting = null; drawNow(); }, {timeout: 2000});
};
new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) drawNow();
}, {rootMargin: `${NEAR_PX}px 0px`}).observe(div);
// Shown, or its width changed: drawn if a new figure waits, else laid out again when it no longer fits.
new ResizeObserver(() => {
    if (!shown()) return;
    if ((props.value || "") !== drawn) return draw();
    const full = __DRAWN_LAYOUT__(div);
    if (full && Math.abs(div.clientWidth - full.width) > 1) window.Plotly.Plots.resize(div);
}).observe(div);
watch("value", draw);
draw();
""")


TEMPLATE = '<div class="live-plot"></div>'
EAGER_TEMPLATE = '<div class="live-plot" data-eager="true"></div>'


class Plot(gr.HTML):
    """A Plotly figure (a `plotly.graph_objects.Figure`, or `explorer.figures.Figure`), drawn in place."""

    def __init__(self, value: Any = None, *, eager: bool = False, **kwargs: Any):
        """`eager`: drawn at once even out of view, for a figure that the page's own scripts read or move (the
        Train tab's replay): they always find the latest figure."""
        super().__init__(
            value,
            html_template=EAGER_TEMPLATE if eager else TEMPLATE,
            js_on_load=DRAW_JS,
            head=PLOTLY_SCRIPT,
            apply_default_css=False,
            elem_classes=["plot"],  # assets/style.css: the figure fills the block's width
            **kwargs,
        )

    def postprocess(self, value: Any) -> str:  # type: ignore[override]
        """The figure as Plotly's JSON ("" for none)."""
        if value is None or value == "":
            return ""
        return value if isinstance(value, str) else value.to_json()

    def api_info(self) -> dict[str, Any]:
        return {"type": "string", "description": "a Plotly figure, as Plotly's JSON"}
