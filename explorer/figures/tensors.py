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

from ..stages import Block
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
class _Sizes:
    """The diagram's type and spacing, in pixels (its y axis counts pixels, so that every block fits its lines)."""

    font: int  # the blocks' labels
    line: int  # one line of a label
    pad: int  # a block's height beyond its lines
    gap: int  # between two blocks: an arrow
    room: int  # between a stack's frame and the blocks outside it
    chars: int  # the longest line of a label, in characters, that fits a block


_SIZES = {  # normal: a column of 320 px or wider; compact: the presentation layout's, about 280 px
    False: _Sizes(font=11, line=14, pad=12, gap=18, room=16, chars=24),
    True: _Sizes(font=10, line=12, pad=8, gap=12, room=12, chars=21),
}
# x: data units across the figure, whatever its width. Each column is a block and its stack's frame; the "N×" of
# each frame stands on its outer side, turned upright to take little width.
_X_RANGE, _BLOCK_W, _FRAME_PAD, _SIDE = 10.8, 4.4, 0.15, 0.4
_X_ENCODER = _SIDE + _BLOCK_W / 2 + _FRAME_PAD
_X_DECODER = _X_RANGE - _X_ENCODER


def label_lines(label: str, chars: int) -> list[str]:
    """A block's label as the diagram writes it: on one line when it fits in `chars` characters, or else broken
    where the label says it may be (a line break), and at spaces where a part is still too long."""
    if len(whole := " ".join(label.split("\n"))) <= chars:
        return [whole]
    lines = []
    for part in label.split("\n"):
        line = ""
        for word in part.split(" "):
            if line and len(line) + 1 + len(word) > chars:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return lines


def architecture_diagram(
    encoder: Sequence[Block], decoder: Sequence[Block], *, selected: str = "", n_encoder: int = 1,
    n_decoder: int = 1, title: str = "", compact: bool = False,
) -> Figure:  # fmt: skip
    """The paper's Figure 1 drawn from blocks: the encoder on the left, the decoder on the right, each bottom to
    top, the repeated layers framed with "N×", arrows between the blocks, and the `selected` block filled in the
    accent colour. Blocks outside the stacks (embeddings first, the output last) sit below and above the frame.

    Each block's rectangle is named by its key (`name`): the page finds the block under a click by it. `compact`:
    smaller type and tighter rows, for a narrow column; that figure is drawn at its size for the presentation
    layout already (`Figure.drawn_for_presentation`: `enlarged` leaves it as it is)."""
    size = _SIZES[compact]
    shapes, annotations = [], []

    def column(blocks: Sequence[Block], x: float, n: int, side: int) -> dict[str, tuple[float, float]]:
        spans, y, in_stack, stack = {}, 4.0, False, []  # key -> (bottom, top) in pixels from the plot's bottom
        for block in blocks:
            if bool(block.stack) != in_stack:
                y += size.room  # room for the frame, entering or leaving the stack
                in_stack = bool(block.stack)
            lines = label_lines(block.label, size.chars)
            height = len(lines) * size.line + size.pad
            spans[block.key] = (y, y + height)
            if block.stack:
                stack.append(spans[block.key])
            chosen = block.key == selected
            shapes.append(_box(x, y + height / 2, _BLOCK_W, height, fillcolor=ACCENT if chosen else "#eef2f8",
                               name=block.key))  # fmt: skip
            annotations.append({"text": "<br>".join(escape_label(line) for line in lines), "x": x,
                                "y": y + height / 2, "showarrow": False,
                                "font": {"size": size.font, "color": "white" if chosen else "#2a3f5f"}})  # fmt: skip
            y += height + size.gap
        if stack:
            margin = size.room / 2
            bottom, top = stack[0][0] - margin, stack[-1][1] + margin
            shapes.append(_box(x, (bottom + top) / 2, _BLOCK_W + 2 * _FRAME_PAD, top - bottom,
                               fillcolor="rgba(0,0,0,0)", dash="dot"))  # fmt: skip
            annotations.append(
                {
                    "text": f"N× = {n}",
                    "x": x + side * (_BLOCK_W / 2 + _FRAME_PAD + 0.05),
                    "y": (bottom + top) / 2,
                    "xanchor": "left" if side > 0 else "right",
                    "textangle": -90,
                    "showarrow": False,
                    "font": {"size": size.font},
                }
            )  # fmt: skip (outside the frame, as in the paper)
        keys = [block.key for block in blocks]
        for below, above in itertools.pairwise(keys):
            annotations.append(_arrow(x, spans[below][1], x, spans[above][0]))
        return spans

    left = column(encoder, _X_ENCODER, n_encoder, side=-1)
    right = column(decoder, _X_DECODER, n_decoder, side=+1)
    tops = [top for _, top in [*left.values(), *right.values()]]
    cross = next((b.key for b in decoder if "cross_attention" in b.key and "norm" not in b.key), None)
    if left and cross:  # the encoder's output feeds every decoder layer's cross-attention
        last = max(top for _, top in left.values())
        start = last + size.room / 2 + size.gap + size.line  # above the frame: the encoder's output, named
        bottom, top = right[cross]
        annotations.append(_arrow(_X_ENCODER, start, _X_DECODER - _BLOCK_W / 2, (bottom + top) / 2,
                                  text="memory (S, d_model)", size=size.font - 1))  # fmt: skip
        annotations.append(_arrow(_X_ENCODER, last, _X_ENCODER, start - size.line / 2 - 2))
        tops.append(start + size.line)
    height = max(tops) + 6
    top_margin = 40 if title else 20
    figure = _figure(
        [], title, round(height) + top_margin + 10,
        xaxis={"visible": False, "range": [0, _X_RANGE], "fixedrange": True},
        yaxis={"visible": False, "range": [0, height], "fixedrange": True},
        shapes=shapes, annotations=annotations, dragmode=False, hovermode=False,
    )  # fmt: skip
    figure.drawn_for_presentation = compact
    return figure


def _box(
    x: float, y: float, width: float, height: float, *, fillcolor: str, dash: str = "solid", name: str = ""
) -> dict:  # fmt: skip
    """A rectangle centred on (x, y), in data coordinates, with its `name` if it has one."""
    line = {"color": "#8090a8", "width": 1, "dash": dash}
    box = {"type": "rect", "x0": x - width / 2, "x1": x + width / 2, "y0": y - height / 2, "y1": y + height / 2,
           "fillcolor": fillcolor, "line": line, "layer": "below"}  # fmt: skip
    return {**box, "name": name} if name else box


def _arrow(x0: float, y0: float, x1: float, y1: float, text: str = "", size: int = 10) -> dict[str, Any]:
    return {"x": x1, "y": y1, "ax": x0, "ay": y0, "xref": "x", "yref": "y", "axref": "x", "ayref": "y",
            "showarrow": True, "arrowhead": 2, "arrowsize": 1, "arrowwidth": 1.2, "arrowcolor": "#8090a8",
            "text": text, "font": {"size": size, "color": "#8090a8"}}  # fmt: skip
