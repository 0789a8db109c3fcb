"""`explorer.figures.plotly_internals` calls a function of Plotly's internals: these tests fail when plotly changes
under it. When one fails after an upgrade, read the module again against the new plotly's source, and update
`PLOTLY_VERSION` with it."""

from __future__ import annotations

import copy

import numpy as np
import plotly
import plotly.graph_objects as go

from explorer.figures import plotly_internals


def test_the_figures_were_written_against_the_installed_plotly():
    assert plotly.__version__ == plotly_internals.PLOTLY_VERSION, "read explorer/figures/plotly_internals.py again"


def test_arrays_are_written_as_a_go_figure_writes_them():
    """`with_typed_arrays` on plain data gives what plotly's public, checked way gives: a float32 matrix, 64-bit
    integers that fit in 8 bits, float64 numbers, and an axis range, which stays a list."""
    raw = {
        "data": [
            {"type": "heatmap", "z": np.arange(12, dtype=np.float32).reshape(3, 4), "x": np.arange(4)},
            {"type": "scatter", "x": np.array([0.5, 1.5]), "y": np.array([3, 4], dtype=np.int64)},
        ],
        "layout": {"xaxis": {"range": np.array([0.0, 4.0])}},
    }
    checked = go.Figure(copy.deepcopy(raw)).to_dict()
    written = plotly_internals.with_typed_arrays(copy.deepcopy(raw))
    assert written["data"] == checked["data"]
    assert written["data"][0]["z"]["dtype"] == "f4" and written["data"][1]["y"]["dtype"] == "i1"
    assert written["layout"]["xaxis"]["range"].tolist() == [0.0, 4.0]
