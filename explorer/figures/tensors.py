"""The tensors of one step as HTML (stacked strips, matrices and bars, each value under the pointer), and the
paper's architecture diagram (its Figure 1) drawn from blocks, for the Inside a step view."""

from __future__ import annotations

import base64
import html
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .attention import _ACCENT_RGB, _weights_rgb
from .base import (
    ACCENT,
    DIVERGING_COLORSCALE,
    Figure,
    _as_array,
    _colour_table,
    _figure,
    _png,
    _row_index,
    escape_label,
    readable,
    shorten,
)


@dataclass(frozen=True)
class TensorPanel:
    """One tensor of a stage, drawn as a panel of `tensor_panels`.

    kind "heat": a (rows, columns) matrix, or a vector as one row, coloured blue-white-red around 0 ("weights":
    white to blue over 0–1, as the attention maps); kind "bars": one value per label, as vertical bars.
    """

    title: str  # plain text, with the shape in the tutorials' notation, e.g. "q, the query (d_k,) = (64,)"
    values: Any  # heat: (rows, columns) or (columns,); bars: (n,)
    kind: str = "heat"
    x_labels: Sequence[str] | None = None  # bars: one per bar; heat: one per column (None: the column index)
    y_labels: Sequence[str] | None = None  # heat: one per row
    highlight_row: int | None = None  # heat: a row outlined (the position computed now)
    masked: Any = None  # bars: True where the value is −∞ (a masked score): a grey bar and "−∞"
    colours: str = "diverging"  # heat: "diverging" (around 0) or "weights" (0–1)
    number_format: str = ".3f"


_DIVERGING_RGB = _colour_table(DIVERGING_COLORSCALE)
_ROW_PX = 14  # the height of one row of a matrix or strip on the page


def tensor_panels_html(panels: Sequence[TensorPanel]) -> str:
    """The tensors of a stage stacked top to bottom as HTML: each a title with its shape, then a strip or matrix
    (a PNG of whole-pixel cells, stretched by the page) or a row of bars. The values travel along (`data-values`),
    so that the page's script can show each cell's number under the pointer; bars carry theirs in `title`.

    HTML rather than a Plotly figure: the page redraws this at every step, and Plotly, which lays out and redraws
    a figure of stacked subplots whole after every update, took about 180 ms for nine panels."""
    if not panels:
        raise ValueError("no panels to draw")
    return '<div class="tensors">' + "".join(_panel_html(panel) for panel in panels) + "</div>"


def _panel_html(panel: TensorPanel) -> str:
    title = f'<div class="tensor-title">{escape_label(panel.title)}</div>'
    if panel.kind == "bars":
        return f'<div class="tensor tensor-bars">{title}{_bars_html(panel)}</div>'
    z = _as_array(panel.values, (1, 2), "values")
    z = z[None] if z.ndim == 1 else z
    n_rows = z.shape[0]
    if panel.colours == "weights":
        rgb = _weights_rgb(z)
    else:
        bound = float(np.nanmax(np.abs(z))) or 1.0
        rgb = _DIVERGING_RGB[np.clip(np.rint((np.nan_to_num(z) / bound + 1) * 127.5), 0, 255).astype(np.int64)]
    row = _row_index(panel.highlight_row, n_rows) if panel.highlight_row is not None and n_rows > 1 else None
    if row is not None:  # a frame around the row computed now: two pixel rows above and below, in the accent
        rgb = rgb.repeat(4, axis=0)
        rgb[[4 * row, 4 * row + 3]] = _ACCENT_RGB
    png = base64.b64encode(_png(rgb)).decode()
    rows = [shorten(readable(label)) for label in panel.y_labels] if panel.y_labels is not None else []
    values = json.dumps([[float(format(v, panel.number_format)) for v in line] for line in np.nan_to_num(z).tolist()])
    labels = html.escape(json.dumps(rows, ensure_ascii=False), quote=True)  # plain text for the page's script
    image = (
        f'<img class="tensor-image" alt="" src="data:image/png;base64,{png}" data-values="{values}" '
        f'data-labels="{labels}" style="height: {_ROW_PX * n_rows}px">'
    )
    names = "".join(
        f'<span class="{"now" if i == row else ""}">{html.escape(f"{i} · {label}")}</span>'
        for i, label in enumerate(rows)
    )
    side = f'<div class="tensor-rows" style="height: {_ROW_PX * n_rows}px">{names}</div>' if rows else ""
    return f'<div class="tensor">{title}<div class="tensor-body">{side}{image}</div></div>'


def _bars_html(panel: TensorPanel) -> str:
    """Vertical bars on a zero line, each with its value above (or below) and its label underneath."""
    values = _as_array(panel.values, 1, "values")
    names = [escape_label(shorten(readable(x))) for x in (panel.x_labels or range(len(values)))]
    masked = np.zeros(len(values), dtype=bool) if panel.masked is None else np.asarray(panel.masked, dtype=bool)
    shown = np.where(masked | ~np.isfinite(values), 0.0, values)
    top, bottom = max(float(shown.max(initial=0.0)), 0.0), min(float(shown.min(initial=0.0)), 0.0)
    span = (top - bottom) or 1.0
    bars = []
    for name, value, off in zip(names, values.tolist(), masked.tolist(), strict=True):
        text = "−∞" if off else format(value, panel.number_format)
        height = 0.0 if off else abs(value) / span * 100
        kind = ("up" if off or value >= 0 else "down") + (" masked" if off else "")
        bars.append(
            f'<div class="bar {kind}" title="{name}: {text}{" (masked)" if off else ""}" data-label="{name}" '
            f'data-value="{"-inf" if off else value!r}"><div class="bar-area" style="--zero: {top / span * 100:.1f}%">'
            f'<div class="bar-fill" style="height: {height:.1f}%"></div></div><span class="bar-value">{text}</span>'
            f'<span class="bar-label">{name}</span></div>'
        )
    return f'<div class="bars">{"".join(bars)}</div>'


