"""What made the next token: each piece's contribution beside the attention, and the census of the heads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from plotly.colors import diverging

from ..i18n import _
from .base import (
    _TOP_LEGEND,
    ACCENT,
    BAR_COLOR,
    Figure,
    _as_array,
    _clamp,
    _domain,
    _figure,
    _scale,
    axis_labels,
    escape_label,
    trace,
)

NEGATIVE = "#e45756"  # a contribution against the token
CHANGE_COLORSCALE = _scale(diverging.RdBu)  # red: the probability falls; white: no change; blue: it rises
ATTENTION_MARK = "#2a3f5f"
ROW_PX = 30  # a piece's row: room for its label in the presentation layout's larger type too


def _shares(values: Any, n: int, name: str) -> np.ndarray:
    shares = _as_array(values, 1, name)
    if shares.shape[0] != n:
        raise ValueError(f"{name}: expected {n} values (one per piece), got {shares.shape[0]}")
    return shares


def contribution_bars(
    source: Sequence[str],
    source_shares: Any,
    target: Sequence[str],
    target_shares: Any,
    *,
    attention: Any = None,
    head_attention: Any = None,
    head_name: str = "",
    title: str = "",
) -> Figure:
    """Each piece's share of the contribution as horizontal bars, the source sentence above, the decoder's input
    (the start token and the pieces written) below; a share against the token is drawn to the left, in red.

    Args:
        source, target: the pieces (plain text), in order (the first at the top).
        source_shares, target_shares: (S,) and (T,) signed shares, in [-1, 1]: a piece's attribution over the sum
            of every attribution's magnitude.
        attention: (S,) the cross-attention of the row being predicted, the heads' average, drawn as marks on the
            source's bars; `head_attention` that of one head, named `head_name`.
    """
    s, t = _shares(source_shares, len(source), "source_shares"), _shares(target_shares, len(target), "target_shares")
    source_labels, target_labels = axis_labels(source), axis_labels(target)
    data = [
        _bars(shares, labels, axis, sign)
        for shares, labels, axis in ((s, source_labels, "y"), (t, target_labels, "y2"))
        for sign in (1, -1)
    ]
    marks = ((attention, _("attention, average of the heads"), "diamond"), (head_attention, head_name, "circle-open"))
    data += [_marks(_shares(v, len(source), "attention"), source_labels, n, m) for v, n, m in marks if v is not None]
    rows = len(source) + len(target)
    split = len(target) / rows  # the source's panel above, as tall as its rows
    widest = float(max(np.abs(s).max(initial=0), np.abs(t).max(initial=0), 0.05))
    for values in (attention, head_attention):
        if values is not None:
            widest = max(widest, float(np.max(_as_array(values, 1, "attention"))))
    low = min(s.min(initial=0), t.min(initial=0)) * 1.2  # as far left as the largest share against the token
    axis = {"range": [min(low, -0.02), widest * 1.1], "tickformat": ".0%", "showgrid": True, "zeroline": True}
    y_axis = {"type": "category", "autorange": "reversed", "showgrid": False}
    return _figure(
        data,
        title,
        _clamp(110 + ROW_PX * rows, 280, 1100),
        xaxis={**axis, "title": {"text": _("share of the contribution")}, "anchor": "y2"},
        yaxis={**y_axis, "domain": _domain(split + 0.04, 1.0), "title": {"text": _("source sentence")}},
        yaxis2={**y_axis, "domain": _domain(0.0, split), "anchor": "x", "title": {"text": _("written so far")}},
        barmode="overlay",
        legend=_TOP_LEGEND,
    )


def _cell(change: float, flipped: bool) -> str:
    """A census cell's text: the change in percentage points, "0" under half a point, ✕ first where it flips."""
    points = f"{100 * change:+.0f}" if abs(change) >= 0.005 else "0"
    return f"✕ {points}" if flipped else points


