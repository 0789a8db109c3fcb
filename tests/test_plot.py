"""`ui.plot.Plot`: the page's figures, sent as Plotly's JSON and drawn in place by the browser (tests/test_browser.py
draws them)."""

from __future__ import annotations

import json

import plotly.graph_objects as go

from explorer import figures
from ui.plot import PLOTLY_JS, PLOTLY_SCRIPT, Plot


def test_a_figure_is_sent_as_plotlys_json():
    figure = figures.base.Figure([{"type": "bar", "y": [1, 2]}], {"height": 200})
    sent = json.loads(Plot().postprocess(figure))
    assert sent["data"][0]["type"] == "bar" and sent["layout"]["height"] == 200
    assert json.loads(Plot().postprocess(go.Figure(go.Bar(y=[3]))))["data"][0]["y"] == [3]  # plotly's own too


def test_no_figure_is_an_empty_value():
    assert Plot().postprocess(None) == "" and Plot().postprocess("") == ""


def test_the_page_loads_the_plotly_that_writes_the_figures_from_the_app_itself():
    """plotly.js as the Python package ships it: the version that writes the figures' JSON, and no internet."""
    assert PLOTLY_JS.is_file() and PLOTLY_JS.stat().st_size > 1_000_000
    assert f'<script src="gradio_api/file={PLOTLY_JS.as_posix()}"></script>' == PLOTLY_SCRIPT
    assert Plot().head == PLOTLY_SCRIPT