@dataclass(frozen=True)
class Block:
    """A block of the architecture diagram: its stage key, its label, and which stack it is in."""

    key: str
    label: str
    stack: str  # "encoder", "decoder" or "" (outside the stacks)


_BLOCK_H, _BLOCK_GAP, _BLOCK_W = 0.8, 0.45, 3.4


def architecture_diagram(
    encoder: Sequence[Block], decoder: Sequence[Block], *, selected: str = "", n_encoder: int = 1,
    n_decoder: int = 1, title: str = "",
) -> Figure:  # fmt: skip
    """The paper's Figure 1 drawn from blocks: the encoder on the left, the decoder on the right, each bottom to
    top, the repeated layers framed with "N×", arrows between the blocks, and the `selected` block filled in the
    accent colour. Blocks outside the stacks (embeddings first, the output last) sit below and above the frame."""
    shapes, annotations = [], []

    def column(blocks: Sequence[Block], x: float, n: int, side: int) -> dict[str, float]:
        centres, y, frame = {}, 0.5, []
        for block in blocks:
            if block.stack and not frame:
                y += 0.35  # room for the frame
            if not block.stack and frame:
                y += 0.35
            centres[block.key] = y
            if block.stack:
                frame.append(y)
            chosen = block.key == selected
            shapes.append(_box(x, y, _BLOCK_W, _BLOCK_H, fillcolor=ACCENT if chosen else "#eef2f8"))
            annotations.append({"text": escape_label(block.label), "x": x, "y": y, "showarrow": False,
                                "font": {"size": 11, "color": "white" if chosen else "#2a3f5f"}})  # fmt: skip
            y += _BLOCK_H + _BLOCK_GAP
        if frame:
            middle, height = (frame[0] + frame[-1]) / 2, frame[-1] - frame[0] + _BLOCK_H + 0.5
            shapes.append(_box(x, middle, _BLOCK_W + 0.5, height, fillcolor="rgba(0,0,0,0)", dash="dot"))
            annotations.append(
                {
                    "text": f"N× = {n}",
                    "x": x + side * (_BLOCK_W / 2 + 0.35),
                    "y": middle,
                    "xanchor": "left" if side > 0 else "right",
                    "showarrow": False,
                    "font": {"size": 11},
                }
            )  # fmt: skip (outside the frame, as in the paper)
        keys = [block.key for block in blocks]
        for below, above in itertools.pairwise(keys):
            annotations.append(_arrow(x, centres[below] + _BLOCK_H / 2, x, centres[above] - _BLOCK_H / 2))
        return centres

    x_encoder, x_decoder = 3.0, 7.6
    left = column(encoder, x_encoder, n_encoder, side=-1)
    right = column(decoder, x_decoder, n_decoder, side=+1)
    cross = next((b.key for b in decoder if "cross_attention" in b.key and "norm" not in b.key), None)
    if left and cross:  # the encoder's output feeds every decoder layer's cross-attention
        top = max(left.values()) + _BLOCK_H / 2 + 0.6  # above the frame: the encoder's output
        annotations.append(_arrow(x_encoder, top, x_decoder - _BLOCK_W / 2, right[cross], text="memory (S, d_model)"))
        annotations.append(_arrow(x_encoder, top - 0.6, x_encoder, top - 0.05))
    height = max([*left.values(), *right.values()]) + 1
    return _figure([], title, 120 + int(42 * height), xaxis={"visible": False, "range": [0, 10.8]},
                   yaxis={"visible": False, "range": [0, height]}, shapes=shapes, annotations=annotations)  # fmt: skip


def _box(x: float, y: float, width: float, height: float, *, fillcolor: str, dash: str = "solid") -> dict:
    """A rectangle centred on (x, y), in data coordinates."""
    line = {"color": "#8090a8", "width": 1, "dash": dash}
    return {"type": "rect", "x0": x - width / 2, "x1": x + width / 2, "y0": y - height / 2, "y1": y + height / 2,
            "fillcolor": fillcolor, "line": line, "layer": "below"}  # fmt: skip


def _arrow(x0: float, y0: float, x1: float, y1: float, text: str = "") -> dict[str, Any]:
    return {"x": x1, "y": y1, "ax": x0, "ay": y0, "xref": "x", "yref": "y", "axref": "x", "ayref": "y",
            "showarrow": True, "arrowhead": 2, "arrowsize": 1, "arrowwidth": 1.2, "arrowcolor": "#8090a8",
            "text": text, "font": {"size": 10, "color": "#8090a8"}}  # fmt: skip
