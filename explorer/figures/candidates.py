"""The next-token candidates as bars, and the candidates with and without silenced heads side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..i18n import _
from .base import (
    _TOP_LEGEND,
    ACCENT,
    BAR_COLOR,
    MUTED,
    Figure,
    _as_array,
    _clamp,
    _figure,
    _row_index,
    axis_labels,
    escape_label,
    trace,
    with_margins_for,
)


def _probabilities(values: Any, n: int, name: str) -> np.ndarray:
    probs = _as_array(values, 1, name)
    if probs.shape[0] != n:
        raise ValueError(f"{name}: expected {n} values (one per token), got {probs.shape[0]}")
    return probs


def _bar_height(n_bars: int, per_bar: int) -> int:
    return _clamp(90 + per_bar * n_bars, 200, 640)


def _candidate_axes() -> dict[str, dict]:
    return {
        "xaxis": {"title": {"text": _("probability")}, "range": [0, 1], "tickformat": ".0%", "showgrid": True},
        "yaxis": {"title": {"text": _("next token")}, "autorange": "reversed", "type": "category", "showgrid": False},
    }


def candidates_bar(tokens: Sequence[str], probs: Any, *, chosen: int | None = None, title: str = "") -> Figure:
    """The top-k next-token candidates as horizontal bars, most probable at the top.

    Args:
        tokens: K candidate token strings (plain text).
        probs: (K,) their probabilities.
        chosen: the index (into `tokens`) of the chosen or forced candidate, drawn in the accent colour.

    Each bar's `customdata` is its index into `tokens`, so a click handler knows which candidate was clicked;
    its label is `axis_labels(tokens)[index]`.
    """
    p = _probabilities(probs, len(tokens), "probs")
    chosen = _row_index(chosen, len(tokens), "chosen")
    order = [int(i) for i in np.argsort(-p, kind="stable")]
    labels = axis_labels(tokens)
    bars = trace(
        "bar",
        x=p[order],
        y=[labels[i] for i in order],
        orientation="h",
        customdata=order,
        marker={"color": [ACCENT if i == chosen else BAR_COLOR for i in order]},
        texttemplate="%{x:.1%}",
        textposition="auto",
        hovertemplate="%{y}<br>%{x:.2%}<extra></extra>",
    )
    figure = _figure([bars], title, _bar_height(len(order), 26), **_candidate_axes(), showlegend=False)
    return with_margins_for(figure, labels)


def compare_candidates(
    tokens: Sequence[str],
    before: Any,
    after: Any,
    *,
    labels: tuple[str, str] | None = None,
    title: str = "",
) -> Figure:
    """Two next-token distributions over the same tokens as grouped horizontal bars (e.g. before and after
    silencing heads), ordered by the first distribution, most probable at the top.

    Args:
        tokens: the K token strings both distributions are shown for (plain text).
        before, after: (K,) probabilities under each condition.
        labels: the legend names of the two conditions (plain text); by default "before" and "after".
    """
    first = _probabilities(before, len(tokens), "before")
    second = _probabilities(after, len(tokens), "after")
    labels = (_("before"), _("after")) if labels is None else labels
    if len(labels) != 2:
        raise ValueError(f"labels: expected 2 names, got {len(labels)}")
    order = [int(i) for i in np.argsort(-first, kind="stable")]
    y = axis_labels([tokens[i] for i in order])  # ranked as shown: 0 is the first condition's most probable
    bars = [
        trace(
            "bar",
            x=values[order],
            y=y,
            orientation="h",
            name=escape_label(name),
            customdata=order,
            marker={"color": color},
            hovertemplate="%{y}: %{x:.2%}",  # the condition's name shows in the hover's side box
        )
        for values, name, color in ((first, labels[0], MUTED), (second, labels[1], BAR_COLOR))
    ]
    axes = _candidate_axes()
    return _figure(bars, title, _bar_height(len(order), 40), **axes, barmode="group", legend=_TOP_LEGEND)
