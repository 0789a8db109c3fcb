"""Training as figures: the curves of a run (loss, exact match, learning rate against the step), and the probe's
attention across training, with a slider over the snapshots that replays how the pattern formed.

The replay's slider moves in the browser alone: each of its steps carries its snapshot's weights and prediction
(Plotly's "update" method), so scrubbing and playing cost the server nothing, and every snapshot is drawn on the
same colour scale (0–1), as every attention map is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..i18n import N_, _
from .attention import attention_coloraxis
from .base import (
    _HOVER_ATTENTION,
    _TOP_LEGEND,
    ACCENT,
    Figure,
    _as_array,
    _axis_titles,
    _check_length,
    _figure,
    _title,
    axis_labels,
    escape_label,
    trace,
)

TRAIN_COLOR, HELD_OUT_COLOR, RATE_COLOR = "#636efa", "#EF553B", "#7f7f7f"
WRONG_COLOR = "#d62728"
# The three panels of the curves, top to bottom: their share of the height and the space between them.
PANELS = ((N_("loss"), 0.40), (N_("exact match (%)"), 0.35), (N_("learning rate"), 0.25))
PANEL_GAP = 0.06


def training_curves(train: Sequence[dict], held_out: Sequence[dict], *, title: str = "", height: int = 520) -> Figure:
    """The curves of a run against the step: the loss (training batches, held-out sequences), exact match (training
    batches teacher-forced, held-out sequences decoded greedily) and the learning rate.

    Args:
        train: records with "step", "loss", "exact" (0–1) and "lr".
        held_out: records with "step", "held_out_loss" and "held_out_exact" (0–1).
    """
    training, held = _("training batches"), _("held-out")
    lines = [
        ("y", training, train, "loss", TRAIN_COLOR, _("step %{x}<br>training loss %{y:.3f}")),
        ("y", held, held_out, "held_out_loss", HELD_OUT_COLOR, _("step %{x}<br>held-out loss %{y:.3f}")),
        ("y2", training, train, "exact", TRAIN_COLOR, _("step %{x}<br>training exact match %{y:.1f}%")),
        ("y2", held, held_out, "held_out_exact", HELD_OUT_COLOR, _("step %{x}<br>held-out exact match %{y:.1f}%")),
        ("y3", _("learning rate"), train, "lr", RATE_COLOR, _("step %{x}<br>learning rate %{y:.2e}")),
    ]
    traces = []
    for axis, name, records, key, colour, hover in lines:
        scale = 100.0 if key.endswith("exact") else 1.0
        traces.append(
            trace(
                "scatter",
                x=np.array([r["step"] for r in records], dtype=np.float32),
                y=np.array([scale * r[key] for r in records], dtype=np.float32),
                name=name,
                yaxis=axis,
                mode="lines+markers" if key.startswith("held_out") else "lines",
                line={"color": colour, "width": 2},
                marker={"size": 5},
                legendgroup=name,
                showlegend=axis == "y2" or key == "lr",  # each name once
                hovertemplate=hover + "<extra></extra>",
            )
        )
    axes, top = {}, 1.0
    for i, (label, share) in enumerate(PANELS):
        name = "yaxis" if i == 0 else f"yaxis{i + 1}"
        bottom = top - share * (1 - PANEL_GAP * (len(PANELS) - 1))
        domain = [max(bottom, 0.0), top]
        axes[name] = {"title": _title(_(label)), "domain": domain, "anchor": "x", "rangemode": "tozero"}
        top = bottom - PANEL_GAP
    axes["yaxis2"]["range"] = [0, 101]
    axes["yaxis3"]["exponentformat"] = "e"
    xaxis = {"title": _title(_("step")), "rangemode": "tozero", "anchor": "y3"}  # its ticks under the lowest panel
    yaxis = axes.pop("yaxis")
    return _figure(traces, title, height, xaxis=xaxis, yaxis=yaxis, legend=_TOP_LEGEND, **axes)


@dataclass(frozen=True)
class ReplayFrame:
    """The probe at one snapshot: the step, the attention map shown (queries × keys), and the model's translation
    of the probe then, with its wrong pieces."""

    step: int
    weights: Any  # (Q, K)
    prediction: Sequence[str]
    wrong: Sequence[bool]


def prediction_text(frame: ReplayFrame) -> str:
    """The prediction as the figure writes it under the map: each piece escaped, the wrong ones in red and struck
    through (the colour is not the only sign), and whether it is right."""
    pieces = [
        f"<span style='color:{WRONG_COLOR}'><s>{escape_label(piece)}</s></span>" if wrong else escape_label(piece)
        for piece, wrong in zip(frame.prediction, frame.wrong, strict=True)
    ]
    prediction = " ".join(pieces) or _("(nothing)")
    if frame.prediction and not any(frame.wrong):
        return _("step {step} · prediction: {prediction} · right").format(step=frame.step, prediction=prediction)
    text = _("step {step} · prediction: {prediction} · {count} wrong")
    return text.format(step=frame.step, prediction=prediction, count=sum(frame.wrong))


def probe_replay(
    frames: Sequence[ReplayFrame],
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    family: str = "cross",
    title: str = "",
    shown: int | None = None,
    height: int | None = None,
) -> Figure:
    """The probe's attention at every snapshot, one at a time, with a slider over the snapshots' steps that redraws
    the map and the prediction in the browser. `shown`: the frame drawn first (the last by default)."""
    if not frames:
        raise ValueError("a replay needs at least one snapshot")
    maps = [_as_array(frame.weights, 2, "weights").astype(np.float32) for frame in frames]
    n_q, n_k = maps[0].shape
    if any(m.shape != (n_q, n_k) for m in maps):
        raise ValueError("every snapshot's map must have the same shape")
    _check_length(query_tokens, n_q, "query_tokens")
    _check_length(key_tokens, n_k, "key_tokens")
    shown = len(frames) - 1 if shown is None else shown
    y_title, x_title = _axis_titles(family)
    heatmap = trace(
        "heatmap",
        z=maps[shown],
        x=axis_labels(key_tokens),
        y=axis_labels(query_tokens),
        coloraxis="coloraxis",
        hovertemplate=_(_HOVER_ATTENTION) + "<extra></extra>",
    )

    def caption(frame: ReplayFrame) -> dict:
        return {"text": prediction_text(frame), "xref": "paper", "yref": "paper", "x": 0, "y": 1.0, "yanchor": "bottom",
                "xanchor": "left", "showarrow": False, "font": {"size": 13}}  # fmt: skip

    steps = [
        {
            "label": str(frame.step),
            "method": "update",
            "args": [{"z": [weights]}, {"annotations": [caption(frame)]}],
        }
        for frame, weights in zip(frames, maps, strict=True)
    ]
    slider = {
        "active": shown,
        "steps": steps,
        "currentvalue": {"prefix": _("training step "), "font": {"size": 13}},
        "pad": {"t": 40, "b": 10},
        "len": 1.0,
        "x": 0,
        "activebgcolor": ACCENT,
    }
    return _figure(
        [heatmap],
        title,
        height or max(320, 200 + 22 * n_q),
        xaxis={"title": _title(x_title), "type": "category", "showgrid": False, "side": "bottom"},
        yaxis={"title": _title(y_title), "autorange": "reversed", "type": "category", "showgrid": False},
        coloraxis=attention_coloraxis(),
        annotations=[caption(frames[shown])],
        sliders=[slider],
        margin={"l": 10, "r": 10, "t": 70 if title else 40, "b": 10},  # the prediction above the map
    )
