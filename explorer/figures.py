"""Figures for the explorer: pure functions, arrays and token labels in, `plotly.graph_objects.Figure` out.

No gradio and no torch here: arrays may be numpy arrays or torch tensors (converted with `np.asarray`).

Conventions, the same in every figure:
- Rows are queries, columns are keys, and the axis titles say so; query 0 (position 0, the best beam, the most
  probable candidate) is at the top (`autorange="reversed"` on y).
- Token axes are categorical, and every category is made unique by its position: `axis_labels(["▁the", "▁the"])`
  is `["0 · ▁the", "1 · ▁the"]` (plotly merges repeated categories). The same labels appear in hover text.
  Sentencepiece's word-start marker `▁` is kept as it is, so students see how the text was cut.
- All text that comes from data (tokens, titles, legend names, hover text) is plain text and goes through
  `escape_label`: plotly renders a subset of HTML in text (`<b>`, `<br>`, `<a href>`, `<span style>`), and a
  label typed by a user must never become markup. Plotly decodes `&lt;`, `&gt;`, `&amp;` and numeric
  entities for display, so an escaped `<b>` is shown as the four characters `<b>`.
- Attention uses one shared colour axis with the fixed range 0–1, so heads, layers and steps are comparable.
- Figures stay small: float32 arrays (plotly writes numpy arrays as base64), no per-cell text except on small
  matrices, no per-cell customdata.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
from PIL import Image
from plotly.colors import diverging, sequential

__all__ = [
    "AXIS_TITLES",
    "AttentionMap",
    "Block",
    "TensorPanel",
    "alignment_lines",
    "architecture_diagram",
    "attention_grid",
    "attention_heatmap",
    "attention_side_by_side",
    "attention_thumbnails_html",
    "axis_labels",
    "beam_tree",
    "candidates_bar",
    "compare_candidates",
    "enlarged",
    "escape_label",
    "position_similarity",
    "positional_curves",
    "positional_heatmap",
    "tensor_panels_html",
    "thumbnail_png",
    "token_chips_html",
]

# The parts of plotly's "plotly_white" template these figures use. The full template is about 7 KB of JSON in
# every figure sent to the browser, more than the data of a heatmap; this one is a tenth of that.
_AXIS = {"gridcolor": "#EBF0F8", "linecolor": "#EBF0F8", "zerolinecolor": "#EBF0F8", "ticks": "", "automargin": True}
TEMPLATE = go.layout.Template(
    layout={
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "font": {"color": "#2a3f5f"},
        "colorway": ["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880"],
        "hovermode": "closest",
        "hoverlabel": {"align": "left"},
        "xaxis": _AXIS,
        "yaxis": _AXIS,
        "coloraxis": {"colorbar": {"outlinewidth": 0, "ticks": ""}},
    }
)
ATTENTION_COLORSCALE = sequential.Blues  # white at 0, dark blue at 1
DIVERGING_COLORSCALE = diverging.RdBu_r  # blue below 0, white at 0, red above
BAR_COLOR = "#4c78a8"
ACCENT = "#f58518"  # the chosen candidate, the highlighted query row, the best beam path
FINISHED_COLOR = "#54a24b"
MUTED = "#b0b0b0"

AXIS_TITLES: dict[str, tuple[str, str]] = {  # attention family -> (y title, x title), names as in model.py
    "encoder": ("query (source token)", "key (source token)"),
    "decoder_self": ("query (target token)", "key (target token)"),
    "cross": ("query (target token)", "key (source token)"),
}

MAX_LABEL_CHARS = 24  # longer token labels are shortened with "…" (hover shows the same shortened label)
VALUE_TEXT_MAX = 12  # write the weight in each cell only when both sides have at most this many tokens
GRID_TICK_MAX = 24  # small multiples: tick labels only when a side has at most this many tokens

_TOP_LEGEND = {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"}  # under the title
_NEWLINES = re.compile(r"\r\n?|\n")
_HOVER_ATTENTION = "query %{y}<br>key %{x}<br>weight %{z:.3f}"


# --------------------------------------------------------------------------------------------------------
# Labels and inputs
# --------------------------------------------------------------------------------------------------------


def escape_label(text: object) -> str:
    """Plain text -> inert text for plotly (and HTML): `& < >` and quotes become entities, newlines become `↵`.

    Quotes use numeric entities (`&#34;`), which plotly decodes for display; it does not decode `&quot;`.
    """
    text = _NEWLINES.sub("↵", str(text))
    return html.escape(text, quote=False).replace('"', "&#34;").replace("'", "&#39;")


def shorten(text: object, limit: int = MAX_LABEL_CHARS) -> str:
    """`text`, cut to `limit` characters with "…" at the end when longer."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


WORD_START = "▁"  # sentencepiece's mark of a piece that starts a word


def readable(token: object) -> str:
    """A token as a label: the bare word-start piece `▁` (which sentencepiece emits when a word's first piece
    does not carry the mark) would be a lone low bar, so it is named."""
    return f"{WORD_START} (word start)" if str(token) == WORD_START else str(token)


def axis_labels(tokens: Sequence[object]) -> list[str]:
    """Unique, escaped category labels: `"3 · ▁the"` for the token `▁the` at position 3."""
    return [f"{i} · {escape_label(shorten(readable(token)))}" for i, token in enumerate(tokens)]


def _as_array(values: Any, ndim: int | tuple[int, ...], name: str) -> np.ndarray:
    """A float32 numpy array from a numpy array, a list or a torch tensor (on any device, with or without grad)."""
    if hasattr(values, "detach"):  # a torch tensor, without importing torch
        values = values.detach().cpu().float()
    array = np.asarray(values, dtype=np.float32)
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if array.ndim not in allowed:
        expected = " or ".join(f"{n}-D" for n in allowed)
        raise ValueError(f"{name} must be {expected}, got shape {array.shape}")
    return array


def _check_length(labels: Sequence[object], n: int, what: str) -> None:
    if len(labels) != n:
        raise ValueError(f"{what}: expected {n} labels, got {len(labels)}")


