"""The tensors of one step as HTML (stacked strips, matrices and bars, each value under the pointer), and the
paper's architecture diagram (its Figure 1) drawn from blocks, for the Inside a step view."""

from __future__ import annotations

import base64
import html
import itertools
import json
import textwrap
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..i18n import _
from ..stages import Block
from .attention import _ACCENT_RGB, _weights_rgb
from .base import (
    ACCENT,
    DIVERGING_COLORSCALE,
    Figure,
    _as_array,
    _colour_table,
    _figure,
    _on_host,
    _png,
    _row_index,
    escape_label,
    readable,
    shorten,
    text_width,
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
    masked = np.zeros(len(values), dtype=bool) if panel.masked is None else np.asarray(_on_host(panel.masked), bool)
    shown = np.where(masked | ~np.isfinite(values), 0.0, values)
    top, bottom = max(float(shown.max(initial=0.0)), 0.0), min(float(shown.min(initial=0.0)), 0.0)
    span = (top - bottom) or 1.0
    bars = []
    for name, value, off in zip(names, values.tolist(), masked.tolist(), strict=True):
        text = "−∞" if off else format(value, panel.number_format)
        height = 0.0 if off else abs(value) / span * 100
        kind = ("up" if off or value >= 0 else "down") + (" masked" if off else "")
        tip = _("{label}: {value} (masked)").format(label=name, value=text) if off else f"{name}: {text}"
        exact = "-inf" if off else repr(value)
        bars.append(
            f'<div class="bar {kind}" title="{tip}" data-label="{name}" '
            f'data-value="{exact}"><div class="bar-area" style="--zero: {top / span * 100:.1f}%">'
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
    where the label says it may be (a line break), and at spaces where a part is still too long; Chinese text, which
    has no spaces, between its characters (each as wide as two Latin ones, `text_width`)."""
    if text_width(whole := " ".join(label.split("\n"))) <= chars:
        return [whole]
    lines = []
    for part in label.split("\n"):
        line = ""
        for unit, spaced in _break_units(part):
            joined = f"{line} {unit}" if line and spaced else line + unit
            if line and text_width(joined) > chars:
                lines.append(line)
                line = unit
            else:
                line = joined
        lines.append(line)
    return lines


_NO_LINE_START = "，。、：；！？）》」』’”"  # Chinese punctuation that stays with the character before it
_NO_LINE_END = "（《「『‘“"  # and that stays with the character after it


def _break_units(part: str) -> list[tuple[str, bool]]:
    """The pieces of `part` a line may break between, each with whether a space goes before it: its words (split at
    spaces), and each Chinese character on its own (with the punctuation that may not start or end a line)."""
    units: list[list] = []  # [text, space before, ends with a wide character]
    for w, word in enumerate(part.split(" ")):
        units.append(["", w > 0, False])
        for char in word:
            wide = unicodedata.east_asian_width(char) in "WF"
            last = units[-1]
            if not last[0] or (not wide and not last[2]) or char in _NO_LINE_START or last[0][-1] in _NO_LINE_END:
                last[0] += char
                last[2] = wide
            else:
                units.append([char, False, wide])
    return [(text, spaced) for text, spaced, _wide in units]


DIAGRAM_TITLE_CHARS = 36  # the diagram's title, a line at most, in its narrow column


def architecture_diagram(
    encoder: Sequence[Block],
    decoder: Sequence[Block],
    *,
    selected: str = "",
    n_encoder: int = 1,
    n_decoder: int = 1,
    title: str = "",
    compact: bool = False,
) -> Figure:
    """The paper's Figure 1 drawn from blocks: the encoder on the left, the decoder on the right, each bottom to
    top, the repeated layers framed with "N×", arrows between the blocks, and the `selected` block filled in the
    accent colour. Blocks outside the stacks (embeddings first, the output last) sit below and above the frame.

    Each block's rectangle is named by its key (`name`): the page finds the block under a click by it. `compact`:
    smaller type and tighter rows, for a narrow column; that figure is drawn at its size for the presentation
    layout already (`Figure.drawn_for_presentation`: `enlarged` leaves it as it is)."""
    drawing = _Drawing(_SIZES[compact], selected)
    left = drawing.column(encoder, _X_ENCODER, n_encoder, side=-1)
    right = drawing.column(decoder, _X_DECODER, n_decoder, side=+1)
    tops = [top for _bottom, top in [*left.values(), *right.values()]]
    cross = next((b.key for b in decoder if "cross_attention" in b.key and "norm" not in b.key), None)
    if left and cross:  # the encoder's output feeds every decoder layer's cross-attention
        tops.append(drawing.memory(max(top for _bottom, top in left.values()), right[cross]))
    height = max(tops) + 6
    # a long model name on lines of its own, not cut at the column's edge
    lines = textwrap.wrap(title, DIAGRAM_TITLE_CHARS, break_on_hyphens=False) if title else []
    top_margin = 20 + 20 * len(lines)
    figure = _figure(
        [],
        title,
        round(height) + top_margin + 10,
        xaxis={"visible": False, "range": [0, _X_RANGE], "fixedrange": True},
        yaxis={"visible": False, "range": [0, height], "fixedrange": True},
        shapes=drawing.shapes,
        annotations=drawing.annotations,
        dragmode=False,
        hovermode=False,
    )
    if len(lines) > 1:
        figure.layout["title"]["text"] = "<br>".join(escape_label(line) for line in lines)
        figure.layout["margin"]["t"] = top_margin
    figure.drawn_for_presentation = compact
    return figure


_LINE_GREY = "#8090a8"  # the frames, the arrows and the memory's name


@dataclass
class _Drawing:
    """The diagram's shapes and annotations, added column by column. Its y counts pixels from the plot's bottom."""

    size: _Sizes
    selected: str  # the key of the block filled in the accent colour
    shapes: list[dict] = field(default_factory=list)
    annotations: list[dict] = field(default_factory=list)

    def column(self, blocks: Sequence[Block], x: float, n: int, side: int) -> dict[str, tuple[float, float]]:
        """One column's blocks, bottom to top, centred on `x`, with arrows between them; those of the stack framed,
        with "N× = `n`" on the frame's outer `side` (-1: left). Returns each block's (bottom, top), by key."""
        spans, y, in_stack, stack = {}, 4.0, False, []
        for block in blocks:
            if bool(block.stack) != in_stack:
                y += self.size.room  # room for the frame, entering or leaving the stack
                in_stack = bool(block.stack)
            height = self.block(block, x, y)
            spans[block.key] = (y, y + height)
            if block.stack:
                stack.append(spans[block.key])
            y += height + self.size.gap
        if stack:
            self.frame(x, stack[0][0], stack[-1][1], n, side)
        keys = [block.key for block in blocks]
        for below, above in itertools.pairwise(keys):
            self.annotations.append(_arrow(x, spans[below][1], x, spans[above][0]))
        return spans

    def block(self, block: Block, x: float, bottom: float) -> float:
        """A block and its label, its bottom at `bottom`; returns its height, which its lines set."""
        lines = label_lines(block.label, self.size.chars)
        height = len(lines) * self.size.line + self.size.pad
        middle = bottom + height / 2
        chosen = block.key == self.selected
        fill = ACCENT if chosen else "#eef2f8"
        self.shapes.append(_box(x, middle, _BLOCK_W, height, fillcolor=fill, name=block.key))
        label = "<br>".join(escape_label(line) for line in lines)
        font = {"size": self.size.font, "color": "white" if chosen else "#2a3f5f"}
        self.annotations.append({"text": label, "x": x, "y": middle, "showarrow": False, "font": font})
        return height

    def frame(self, x: float, bottom: float, top: float, n: int, side: int) -> None:
        """The dotted frame around a stack's blocks (from `bottom` to `top`), and "N× = `n`" on its outer side,
        upright, outside the frame as in the paper."""
        margin = self.size.room / 2
        bottom, top = bottom - margin, top + margin
        middle = (bottom + top) / 2
        width = _BLOCK_W + 2 * _FRAME_PAD
        self.shapes.append(_box(x, middle, width, top - bottom, fillcolor="rgba(0,0,0,0)", dash="dot"))
        name = {
            "text": f"N× = {n}",
            "x": x + side * (_BLOCK_W / 2 + _FRAME_PAD + 0.05),
            "y": middle,
            "xanchor": "left" if side > 0 else "right",
            "textangle": -90,
            "showarrow": False,
            "font": {"size": self.size.font},
        }
        self.annotations.append(name)

    def memory(self, encoder_top: float, cross: tuple[float, float]) -> float:
        """The encoder's output, named "memory", going up from `encoder_top` and across to the decoder's
        cross-attention block (its bottom and top); returns the top of the name."""
        size = self.size
        start = encoder_top + size.room / 2 + size.gap + size.line  # above the frame: the encoder's output, named
        bottom, top = cross
        named = {"text": _("memory (S, d_model)"), "size": size.font - 1}
        across = _arrow(_X_ENCODER, start, _X_DECODER - _BLOCK_W / 2, (bottom + top) / 2, **named)
        up = _arrow(_X_ENCODER, encoder_top, _X_ENCODER, start - size.line / 2 - 2)
        self.annotations += [across, up]
        return start + size.line


def _box(
    x: float, y: float, width: float, height: float, *, fillcolor: str, dash: str = "solid", name: str = ""
) -> dict:
    """A rectangle centred on (x, y), in data coordinates, with its `name` if it has one."""
    corners = {"x0": x - width / 2, "x1": x + width / 2, "y0": y - height / 2, "y1": y + height / 2}
    line = {"color": _LINE_GREY, "width": 1, "dash": dash}
    box = {"type": "rect", **corners, "fillcolor": fillcolor, "line": line, "layer": "below"}
    return {**box, "name": name} if name else box


def _arrow(x0: float, y0: float, x1: float, y1: float, text: str = "", size: int = 10) -> dict[str, Any]:
    """An arrow from (x0, y0) to (x1, y1), in data coordinates, with `text` at its head."""
    ends = {"x": x1, "y": y1, "ax": x0, "ay": y0, "xref": "x", "yref": "y", "axref": "x", "ayref": "y"}
    head = {"showarrow": True, "arrowhead": 2, "arrowsize": 1, "arrowwidth": 1.2, "arrowcolor": _LINE_GREY}
    return {**ends, **head, "text": text, "font": {"size": size, "color": _LINE_GREY}}