def _bars(shares: np.ndarray, labels: list[str], axis: str, sign: int) -> dict:
    """The pieces' shares of one sign (the others' bars empty): for the token, or against it."""
    kept = np.where(shares * sign > 0, shares, 0.0)
    name = _("contribution for the token") if sign > 0 else _("against it")
    return trace(
        "bar",
        x=kept,
        y=labels,
        yaxis=axis,
        orientation="h",
        name=escape_label(name),
        legendgroup=str(sign),
        showlegend=axis == "y",
        marker={"color": BAR_COLOR if sign > 0 else NEGATIVE},
        hovertemplate=_("%{y}<br>contribution %{x:.1%}<extra></extra>"),
    )


def _marks(weights: np.ndarray, labels: list[str], name: str, symbol: str) -> dict:
    """Attention weights as marks on the source's bars: the heads' average (a diamond), or one head (a ring)."""
    return trace(
        "scatter",
        x=weights,
        y=labels,
        yaxis="y",
        mode="markers",
        name=escape_label(name),
        marker={
            "symbol": symbol,
            "size": 10,
            "color": ACCENT if symbol == "circle-open" else ATTENTION_MARK,
            "line": {"width": 2},
        },
        hovertemplate=_("%{y}<br>attention %{x:.1%}<extra></extra>"),
    )


def census_grid(
    families: Sequence[tuple[str, Any, Any]],
    *,
    title: str = "",
) -> Figure:
    """The census of the heads: one layer × head grid per family, side by side; a cell's colour is how much
    silencing that head alone changes the chosen token's probability (red: it falls; blue: it rises), and a cell
    marked ✕ is a head whose silencing changes the choice.

    Args:
        families: (name shown, (L, H) changes in probability, (L, H) booleans: the choice flips), in order.
    """
    if not families:
        raise ValueError("families: at least one")
    gap = 0.06
    width = (1 - gap * (len(families) - 1)) / len(families)
    data, layout = [], {}
    for i, (name, changes, flips) in enumerate(families):
        suffix = "" if i == 0 else str(i + 1)
        data.append(_census_trace(name, _as_array(changes, 2, "changes"), np.asarray(flips, dtype=bool), suffix))
        start = i * (width + gap)
        # the family's name on two lines, and "head" under it: three grids share a narrow column on a projector
        axis_title = {"text": f"{escape_label(name).replace(' ', '<br>', 1)}<br>{_('head')}"}
        layout[f"xaxis{suffix}"] = {
            "domain": _domain(start, start + width),
            "title": axis_title,
            "anchor": f"y{suffix}",
            "showgrid": False,
        }
        layout[f"yaxis{suffix}"] = {"autorange": "reversed", "showgrid": False, "anchor": f"x{suffix}"}
        if i:
            layout[f"yaxis{suffix}"]["showticklabels"] = False
    widest = max(float(np.abs(np.asarray(trace["z"])).max(initial=0)) for trace in data)
    limit = max(widest, 0.01)
    rows = max(len(trace["y"]) for trace in data)
    coloraxis = {
        "colorscale": CHANGE_COLORSCALE,
        "cmin": -limit,
        "cmid": 0,
        "cmax": limit,
        "colorbar": {"title": {"text": _("change")}, "tickformat": "+.0%", "len": 0.9},
    }
    x_axis, y_axis = layout.pop("xaxis"), layout.pop("yaxis")
    height = _clamp(120 + 44 * rows, 240, 560)
    return _figure(data, title, height, xaxis=x_axis, yaxis=y_axis, coloraxis=coloraxis, **layout)


def _census_trace(name: str, z: np.ndarray, flipped: np.ndarray, suffix: str) -> dict:
    """One family's grid: a row per layer, a column per head, each cell's change written in it."""
    if flipped.shape != z.shape:
        raise ValueError(f"flips: expected the shape {z.shape}, got {flipped.shape}")
    text = [[_cell(z[r, c], flipped[r, c]) for c in range(z.shape[1])] for r in range(z.shape[0])]
    return trace(
        "heatmap",
        z=z,
        x=[str(head) for head in range(z.shape[1])],
        y=[_("layer {n}").format(n=layer) for layer in range(z.shape[0])],
        xaxis=f"x{suffix}",
        yaxis=f"y{suffix}",
        coloraxis="coloraxis",
        text=text,
        texttemplate="%{text}",
        name=escape_label(name),
        hovertemplate=escape_label(name) + _(" · %{y} · head %{x}<br>change %{z:+.1%}<extra></extra>"),
    )