def _row_index(row: int | None, n: int, name: str = "highlight_query") -> int | None:
    """Validate a row index (negative counts from the end, as in Python)."""
    if row is None:
        return None
    row = operator.index(row)
    if not -n <= row < n:
        raise ValueError(f"{name}={row} is out of range for {n} rows")
    return row % n


def _axis_titles(family: str) -> tuple[str, str]:
    if family not in AXIS_TITLES:
        raise ValueError(f"unknown attention family {family!r}; expected one of {', '.join(AXIS_TITLES)}")
    return AXIS_TITLES[family]


def _domain(start: float, end: float) -> list[float]:
    """A subplot's domain, rounded into 0 … 1 (plotly rejects -1e-17)."""
    return [round(min(max(start, 0.0), 1.0), 6), round(min(max(end, 0.0), 1.0), 6)]


def _clamp(value: float, low: int, high: int) -> int:
    return int(min(max(value, low), high))


def _figure(data: Sequence[Any], title: str, height: int, *, xaxis: dict, yaxis: dict, **layout: Any) -> go.Figure:
    """The figure, built in one go, with the layout every figure shares: template, escaped short title, fixed
    height, tight margins. (One construction validates everything once; adding to a figure step by step with
    `update_layout` and `update_xaxes` took ten times as long, 12 ms instead of 1.5 ms for the candidates.)"""
    top = (40 if title else 20) + (28 if layout.get("legend") is _TOP_LEGEND else 0)
    shared = {
        "template": TEMPLATE,
        "title": {"text": escape_label(title), "x": 0.01, "xanchor": "left", "font": {"size": 14}},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": top, "b": 10},
        "font": {"size": 12},
        "hoverlabel": {"font": {"size": 12}},
        "xaxis": {**xaxis, "automargin": True},
        "yaxis": {**yaxis, "automargin": True},
    }
    return go.Figure(data=list(data), layout={**shared, **layout})


ENLARGED_MIN_HEIGHT = 320  # a heatmap of two rows keeps a plot taller than its axis title


def enlarged(figure: go.Figure, by: float = 1.4) -> go.Figure:
    """`figure` with every text `by` times larger (the presentation layout: readable from the back of a room), and
    as much taller, so that the larger labels leave the plot its room."""
    layout = figure.layout
    if layout.height:
        layout.height = max(round(layout.height * by), ENLARGED_MIN_HEIGHT)
    if layout.margin.t:
        layout.margin.t = round(layout.margin.t * by)
    grow = lambda size, default: round((size or default) * by)  # noqa: E731
    figure.update_layout(font_size=grow(layout.font.size, 12), title_font_size=grow(layout.title.font.size, 14),
                         hoverlabel_font_size=grow(layout.hoverlabel.font.size, 12))  # fmt: skip
    for annotation in layout.annotations:
        if annotation.font.size:
            annotation.font.size = grow(annotation.font.size, 12)
    for axis in [*figure.select_xaxes(), *figure.select_yaxes()]:
        if axis.tickfont.size:
            axis.tickfont.size = grow(axis.tickfont.size, 12)
        if axis.title.font.size:
            axis.title.font.size = grow(axis.title.font.size, 12)
    return figure


def _title(text: str) -> dict[str, str]:
    return {"text": text}


# --------------------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------------------


ATTENTION_COLORAXIS = {  # shared by every attention panel: heads, layers and steps are comparable
    "colorscale": ATTENTION_COLORSCALE,
    "cmin": 0.0,
    "cmax": 1.0,
    # the title along the bar's side: above it, it touched the "1.0" label
    "colorbar": {"title": {"text": "weight", "side": "right"}, "thickness": 12, "tickformat": ".1f"},
}


def _highlight_row(row: int, n_keys: int, **where: Any) -> dict[str, Any]:
    """A rectangle around one query row; rows are categories 0 … Q-1, so it spans row ± 0.5."""
    return {
        "type": "rect",
        "x0": -0.5,
        "x1": n_keys - 0.5,
        "y0": row - 0.5,
        "y1": row + 0.5,
        "line": {"color": ACCENT, "width": 2},
        "fillcolor": "rgba(0,0,0,0)",
        "layer": "above",
        **where,
    }


def attention_heatmap(
    weights: Any,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    title: str = "",
    highlight_query: int | None = None,
    family: str = "cross",
    show_values: bool | None = None,
    height: int | None = None,
    masked: Any = None,
) -> go.Figure:
    """One attention matrix (one head, or an average of heads) as a heatmap.

    Args:
        weights: (Q, K) attention weights after softmax (rows sum to 1).
        query_tokens, key_tokens: Q and K token strings (plain text; escaped and made unique here).
        title: plain text.
        highlight_query: a query row to outline (the token of the current decoding step); negative counts from the end.
        family: "encoder", "decoder_self" or "cross": picks the axis titles (`AXIS_TITLES`).
        show_values: write each weight in its cell; by default only when Q and K are both at most 12.
        height: in pixels; by default it grows with Q between 180 and 720.
        masked: (Q, K) booleans, True where a mask forbids the query to attend to the key. Those cells are grey
            and say "masked" on hover, so that a mask is not mistaken for a weight the model learned to be 0.
    """
    z = _as_array(weights, 2, "weights")
    n_q, n_k = z.shape
    _check_length(query_tokens, n_q, "query_tokens")
    _check_length(key_tokens, n_k, "key_tokens")
    row = _row_index(highlight_query, n_q)
    y_title, x_title = _axis_titles(family)
    if show_values is None:
        show_values = max(n_q, n_k) <= VALUE_TEXT_MAX

    x, y = axis_labels(key_tokens), axis_labels(query_tokens)
    z, cells = _without_masked(z, masked)
    traces = [] if cells is None else [_masked_cells(cells, x, y)]
    heatmap = go.Heatmap(
        z=z,
        x=x,
        y=y,
        coloraxis="coloraxis",
        hovertemplate=_HOVER_ATTENTION + "<extra></extra>",
        hoverongaps=False,  # a masked cell's hover is the grey layer's
        texttemplate="%{z:.2f}" if show_values else None,
        textfont={"size": 10} if show_values else None,
    )
    return _figure(
        [*traces, heatmap],
        title,
        height or _clamp(110 + 20 * n_q, 180, 720),
        xaxis={"title": _title(x_title), "type": "category", "showgrid": False},
        yaxis={"title": _title(y_title), "autorange": "reversed", "type": "category", "showgrid": False},
        coloraxis=ATTENTION_COLORAXIS,
        shapes=[] if row is None else [_highlight_row(row, n_k)],
    )


