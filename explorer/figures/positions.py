"""The positional encoding: the table the model adds, chosen dimensions over positions, and how alike two
positions' encodings are."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..i18n import _
from .base import _TOP_LEGEND, DIVERGING_COLORSCALE, Figure, _as_array, _figure, _title, trace


def positional_heatmap(table: Any, *, title: str = "", height: int = 420) -> Figure:
    """A (P, d_model) positional-encoding table: position 0 at the top, dimensions across, colours fixed -1 … 1.

    Values outside -1 … 1 (learned encodings) take the end colours; hover shows the true value.
    """
    z = _as_array(table, 2, "table")
    heatmap = trace(
        "heatmap",
        z=z,
        zmin=-1.0,
        zmax=1.0,
        colorscale=DIVERGING_COLORSCALE,
        colorbar={"title": {"text": _("value"), "side": "right"}, "thickness": 12},
        hovertemplate=_("position %{y}<br>dimension %{x}<br>value %{z:.3f}") + "<extra></extra>",
    )
    return _figure(
        [heatmap],
        title,
        height,
        xaxis={"title": _title(_("dimension")), "showgrid": False, "zeroline": False},
        yaxis={"title": _title(_("position")), "autorange": "reversed", "showgrid": False, "zeroline": False},
    )


def positional_curves(table: Any, dims: Sequence[int], *, title: str = "", height: int = 320) -> Figure:
    """The values of the chosen dimensions (columns of a (P, d_model) table) as one line each over position."""
    values = _as_array(table, 2, "table")
    n_positions, d_model = values.shape
    dims = [operator.index(d) for d in dims]
    if not dims:
        raise ValueError("dims is empty: choose at least one dimension")
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        raise ValueError(f"dims {bad} out of range for d_model={d_model}")
    positions = np.arange(n_positions, dtype=np.int32)
    lines = [
        trace(
            "scatter",
            x=positions,
            y=values[:, d],
            mode="lines",
            name=_("dim {d}").format(d=d),
            hovertemplate=_("position %{x}<br>value %{y:.3f}"),
        )
        for d in dims
    ]
    return _figure(
        lines,
        title,
        height,
        xaxis={"title": _title(_("position")), "zeroline": False},
        yaxis={"title": _title(_("value")), "zeroline": True},
        hovermode="x unified",
        legend=_TOP_LEGEND,
    )


def position_similarity(table: Any, *, metric: str = "cosine", title: str = "", height: int = 420) -> Figure:
    """How alike the encodings of every pair of positions are: a (P, P) matrix.

    Args:
        table: (P, d_model) positional encodings.
        metric: "cosine" (cosine similarity, colours fixed -1 … 1) or "dot" (dot product, colours symmetric
            around 0); the colour bar names the metric.
    """
    values = _as_array(table, 2, "table").astype(np.float64)
    if metric == "cosine":
        norms = np.linalg.norm(values, axis=1, keepdims=True)
        unit = values / np.where(norms > 0, norms, 1.0)
        matrix, limit, bar_title = unit @ unit.T, 1.0, _("cosine similarity")
    elif metric == "dot":
        matrix = values @ values.T
        limit, bar_title = float(np.abs(matrix).max()) or 1.0, _("dot product")
    else:
        raise ValueError(f"metric must be 'cosine' or 'dot', got {metric!r}")
    heatmap = trace(
        "heatmap",
        z=matrix.astype(np.float32),
        zmin=-limit,
        zmax=limit,
        colorscale=DIVERGING_COLORSCALE,
        colorbar={"title": {"text": bar_title, "side": "right"}, "thickness": 12},
        hovertemplate=_("position %{y} · position %{x}<br>%{z:.3f}") + "<extra></extra>",
    )
    return _figure(
        [heatmap],
        title,
        height,
        xaxis={
            "title": _title(_("position")),
            "showgrid": False,
            "zeroline": False,
            "scaleanchor": "y",
            "constrain": "domain",
        },
        # Square cells: whichever side is longer gives up room (`constrain`), never showing positions that do not exist.
        yaxis={
            "title": _title(_("position")),
            "autorange": "reversed",
            "showgrid": False,
            "zeroline": False,
            "constrain": "domain",
        },
    )