MASKED_COLOR = "#d9d9d9"


def _without_masked(z: np.ndarray, masked: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """The weights `z` (..., Q, K) with gaps where `masked` (Q, K) is True (the grey layer shows through them),
    and the masked cells (None when nothing is masked)."""
    cells = _mask_of(masked, z.shape[-2:])
    return (z, None) if cells is None else (np.where(cells, np.nan, z), cells)


def _mask_of(masked: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """`masked` as a boolean array of `shape`, or None when nothing is masked."""
    if masked is None:
        return None
    cells = np.asarray(masked, dtype=bool)
    if cells.shape != tuple(shape):
        raise ValueError(f"masked: expected shape {tuple(shape)}, got {cells.shape}")
    return cells if cells.any() else None


def _masked_cells(cells: np.ndarray, x: list[str], y: list[str]) -> go.Heatmap:
    """A grey layer on the masked cells only (the rest is a gap), with its own hover text."""
    return go.Heatmap(
        z=np.where(cells, 1.0, np.nan),
        x=x,
        y=y,
        colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
        showscale=False,
        hoverongaps=False,
        hovertemplate="query %{y}<br>key %{x}<br>masked: not allowed to attend<extra></extra>",
        name="masked",
    )


@dataclass(frozen=True)
class _Grid:
    """Where each panel of a small-multiples figure goes: `n_panels` in rows of `n_cols`, each `panel_px` high,
    with `gap_px` between rows for the panel titles. Positions are fractions of the plotting area."""

    n_panels: int
    n_cols: int
    panel_px: int
    gap_px: int = 34

    @property
    def n_rows(self) -> int:
        return math.ceil(self.n_panels / self.n_cols)

    @property
    def height_px(self) -> int:
        return self.n_rows * self.panel_px + (self.n_rows - 1) * self.gap_px

    @property
    def h_gap(self) -> float:  # between columns
        return 0.03 if self.n_cols > 1 else 0.0

    @property
    def v_gap(self) -> float:  # between rows
        return self.gap_px / self.height_px

    @property
    def width(self) -> float:
        return (1 - (self.n_cols - 1) * self.h_gap) / self.n_cols

    @property
    def height(self) -> float:
        return (1 - (self.n_rows - 1) * self.v_gap) / self.n_rows

    def corner(self, p: int) -> tuple[float, float]:
        """The left and top edges of panel `p`."""
        r, c = divmod(p, self.n_cols)
        return c * (self.width + self.h_gap), 1 - r * (self.height + self.v_gap)

    def is_left(self, p: int) -> bool:
        return p % self.n_cols == 0

    def is_bottom(self, p: int) -> bool:  # no panel below
        return p + self.n_cols >= self.n_panels

    def axes(self, p: int, x_name: str, y_name: str, *, show_x: bool, show_y: bool) -> tuple[dict, dict]:
        """Panel `p`'s x and y axes: tick labels only under the bottom panels and left of the left ones."""
        x0, top = self.corner(p)
        common = {"type": "category", "showgrid": False, "tickfont": {"size": 9}, "automargin": True}
        x_axis = {"domain": _domain(x0, x0 + self.width), "anchor": y_name, **common,
                  "showticklabels": self.is_bottom(p) and show_x}  # fmt: skip
        y_axis = {"domain": _domain(top - self.height, top), "anchor": x_name, **common, "autorange": "reversed",
                  "showticklabels": self.is_left(p) and show_y}  # fmt: skip
        return x_axis, y_axis

    def title(self, p: int, text: str) -> dict:
        """Panel `p`'s title, centred above it."""
        x0, top = self.corner(p)
        return {"text": text, "x": x0 + self.width / 2, "y": top, "xref": "paper", "yref": "paper",
                "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 11}}  # fmt: skip


def _panels_figure(traces: list, title: str, height: int, axes: dict[str, dict], **layout: Any) -> go.Figure:
    """A figure of several attention panels: `axes` holds every panel's axes ("xaxis", "yaxis", "xaxis2", …), and
    the panels share the 0–1 colour axis of the attention maps."""
    axes = dict(axes)
    first_x, first_y = axes.pop("xaxis"), axes.pop("yaxis")
    return _figure(traces, title, height, xaxis=first_x, yaxis=first_y, coloraxis=ATTENTION_COLORAXIS, **axes,
                   **layout)  # fmt: skip


def attention_grid(
    weights: Any,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    title: str = "",
    highlight_query: int | None = None,
    head_titles: Sequence[str] | None = None,
    max_cols: int = 4,
    family: str = "cross",
    panel_height: int | None = None,
    masked: Any = None,
) -> go.Figure:
    """All heads of one layer (or of every layer) as small multiples sharing one 0–1 colour axis.

    Args:
        weights: (H, Q, K) for the heads of one layer, wrapped into rows of `max_cols`;
            or (L, H, Q, K) for every layer, one row per layer and one column per head.
        query_tokens, key_tokens: Q and K token strings (plain text).
        head_titles: one plain-text title per panel; by default "head h" (or "L0 H3" for (L, H, Q, K)).
        highlight_query: a query row outlined in every panel.
        family: picks the axis titles (`AXIS_TITLES`), shown once, on the top-left and bottom-left panels.
        panel_height: in pixels; by default it grows with Q, up to 220 (170 with more than two rows of panels).
        masked: (Q, K) booleans, the same for every panel: grey, "masked" on hover (as in `attention_heatmap`).

    Tick labels show on the left column (queries) and under each column's bottom panel (keys), for a side of at
    most 24 tokens; hover always names the query, the key and the weight."""
    z = _as_array(weights, (3, 4), "weights")
    if z.ndim == 4:
        n_layers, n_heads = z.shape[:2]
        default_titles = [f"L{layer} H{head}" for layer in range(n_layers) for head in range(n_heads)]
        n_cols = n_heads
        z = z.reshape(n_layers * n_heads, *z.shape[2:])
    else:
        default_titles = [f"head {head}" for head in range(z.shape[0])]
        n_cols = min(z.shape[0], max(1, int(max_cols)))
    n_panels, n_q, n_k = z.shape
    if n_panels == 0:
        raise ValueError("weights has no heads")
    _check_length(query_tokens, n_q, "query_tokens")
    _check_length(key_tokens, n_k, "key_tokens")
    titles = default_titles if head_titles is None else list(head_titles)
    _check_length(titles, n_panels, "head_titles")
    row = _row_index(highlight_query, n_q)
    y_title, x_title = _axis_titles(family)
    z, cells = _without_masked(z, masked)
    n_rows = math.ceil(n_panels / n_cols)
    grid = _Grid(n_panels, n_cols, panel_height or _clamp(60 + 22 * n_q, 70, 220 if n_rows <= 2 else 170))

    # The layout is built as one dict (make_subplots and per-panel updates take ~0.5 s for 48 panels).
    x_labels, y_labels = axis_labels(key_tokens), axis_labels(query_tokens)
    traces, layout, shapes, annotations = [], {}, [], []
    for p in range(n_panels):
        x_name, y_name = f"x{p + 1 if p else ''}", f"y{p + 1 if p else ''}"
        if cells is not None:
            traces.append(_masked_cells(cells, x_labels, y_labels).update(xaxis=x_name, yaxis=y_name))
        trace = go.Heatmap(z=z[p], x=x_labels, y=y_labels, xaxis=x_name, yaxis=y_name, coloraxis="coloraxis",
                           name=escape_label(titles[p]), hovertemplate=_HOVER_ATTENTION, hoverongaps=False)  # fmt: skip
        traces.append(trace)  # the panel title shows in the hover's side box
        x_axis, y_axis = grid.axes(p, x_name, y_name, show_x=n_k <= GRID_TICK_MAX, show_y=n_q <= GRID_TICK_MAX)
        layout["xaxis" + x_name[1:]], layout["yaxis" + y_name[1:]] = x_axis, y_axis
        if p == 0:  # the axis titles once: top left and bottom left
            y_axis["title"] = {"text": y_title, "font": {"size": 11}}
        if grid.is_left(p) and grid.is_bottom(p):
            x_axis["title"] = {"text": x_title, "font": {"size": 11}}
        annotations.append(grid.title(p, escape_label(titles[p])))
        if row is not None:
            shapes.append(_highlight_row(row, n_k, xref=x_name, yref=y_name))
    return _panels_figure(traces, title, grid.height_px + 150, layout, annotations=annotations, shapes=shapes)


@dataclass(frozen=True)
class AttentionMap:
    """One attention matrix to draw beside others (`attention_side_by_side`); arguments as in `attention_heatmap`."""

    weights: Any
    query_tokens: Sequence[str]
    key_tokens: Sequence[str]
    family: str
    title: str
    highlight_query: int | None = None
    masked: Any = None


def attention_side_by_side(maps: Sequence[AttentionMap], *, title: str = "", height: int | None = None) -> go.Figure:
    """Attention matrices side by side, each with its own tokens, on one shared 0–1 colour axis: for example the
    three families of one layer, which change together at every step."""
    if not maps:
        raise ValueError("no attention maps to draw")
    # Between two maps: room for the right one's y tick labels and title (at about 6.5 px a character, in a
    # figure about 1,150 px wide), which plotly's automargin makes only on the left of the whole figure.
    longest = max((len(label) for m in maps[1:] for label in axis_labels(m.query_tokens)), default=0)
    gap = min(0.2, (40 + 6.5 * longest) / 1150)
    width = (1 - gap * (len(maps) - 1)) / len(maps)
    traces, layout, shapes, annotations = [], {}, [], []
    tallest = 0
    for p, m in enumerate(maps):
        z = _as_array(m.weights, 2, "weights")
        n_q, n_k = z.shape
        _check_length(m.query_tokens, n_q, "query_tokens")
        _check_length(m.key_tokens, n_k, "key_tokens")
        tallest = max(tallest, n_q)
        x_name, y_name = f"x{p + 1 if p else ''}", f"y{p + 1 if p else ''}"
        x, y = axis_labels(m.key_tokens), axis_labels(m.query_tokens)
        z, cells = _without_masked(z, m.masked)
        if cells is not None:
            traces.append(_masked_cells(cells, x, y).update(xaxis=x_name, yaxis=y_name))
        traces.append(go.Heatmap(z=z, x=x, y=y, xaxis=x_name, yaxis=y_name, coloraxis="coloraxis", hoverongaps=False,
                                 name=escape_label(m.title), hovertemplate=_HOVER_ATTENTION))  # fmt: skip
        y_title, x_title = _axis_titles(m.family)
        x0 = p * (width + gap)
        common = {"type": "category", "showgrid": False, "automargin": True, "tickfont": {"size": 10}}
        layout["xaxis" + x_name[1:]] = {**common, "domain": _domain(x0, x0 + width), "anchor": y_name,
                                        "title": {"text": x_title, "font": {"size": 11}}}  # fmt: skip
        layout["yaxis" + y_name[1:]] = {**common, "domain": [0, 1], "anchor": x_name, "autorange": "reversed",
                                        "title": {"text": y_title, "font": {"size": 11}}}  # fmt: skip
        annotations.append({"text": escape_label(m.title), "x": x0 + width / 2, "y": 1, "xref": "paper",
                            "yref": "paper", "xanchor": "center", "yanchor": "bottom", "showarrow": False,
                            "font": {"size": 12}})  # fmt: skip
        row = _row_index(m.highlight_query, n_q)
        if row is not None:
            shapes.append(_highlight_row(row, n_k, xref=x_name, yref=y_name))
    height = height or _clamp(170 + 18 * tallest, 260, 640)
    return _panels_figure(traces, title, height, layout, annotations=annotations, shapes=shapes)


# Line weights and opacities by attention weight: lines under the first bin's lower edge are not drawn.
_LINE_BINS = ((0.05, 1.0, 0.25), (0.15, 2.0, 0.4), (0.3, 3.5, 0.6), (0.5, 5.0, 0.8), (0.75, 7.0, 0.95))
_LINE_RGB = {"other": "33,113,181", "current": "245,133,24"}  # the blue of the heatmaps; ACCENT


def alignment_lines(
    weights: Any,
    written_tokens: Sequence[str],
    source_tokens: Sequence[str],
    *,
    read_tokens: Sequence[str] | None = None,
    current: int | None = None,
    title: str = "",
    height: int = 380,
) -> go.Figure:
    """Cross-attention as an alignment: the source sentence on top, the translation below, and a line from each
    target piece to every source piece its query attended to, thicker and darker for more weight (under 0.05:
    no line).

    Args:
        weights: (T, S) cross-attention weights of one head or a head average.
        written_tokens: T pieces, the piece each query row *wrote*: row t reads piece t and predicts piece t + 1,
            so the lines of row t belong to piece t + 1 (the shift by one).
        source_tokens: S source pieces.
        read_tokens: T pieces, the piece each row read (the decoder's input), named on hover.
        current: the row choosing the next piece now, drawn in the accent colour.
    """
    z = _as_array(weights, 2, "weights")
    n_t, n_s = z.shape
    _check_length(written_tokens, n_t, "written_tokens")
    _check_length(source_tokens, n_s, "source_tokens")
    read = list(read_tokens) if read_tokens is not None else [""] * n_t
    _check_length(read, n_t, "read_tokens")
    row = _row_index(current, n_t, "current")
    xs, xt = _spread(n_s), _spread(n_t)

    traces = []
    for which in ("other", "current"):
        rows = [t for t in range(n_t) if (t == row) == (which == "current")]
        for b, (low, width, alpha) in enumerate(_LINE_BINS):
            high = _LINE_BINS[b + 1][0] if b + 1 < len(_LINE_BINS) else 1.01
            x, y = [], []
            for t in rows:
                for s in np.flatnonzero((z[t] >= low) & (z[t] < high)):
                    x += [xt[t], xs[s], None]
                    y += [0, 1, None]
            if x:
                color = f"rgba({_LINE_RGB[which]},{alpha})"
                traces.append(go.Scatter(x=x, y=y, mode="lines", line={"width": width, "color": color},
                                         hoverinfo="skip", showlegend=False))  # fmt: skip

    def hover(t: int) -> str:
        top = np.argsort(-z[t])[:3]
        looks = "<br>".join(f"{escape_label(shorten(readable(source_tokens[s])))}: {z[t, s]:.2f}" for s in top)
        reading = f" (its query read {escape_label(shorten(readable(read[t])))})" if read[t] else ""
        return f"wrote {escape_label(shorten(readable(written_tokens[t])))}{reading}<br>looked at:<br>{looks}"

    labels = [escape_label(shorten(readable(token), 14)) for token in written_tokens]
    sources = [escape_label(shorten(readable(token), 14)) for token in source_tokens]
    colors = [ACCENT if t == row else BAR_COLOR for t in range(n_t)]
    traces.append(_token_row(xs, 1, sources, [BAR_COLOR] * n_s, "top", [f"source {s}" for s in sources]))
    traces.append(_token_row(xt, 0, labels, colors, "bottom", [hover(t) for t in range(n_t)]))
    return _figure(
        traces,
        title,
        height,
        xaxis={"visible": False, "range": [-0.06, 1.06]},
        yaxis={"visible": False, "range": [-0.45, 1.45]},
        showlegend=False,
    )


def _spread(n: int) -> np.ndarray:
    """`n` evenly spaced positions across 0 … 1 (one token: the middle)."""
    return np.array([0.5]) if n == 1 else np.linspace(0.0, 1.0, n)


def _token_row(x: np.ndarray, y: float, labels: list[str], colors: list[str], side: str, hover: list[str]):
    """A row of tokens (markers with their text above or below) at height `y`."""
    return go.Scatter(
        x=x, y=[y] * len(x), mode="markers+text", text=labels, textposition=f"{side} center",
        marker={"size": 9, "color": colors}, textfont={"size": 12}, hovertext=hover, hoverinfo="text",
    )  # fmt: skip


# --------------------------------------------------------------------------------------------------------
# Thumbnails: every layer and head at once
# --------------------------------------------------------------------------------------------------------


def _colour_table(colorscale: Sequence[str], n: int = 256) -> np.ndarray:
    """(n, 3) uint8 colours along a plotly colour scale of "rgb(r,g,b)" stops, from 0 to 1."""
    stops = np.array([[int(v) for v in re.findall(r"\d+", c)] for c in colorscale], dtype=np.float64)
    at = np.linspace(0, 1, len(stops))
    return np.stack([np.interp(np.linspace(0, 1, n), at, stops[:, c]) for c in range(3)], axis=1).astype(np.uint8)


_ATTENTION_RGB = _colour_table(ATTENTION_COLORSCALE)
_MASKED_RGB = np.array([0xD9, 0xD9, 0xD9], dtype=np.uint8)
_ACCENT_RGB = np.array([0xF5, 0x85, 0x18], dtype=np.uint8)
THUMBNAIL_PX = 96  # the longer side of a thumbnail's image, before the page scales it


def _weights_rgb(z: np.ndarray) -> np.ndarray:
    """Attention weights (0–1, NaN as 0) -> (…, 3) colours of the heatmaps' scale."""
    return _ATTENTION_RGB[np.clip(np.rint(np.nan_to_num(z) * 255), 0, 255).astype(np.int64)]


def _png(rgb: np.ndarray) -> bytes:
    """An (H, W, 3) uint8 image as PNG bytes (fast compression: these are made at every step)."""
    buffer = io.BytesIO()
    Image.fromarray(rgb.astype(np.uint8)).save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def thumbnail_png(weights: Any, *, masked: Any = None, highlight_query: int | None = None) -> bytes:
    """One attention matrix as a small PNG in the heatmaps' colours: masked cells grey, the highlighted query row
    framed in the accent colour. Each cell is a square of whole pixels, so the page can enlarge it sharply."""
    z = _as_array(weights, 2, "weights")
    n_q, n_k = z.shape
    rgb = _weights_rgb(z)
    cells = _mask_of(masked, z.shape)
    if cells is not None:
        rgb[cells] = _MASKED_RGB
    k = _clamp(THUMBNAIL_PX // max(n_q, n_k, 1), 1, 16)
    image = rgb.repeat(k, axis=0).repeat(k, axis=1)
    row = _row_index(highlight_query, n_q)
    if row is not None and k >= 3:
        band = image[row * k : (row + 1) * k]
        band[[0, -1], :] = _ACCENT_RGB
        band[:, [0, -1]] = _ACCENT_RGB
    return _png(image)


def attention_thumbnails_html(
    weights: Any,
    *,
    masked: Any = None,
    highlight_query: int | None = None,
    selected: tuple[int, int] | None = None,
    what: str = "attention",
) -> str:
    """Every layer × head of one attention family as a grid of thumbnails, one row per layer (like BertViz's
    model view). Each is a button carrying `data-layer` and `data-head`, so a click can open it large;
    `selected` (layer, head) is outlined. `what` names the family in the tooltips (plain text)."""
    z = _as_array(weights, 4, "weights")
    n_layers, n_heads = z.shape[:2]
    name = html.escape(what)
    parts = [f'<div class="thumbs" style="--heads: {n_heads}" role="grid" aria-label="{name}: every layer and head">',
             '<span></span>', *(f'<span class="thumbs-head">head {h}</span>' for h in range(n_heads))]  # fmt: skip
    for layer in range(n_layers):
        parts.append(f'<span class="thumbs-layer">layer {layer}</span>')
        for head in range(n_heads):
            png = base64.b64encode(thumbnail_png(z[layer, head], masked=masked, highlight_query=highlight_query))
            chosen = " selected" if selected == (layer, head) else ""
            label = f"{name}, layer {layer}, head {head}: open it large"
            parts.append(
                f'<button class="thumb{chosen}" data-layer="{layer}" data-head="{head}" title="{label}" '
                f'aria-label="{label}"><img alt="" src="data:image/png;base64,{png.decode()}"></button>'
            )
    parts.append("</div>")
    return "".join(parts)


# --------------------------------------------------------------------------------------------------------
# Tensors: the stages of one step, as stacked strips, matrices and bars
# --------------------------------------------------------------------------------------------------------


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
) -> go.Figure:  # fmt: skip
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


# --------------------------------------------------------------------------------------------------------
# Next-token candidates
# --------------------------------------------------------------------------------------------------------


def _probabilities(values: Any, n: int, name: str) -> np.ndarray:
    probs = _as_array(values, 1, name)
    if probs.shape[0] != n:
        raise ValueError(f"{name}: expected {n} values (one per token), got {probs.shape[0]}")
    return probs


def _bar_height(n_bars: int, per_bar: int) -> int:
    return _clamp(90 + per_bar * n_bars, 200, 640)


_CANDIDATE_AXES = {
    "xaxis": {"title": {"text": "probability"}, "range": [0, 1], "tickformat": ".0%", "showgrid": True},
    "yaxis": {"title": {"text": "next token"}, "autorange": "reversed", "type": "category", "showgrid": False},
}


def candidates_bar(tokens: Sequence[str], probs: Any, *, chosen: int | None = None, title: str = "") -> go.Figure:
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
    bars = go.Bar(
        x=p[order],
        y=[labels[i] for i in order],
        orientation="h",
        customdata=order,
        marker={"color": [ACCENT if i == chosen else BAR_COLOR for i in order]},
        texttemplate="%{x:.1%}",
        textposition="auto",
        hovertemplate="%{y}<br>%{x:.2%}<extra></extra>",
    )
    return _figure([bars], title, _bar_height(len(order), 26), **_CANDIDATE_AXES, showlegend=False)


def compare_candidates(
    tokens: Sequence[str],
    before: Any,
    after: Any,
    *,
    labels: tuple[str, str] = ("before", "after"),
    title: str = "",
) -> go.Figure:
    """Two next-token distributions over the same tokens as grouped horizontal bars (e.g. before and after
    silencing heads), ordered by the first distribution, most probable at the top.

    Args:
        tokens: the K token strings both distributions are shown for (plain text).
        before, after: (K,) probabilities under each condition.
        labels: the legend names of the two conditions (plain text).
    """
    first = _probabilities(before, len(tokens), "before")
    second = _probabilities(after, len(tokens), "after")
    if len(labels) != 2:
        raise ValueError(f"labels: expected 2 names, got {len(labels)}")
    order = [int(i) for i in np.argsort(-first, kind="stable")]
    y = axis_labels([tokens[i] for i in order])  # ranked as shown: 0 is the first condition's most probable
    bars = [
        go.Bar(
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
    return _figure(bars, title, _bar_height(len(order), 40), **_CANDIDATE_AXES, barmode="group", legend=_TOP_LEGEND)


# --------------------------------------------------------------------------------------------------------
# Positional encoding
# --------------------------------------------------------------------------------------------------------


def positional_heatmap(table: Any, *, title: str = "", height: int = 420) -> go.Figure:
    """A (P, d_model) positional-encoding table: position 0 at the top, dimensions across, colours fixed -1 … 1.

    Values outside -1 … 1 (learned encodings) take the end colours; hover shows the true value.
    """
    z = _as_array(table, 2, "table")
    heatmap = go.Heatmap(
        z=z,
        zmin=-1.0,
        zmax=1.0,
        colorscale=DIVERGING_COLORSCALE,
        colorbar={"title": {"text": "value", "side": "right"}, "thickness": 12},
        hovertemplate="position %{y}<br>dimension %{x}<br>value %{z:.3f}<extra></extra>",
    )
    return _figure(
        [heatmap],
        title,
        height,
        xaxis={"title": _title("dimension"), "showgrid": False, "zeroline": False},
        yaxis={"title": _title("position"), "autorange": "reversed", "showgrid": False, "zeroline": False},
    )


def positional_curves(table: Any, dims: Sequence[int], *, title: str = "", height: int = 320) -> go.Figure:
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
        go.Scatter(
            x=positions,
            y=values[:, d],
            mode="lines",
            name=f"dim {d}",
            hovertemplate="position %{x}<br>value %{y:.3f}",
        )
        for d in dims
    ]
    return _figure(
        lines,
        title,
        height,
        xaxis={"title": _title("position"), "zeroline": False},
        yaxis={"title": _title("value"), "zeroline": True},
        hovermode="x unified",
        legend=_TOP_LEGEND,
    )


def position_similarity(table: Any, *, metric: str = "cosine", title: str = "", height: int = 420) -> go.Figure:
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
        matrix, limit, bar_title = unit @ unit.T, 1.0, "cosine similarity"
    elif metric == "dot":
        matrix = values @ values.T
        limit, bar_title = float(np.abs(matrix).max()) or 1.0, "dot product"
    else:
        raise ValueError(f"metric must be 'cosine' or 'dot', got {metric!r}")
    heatmap = go.Heatmap(
        z=matrix.astype(np.float32),
        zmin=-limit,
        zmax=limit,
        colorscale=DIVERGING_COLORSCALE,
        colorbar={"title": {"text": bar_title, "side": "right"}, "thickness": 12},
        hovertemplate="position %{y} · position %{x}<br>%{z:.3f}<extra></extra>",
    )
    return _figure(
        [heatmap],
        title,
        height,
        xaxis={
            "title": _title("position"),
            "showgrid": False,
            "zeroline": False,
            "scaleanchor": "y",
            "constrain": "domain",
        },
        yaxis={"title": _title("position"), "autorange": "reversed", "showgrid": False, "zeroline": False},
    )


# --------------------------------------------------------------------------------------------------------
# Beam search
# --------------------------------------------------------------------------------------------------------


Point = tuple[int, int]  # (x, y) = (step, row) in the beam tree; the start is at (-1, 0)
_ROOT: Point = (-1, 0)


def beam_tree(steps: Sequence[Any], token_label: Callable[[int], str], *, title: str = "") -> go.Figure:
    """The beam-search tree: one node per running beam at (step, rank), an edge from each beam to its parent.

    Args:
        steps: step records like `transformer.decoding.Step`: `.beams` (objects with `.tokens` and `.score`,
            best first), `.parents` (for each beam, its index in the previous step's beams) and, optionally,
            `.finished_beams` (completed hypotheses so far, best first) and `.finished` (decoding is over).
        token_label: maps a token id to its text (plain text; escaped here).

    Running beams are circles at (step, rank), best at the top; the start is a grey node at step -1. A
    hypothesis that finished is a diamond in a row below the running beams, at the step where it ended:
    filled while it is among the finished hypotheses of the last step, hollow if better ones pushed it out.
    The best path is drawn in the accent colour: to the winning hypothesis once decoding is over (`.finished`),
    otherwise to the best running beam.
    """
    steps = list(steps)
    width = max((len(step.beams) for step in steps), default=0)
    edges: list[tuple[Point, Point]] = []
    beams = _Nodes()
    for i, step in enumerate(steps):
        for rank, (beam, parent) in enumerate(zip(step.beams, step.parents, strict=True)):
            edges.append((_ROOT if i == 0 else (i - 1, int(parent)), (i, rank)))
            hover = f"step {i} · beam {rank}<br>{_hypothesis_text(beam.tokens, token_label)}<br>score {beam.score:.3f}"
            beams.add((i, rank), _node_label(beam.tokens, token_label), hover)

    finished, ended = _finished_nodes(steps, width, token_label, edges)
    n_finished_rows = max((y - width + 1 for _, y in ended.values()), default=0)

    start = _Nodes()
    start.add(_ROOT, "start", "start")
    traces = [
        _edge_trace(edges, MUTED, 1.5, "edges"),
        _edge_trace(_best_path(steps, ended), ACCENT, 3.5, "best path"),
        start.trace("start", MUTED),
        beams.trace("beams", BAR_COLOR),
    ]
    if finished.x:
        traces.append(finished.trace("finished", FINISHED_COLOR))

    n_steps = len(steps)
    xaxis, yaxis = _beam_axes(n_steps, width, n_finished_rows)
    divider = {  # a dotted line between the running beams and the finished hypotheses, across the whole width
        "type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": width - 0.5, "y1": width - 0.5,
        "line": {"color": MUTED, "width": 1, "dash": "dot"},
    }  # fmt: skip
    return _figure(
        traces,
        title,
        _clamp(110 + 44 * (width + n_finished_rows), 240, 640),
        xaxis=xaxis,
        yaxis=yaxis,
        shapes=[divider] if n_finished_rows else [],
        showlegend=False,
    )


def _finished_nodes(
    steps: list[Any], width: int, token_label: Callable[[int], str], edges: list[tuple[Point, Point]]
) -> tuple[_Nodes, dict[tuple[int, ...], Point]]:
    """The finished hypotheses, each placed below the `width` beam rows at the step where it first appears among
    the finished ones; their edges are added to `edges`. Also: where each one ended, by its tokens."""
    kept = {tuple(h.tokens) for h in getattr(steps[-1], "finished_beams", ())} if steps else set()
    ended: dict[tuple[int, ...], Point] = {}
    finished = _Nodes()
    for i, step in enumerate(steps):
        for hyp in getattr(step, "finished_beams", ()):
            key = tuple(hyp.tokens)
            if key in ended:
                continue
            node = ended[key] = (i, width + sum(x == i for x, _ in ended.values()))
            parent = _parent_of_finished(steps, i, key)
            if parent is not None:
                edges.append((parent, node))
            status = "finished" if key in kept else "finished, then pushed out by better ones"
            hover = f"{status} at step {i}<br>{_hypothesis_text(key, token_label)}<br>score {hyp.score:.3f}"
            finished.add(node, _node_label(key, token_label), hover, "diamond" if key in kept else "diamond-open")
    return finished, ended


def _beam_axes(n_steps: int, width: int, n_finished_rows: int) -> tuple[dict, dict]:
    """Steps along x (from "start"), beams by rank down y, then a "finished" row for each finished hypothesis."""
    x_ticks = [-1, *range(0, n_steps, max(1, math.ceil(n_steps / 30)))]
    y_ticks = list(range(width + n_finished_rows))
    xaxis = {
        "title": _title("step"),
        "tickvals": x_ticks,
        "ticktext": ["start", *map(str, x_ticks[1:])],
        "range": [-1.6, max(n_steps, 1) - 0.4],
        "showgrid": False,
        "zeroline": False,
    }
    yaxis = {
        "title": _title("beam (best at top)"),
        "autorange": "reversed",
        "tickvals": y_ticks,
        "ticktext": [f"#{r}" if r < width else "finished" for r in y_ticks],
        "zeroline": False,
    }
    return xaxis, yaxis


class _Nodes:
    """Nodes of one kind in the beam tree, collected into one scatter trace."""

    def __init__(self) -> None:
        self.x: list[int] = []
        self.y: list[int] = []
        self.text: list[str] = []
        self.hover: list[str] = []
        self.symbol: list[str] = []

    def add(self, point: Point, text: str, hover: str, symbol: str = "circle") -> None:
        self.x.append(point[0])
        self.y.append(point[1])
        self.text.append(text)
        self.hover.append(hover)
        self.symbol.append(symbol)

    def trace(self, name: str, color: str) -> go.Scatter:
        return go.Scatter(
            x=self.x,
            y=self.y,
            mode="markers+text",
            text=self.text,
            textposition="top center",
            textfont={"size": 11},
            hovertext=self.hover,
            hovertemplate="%{hovertext}<extra></extra>",
            marker={"size": 10, "color": color, "symbol": self.symbol, "line": {"color": color, "width": 1.5}},
            name=name,
        )


def _node_label(tokens: Sequence[int], token_label: Callable[[int], str]) -> str:
    return escape_label(shorten(token_label(tokens[-1]), 12)) if len(tokens) else ""


def _hypothesis_text(tokens: Sequence[int], token_label: Callable[[int], str], last: int = 10) -> str:
    pieces = [escape_label(shorten(token_label(t))) for t in tokens]
    return ("… " if len(pieces) > last else "") + " ".join(pieces[-last:])


def _find_beam(beams: Sequence[Any], tokens: tuple[int, ...]) -> int | None:
    return next((rank for rank, beam in enumerate(beams) if tuple(beam.tokens) == tokens), None)


def _parent_of_finished(steps: list[Any], i: int, tokens: tuple[int, ...]) -> Point | None:
    """The running beam at step i-1 that a hypothesis finished at step i extends (the start for step 0)."""
    if i == 0:
        return _ROOT
    rank = _find_beam(steps[i - 1].beams, tokens[:-1])
    return None if rank is None else (i - 1, rank)


def _best_path(steps: list[Any], ended: dict[tuple[int, ...], Point]) -> list[tuple[Point, Point]]:
    """Edges from the start to the winner (decoding over) or to the best running beam of the last step."""
    if not steps:
        return []
    last = steps[-1]
    finished = getattr(last, "finished_beams", ())
    path: list[tuple[Point, Point]] = []
    if getattr(last, "finished", False) and finished:  # the best finished hypothesis won
        key = tuple(finished[0].tokens)
        parent = _parent_of_finished(steps, ended[key][0], key)
        if parent is None:
            return []
        path.append((parent, ended[key]))
        step, rank = parent
    elif last.beams:
        step, rank = len(steps) - 1, 0
    else:
        return []
    while step >= 0:  # follow the parents back to the start
        parent_rank = int(steps[step].parents[rank])
        path.append((_ROOT if step == 0 else (step - 1, parent_rank), (step, rank)))
        step, rank = step - 1, parent_rank
    return path


def _edge_trace(edges: list[tuple[Point, Point]], color: str, width: float, name: str) -> go.Scatter:
    """All edges as one line trace (segments separated by None)."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for (x0, y0), (x1, y1) in edges:
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    return go.Scatter(x=xs, y=ys, mode="lines", line={"color": color, "width": width}, name=name, hoverinfo="skip")


# --------------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------------

_CHIP_STYLE = (
    "display:inline-block;margin:2px 3px;padding:1px 7px;border-radius:6px;border:1px solid #c9d3e3;"
    "background:#eef3fa;font-family:ui-monospace,monospace;font-size:0.9em;white-space:pre"
)
_SPACE_MARK = '<span class="token-space" style="color:#8a96a8">▁</span>'


def token_chips_html(tokens: Sequence[str], ids: Sequence[int] | None = None) -> str:
    """Sentencepiece pieces as inline chips (`▁`, the word-start marker, in grey); hovering a chip shows its
    position and id. All text is escaped."""
    if ids is not None:
        _check_length(ids, len(tokens), "ids")
    chips = []
    for i, token in enumerate(tokens):
        tip = f"position {i}" + ("" if ids is None else f" · id {operator.index(ids[i])}")
        text = escape_label(token).replace("▁", _SPACE_MARK)
        chips.append(f'<span class="token-chip" title="{escape_label(tip)}" style="{_CHIP_STYLE}">{text}</span>')
    return f'<div class="token-chips" style="line-height:1.9">{"".join(chips)}</div>'
