"""Attention as figures: one map as a heatmap, every head of a layer as a grid, the three families side by side,
cross-attention as alignment lines, and every layer and head at once as thumbnails (small PNG images)."""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..i18n import _
from .base import (
    _HOVER_ATTENTION,
    ACCENT,
    ATTENTION_COLORSCALE,
    BAR_COLOR,
    GRID_TICK_MAX,
    VALUE_TEXT_MAX,
    WORD_START,
    Figure,
    Props,
    _as_array,
    _axis_titles,
    _check_length,
    _clamp,
    _colour_table,
    _domain,
    _figure,
    _on_host,
    _png,
    _row_index,
    _title,
    axis_labels,
    escape_label,
    readable,
    shorten,
    text_width,
    trace,
)


def attention_coloraxis() -> dict[str, Any]:
    """The colour axis every attention panel shares: heads, layers and steps are comparable."""
    return {
        "colorscale": ATTENTION_COLORSCALE,
        "cmin": 0.0,
        "cmax": 1.0,
        # the title along the bar's side: above it, it touched the "1.0" label
        "colorbar": {"title": {"text": _("weight"), "side": "right"}, "thickness": 12, "tickformat": ".1f"},
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
) -> Figure:
    """One attention matrix (one head, or an average of heads) as a heatmap.

    Args:
        weights: (Q, K) attention weights after softmax (rows sum to 1).
        query_tokens, key_tokens: Q and K token strings (plain text; escaped and made unique here).
        title: plain text.
        highlight_query: a query row to outline (the token of the current decoding step); negative counts from the end.
        family: "encoder", "decoder_self" or "cross": picks the axis titles (`AXIS_TITLES`).
        show_values: write each weight in its cell; by default only when Q and K are both at most 12.
        height: in pixels; by default it grows with Q between 250 and 720 (at 250 the y axis title of a single
            row stays below the figure's title).
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
    heatmap = trace(
        "heatmap",
        z=z,
        x=x,
        y=y,
        coloraxis="coloraxis",
        hovertemplate=_(_HOVER_ATTENTION) + "<extra></extra>",
        hoverongaps=False,  # a masked cell's hover is the grey layer's
        texttemplate="%{z:.2f}" if show_values else None,
        textfont={"size": 10} if show_values else None,
    )
    return _figure(
        [*traces, heatmap],
        title,
        height or _clamp(110 + 20 * n_q, 250, 720),
        xaxis={"title": _title(x_title), "type": "category", "showgrid": False},
        yaxis={"title": _title(y_title), "autorange": "reversed", "type": "category", "showgrid": False},
        coloraxis=attention_coloraxis(),
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
    cells = np.asarray(_on_host(masked), dtype=bool)
    if cells.shape != tuple(shape):
        raise ValueError(f"masked: expected shape {tuple(shape)}, got {cells.shape}")
    return cells if cells.any() else None


def _masked_cells(cells: np.ndarray, x: list[str], y: list[str]) -> dict:
    """A grey layer on the masked cells only (the rest is a gap), with its own hover text."""
    return trace(
        "heatmap",
        z=np.where(cells, 1.0, np.nan),
        x=x,
        y=y,
        colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
        showscale=False,
        hoverongaps=False,
        hovertemplate=_("query %{y}<br>key %{x}<br>masked: not allowed to attend") + "<extra></extra>",
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
        x_domain, y_domain = _domain(x0, x0 + self.width), _domain(top - self.height, top)
        x_ticks, y_ticks = self.is_bottom(p) and show_x, self.is_left(p) and show_y
        x_axis = {"domain": x_domain, "anchor": y_name, **common, "showticklabels": x_ticks}
        y_axis = {"domain": y_domain, "anchor": x_name, **common, "autorange": "reversed", "showticklabels": y_ticks}
        return x_axis, y_axis

    def title(self, p: int, text: str) -> dict:
        """Panel `p`'s title, centred above it."""
        x0, top = self.corner(p)
        return _panel_title(text, x0 + self.width / 2, top, size=11)


def _panel_title(text: str, x: float, y: float, *, size: int) -> dict:
    """A panel's title, centred on `x` and standing on `y` (fractions of the plotting area)."""
    place = {"x": x, "y": y, "xref": "paper", "yref": "paper"}
    return {"text": text, **place, "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": size}}


def _axis_title(text: str) -> dict:
    """An axis title of a panel among others, in small type."""
    return {"text": text, "font": {"size": 11}}


def _axis_names(p: int) -> tuple[str, str]:
    """Panel `p`'s x and y axes as its traces name them: "x", "y" for the first, then "x2", "y2", …"""
    number = str(p + 1) if p else ""
    return f"x{number}", f"y{number}"


def _panel_traces(z: Any, x: list[str], y: list[str], cells: np.ndarray | None, p: int, name: str) -> list[dict]:
    """Panel `p`'s heatmap, under the grey layer of its masked `cells` (None: nothing masked); `name`, the panel's
    title, shows in the hover's side box."""
    x_name, y_name = _axis_names(p)
    on_axes = {"xaxis": x_name, "yaxis": y_name}
    masked = [] if cells is None else [{**_masked_cells(cells, x, y), **on_axes}]
    hover = {"name": name, "hovertemplate": _(_HOVER_ATTENTION), "hoverongaps": False}
    return [*masked, trace("heatmap", z=z, x=x, y=y, **on_axes, coloraxis="coloraxis", **hover)]


def _panels_figure(traces: list, title: str, height: int, axes: dict[str, dict], **layout: Any) -> Figure:
    """A figure of several attention panels: `axes` holds every panel's axes ("xaxis", "yaxis", "xaxis2", …), and
    the panels share the 0–1 colour axis of the attention maps."""
    axes = dict(axes)
    first_x, first_y = axes.pop("xaxis"), axes.pop("yaxis")
    shared = {"xaxis": first_x, "yaxis": first_y, "coloraxis": attention_coloraxis()}
    return _figure(traces, title, height, **shared, **axes, **layout)


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
) -> Figure:
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
        short = _("L{layer} H{head}")
        default_titles = [short.format(layer=layer, head=head) for layer in range(n_layers) for head in range(n_heads)]
        n_cols = n_heads
        z = z.reshape(n_layers * n_heads, *z.shape[2:])
    else:
        default_titles = [_("head {head}").format(head=head) for head in range(z.shape[0])]
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
        x_name, y_name = _axis_names(p)
        traces += _panel_traces(z[p], x_labels, y_labels, cells, p, escape_label(titles[p]))
        x_axis, y_axis = grid.axes(p, x_name, y_name, show_x=n_k <= GRID_TICK_MAX, show_y=n_q <= GRID_TICK_MAX)
        layout["xaxis" + x_name[1:]], layout["yaxis" + y_name[1:]] = x_axis, y_axis
        if p == 0:  # the axis titles once: top left and bottom left
            y_axis["title"] = _axis_title(y_title)
        if grid.is_left(p) and grid.is_bottom(p):
            x_axis["title"] = _axis_title(x_title)
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


SIDE_BY_SIDE_PX = 720  # the views' column beside the controls at 1400 px (560 at 1024: the labels are cut to fit)
BETWEEN_LABEL_CHARS = 12  # a tick label between two side-by-side maps, at most (with its position's number)


def short_axis_labels(tokens: Sequence[object], limit: int = BETWEEN_LABEL_CHARS) -> list[str]:
    """`axis_labels` of at most `limit` characters, their tokens cut with "…" (before escaping: never in an entity)."""
    labels = []
    for i, token in enumerate(tokens):
        number = f"{i} · "
        labels.append(number + escape_label(shorten(readable(token), max(2, limit - len(number)))))
    return labels


def attention_side_by_side(maps: Sequence[AttentionMap], *, title: str = "", height: int | None = None) -> Figure:
    """Attention matrices side by side, each with its own tokens, on one shared 0–1 colour axis: for example the
    three families of one layer, which change together at every step."""
    if not maps:
        raise ValueError("no attention maps to draw")
    # Between two maps: room for the right one's y tick labels and title (at about 6.5 px a character, in the views'
    # column, about `SIDE_BY_SIDE_PX` wide), which plotly's automargin makes only on the left of the whole figure.
    # The labels of the maps after the first are cut to `BETWEEN_LABEL_CHARS` (hover names them whole): a long
    # piece's label ran over the heatmap on its left.
    longest = max(
        (text_width(shorten(label, BETWEEN_LABEL_CHARS)) for m in maps[1:] for label in axis_labels(m.query_tokens)),
        default=0,
    )
    gap = min(0.24, (40 + 6.5 * longest) / SIDE_BY_SIDE_PX)
    width = (1 - gap * (len(maps) - 1)) / len(maps)
    traces, layout, shapes, annotations = [], {}, [], []
    tallest = 0
    for p, m in enumerate(maps):
        z = _as_array(m.weights, 2, "weights")
        n_q, n_k = z.shape
        _check_length(m.query_tokens, n_q, "query_tokens")
        _check_length(m.key_tokens, n_k, "key_tokens")
        tallest = max(tallest, n_q)
        x_name, y_name = _axis_names(p)
        x, y = axis_labels(m.key_tokens), axis_labels(m.query_tokens)
        z, cells = _without_masked(z, m.masked)
        traces += _panel_traces(z, x, y, cells, p, escape_label(m.title))
        y_title, x_title = _axis_titles(m.family)
        x0 = p * (width + gap)
        common = {"type": "category", "showgrid": False, "automargin": True, "tickfont": {"size": 10}}
        x_axis = {**common, "domain": _domain(x0, x0 + width), "anchor": y_name, "title": _axis_title(x_title)}
        y_axis = {**common, "domain": [0, 1], "anchor": x_name, "autorange": "reversed", "title": _axis_title(y_title)}
        if p > 0:  # between two maps: short tick labels (the categories, and so hover, keep the whole label)
            y_axis |= {"tickmode": "array", "tickvals": y, "ticktext": short_axis_labels(m.query_tokens)}
        layout["xaxis" + x_name[1:]], layout["yaxis" + y_name[1:]] = x_axis, y_axis
        annotations.append(_panel_title(escape_label(m.title), x0 + width / 2, 1, size=12))
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
    max_labels: int | None = None,
) -> Figure:
    """Cross-attention as an alignment: the source sentence on top, the translation below, and a line from each
    target piece to every source piece its query attended to, thicker and darker for more weight (under 0.05:
    no line). The pieces are named along the top and the bottom, side by side or, when they do not fit, upright;
    a long row names only some of its pieces (`_thinned`), and hover names every one.

    Args:
        weights: (T, S) cross-attention weights of one head or a head average.
        written_tokens: T pieces, the piece each query row *wrote*: row t reads piece t and predicts piece t + 1,
            so the lines of row t belong to piece t + 1 (the shift by one).
        source_tokens: S source pieces.
        read_tokens: T pieces, the piece each row read (the decoder's input), named on hover.
        current: the row choosing the next piece now, drawn in the accent colour.
        max_labels: the most pieces named along a row (by default `ALIGNMENT_MAX_LABELS`; fewer for larger type).
    """
    most = max_labels or ALIGNMENT_MAX_LABELS
    z = _as_array(weights, 2, "weights")
    n_t, n_s = z.shape
    _check_length(written_tokens, n_t, "written_tokens")
    _check_length(source_tokens, n_s, "source_tokens")
    read = list(read_tokens) if read_tokens is not None else [""] * n_t
    _check_length(read, n_t, "read_tokens")
    row = _row_index(current, n_t, "current")
    xs, xt = _spread(n_s), _spread(n_t)

    traces = _line_traces(z, row, xt, xs)

    def hover(t: int) -> str:
        top = np.argsort(-z[t])[:3]
        looks = "<br>".join(f"{escape_label(shorten(readable(source_tokens[s])))}: {z[t, s]:.2f}" for s in top)
        wrote = escape_label(shorten(readable(written_tokens[t])))
        if read[t]:
            text = _("wrote {written} (its query read {read})<br>looked at:<br>{weights}")
            return text.format(written=wrote, read=escape_label(shorten(readable(read[t]))), weights=looks)
        return _("wrote {written}<br>looked at:<br>{weights}").format(written=wrote, weights=looks)

    labels = [escape_label(shorten(readable(token), ALIGNMENT_LABEL_CHARS)) for token in written_tokens]
    sources = [escape_label(shorten(readable(token), ALIGNMENT_LABEL_CHARS)) for token in source_tokens]
    colors = [ACCENT if t == row else BAR_COLOR for t in range(n_t)]
    source_hover = [_("source {piece}").format(piece=s) for s in sources]
    traces.append(_token_row(xs, 1, [BAR_COLOR] * n_s, source_hover, "x2"))
    traces.append(_token_row(xt, 0, colors, [hover(t) for t in range(n_t)], "x"))
    figure = _figure(
        traces,
        title,
        height + _upright_room(sources, most) + _upright_room(labels, most),
        xaxis=_token_axis(xt, _thinned(labels, most, newest_first=True), "bottom"),
        xaxis2={**_token_axis(xs, _thinned(sources, most), "top"), "overlaying": "x", "matches": "x"},
        yaxis={"visible": False, "range": [-0.06, 1.06], "fixedrange": True},
        showlegend=False,
    )
    return title_above_names(figure)


def _line_traces(z: np.ndarray, current: int | None, xt: np.ndarray, xs: np.ndarray) -> list[dict]:
    """The alignment's lines, from each target piece (at `xt`, below) to the source pieces (at `xs`, above) its
    row of `z` attended to: one trace for each weight bin (`_LINE_BINS`) and colour (the row `current` in the
    accent), so that a few traces draw them all."""
    traces = []
    for which in ("other", "current"):
        rows = [t for t in range(len(z)) if (t == current) == (which == "current")]
        for b, (low, width, alpha) in enumerate(_LINE_BINS):
            high = _LINE_BINS[b + 1][0] if b + 1 < len(_LINE_BINS) else 1.01
            x, y = [], []
            for t in rows:
                for s in np.flatnonzero((z[t] >= low) & (z[t] < high)):
                    x += [xt[t], xs[s], None]
                    y += [0, 1, None]
            if x:
                line = {"width": width, "color": f"rgba({_LINE_RGB[which]},{alpha})"}
                traces.append(trace("scatter", x=x, y=y, mode="lines", line=line, hoverinfo="skip", showlegend=False))
    return traces


def title_above_names(figure: Figure, pad: int = 6) -> Figure:
    """`figure` (an alignment) with its title in a room of its own above the source's names, however tall they
    stand, `pad` pixels below the figure's top: Plotly adds the room a title needs to the room the top axis needs
    only when the title needs more than the figure's top margin, so the margin is small and the title pushes it."""
    figure.layout.title.update(yref="container", y=1, yanchor="top", automargin=True, pad=Props(t=pad, b=8))
    figure.layout.margin["t"] = 10
    return figure


# The alignment's token labels: at most this many characters, and at most `ALIGNMENT_MAX_LABELS` along a row (when
# there are more pieces, some go unnamed, `_thinned`; hover names every piece); too many for a row to hold side by
# side, they stand upright (plotly's automatic tick angle, chosen in the browser, which knows the width).
ALIGNMENT_LABEL_CHARS = 14
ALIGNMENT_MAX_LABELS = 36  # upright, a label of 12 px type is 17 px wide: 36 fit in a plot 620 px wide
_CHAR_PX = 7  # about the width of a character of 12 px type
_ROW_OF_LABELS_PX = 700  # wider than this (the plot beside the page's controls), a row of labels likely stands upright


def _spread(n: int) -> np.ndarray:
    """`n` evenly spaced positions across 0 … 1 (one token: the middle)."""
    return np.array([0.5]) if n == 1 else np.linspace(0.0, 1.0, n)


def _upright_room(labels: list[str], most: int) -> int:
    """The pixels a row of these labels takes beyond a horizontal row's, when it likely stands upright (the figure
    grows by as much, so that its lines keep their room)."""
    widths = [_CHAR_PX * text_width(html.unescape(label)) for label in _thinned(labels, most).values()]
    if sum(width + 12 for width in widths) <= _ROW_OF_LABELS_PX:
        return 0
    return max(0, max(widths) - 20)


def _thinned(labels: list[str], most: int, *, newest_first: bool = False) -> dict[int, str]:
    """The labels to write along a row, by position: all of them, or, when there are more than `most`, labels at
    least k pieces apart (k = n / `most`, rounded up): from the first piece (the last when `newest_first`: the
    piece being chosen keeps its name), each next one the first piece that starts a word (`▁`) k to 2k - 1 pieces
    on, or else the piece k on. Hover names every piece."""
    n = len(labels)
    k = math.ceil(n / max(most, 1))
    if k <= 1:
        return dict(enumerate(labels))
    order = list(range(n - 1, -1, -1)) if newest_first else list(range(n))
    at, picked = 0, [order[0]]
    while at + k < n:
        at = next((j for j in range(at + k, min(at + 2 * k, n)) if labels[order[j]].startswith(WORD_START)), at + k)
        picked.append(order[at])
    return {i: labels[i] for i in sorted(picked)}


def _token_axis(x: np.ndarray, shown: dict[int, str], side: str) -> dict[str, Any]:
    """An x axis naming the pieces `shown` (labels by position) of one row at their places, side by side when they
    fit and upright when they do not."""
    bare = {"showgrid": False, "zeroline": False, "showline": False, "ticks": ""}
    names = {"tickmode": "array", "tickvals": [float(x[i]) for i in shown], "ticktext": list(shown.values())}
    fitted = {"tickfont": {"size": 12}, "autotickangles": [0, -90], "ticklabeloverflow": "allow"}  # or else upright
    return {"side": side, "range": [-0.04, 1.04], "fixedrange": True, **bare, **names, **fitted}


def _token_row(x: np.ndarray, y: float, colors: list[str], hover: list[str], axis: str):
    """A row of tokens (markers, named by the axis along that side) at height `y`."""
    markers = {"mode": "markers", "marker": {"size": 9, "color": colors}}
    return trace("scatter", x=x, y=[y] * len(x), **markers, hovertext=hover, hoverinfo="text", xaxis=axis, yaxis="y")


_ATTENTION_RGB = _colour_table(ATTENTION_COLORSCALE)
_MASKED_RGB = np.array([0xD9, 0xD9, 0xD9], dtype=np.uint8)
_ACCENT_RGB = np.array([0xF5, 0x85, 0x18], dtype=np.uint8)
THUMBNAIL_PX = 96  # the longer side of a thumbnail's image, before the page scales it


def _weights_rgb(z: np.ndarray) -> np.ndarray:
    """Attention weights (0–1, NaN as 0) -> (…, 3) colours of the heatmaps' scale."""
    return _ATTENTION_RGB[np.clip(np.rint(np.nan_to_num(z) * 255), 0, 255).astype(np.int64)]


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
    what: str | None = None,
) -> str:
    """Every layer × head of one attention family as a grid of thumbnails, one row per layer (like BertViz's
    model view). Each is a button carrying `data-layer` and `data-head`, so a click can open it large;
    `selected` (layer, head) is outlined. `what` names the family in the tooltips (plain text; by default
    "attention")."""
    z = _as_array(weights, 4, "weights")
    n_layers, n_heads = z.shape[:2]
    what = _("attention") if what is None else what
    every = html.escape(_("{family}: every layer and head").format(family=what))
    grid = f'<div class="thumbs" style="--heads: {n_heads}" role="group" aria-label="{every}">'
    named = _("head {head}")
    head_names = [f'<span class="thumbs-head">{html.escape(named.format(head=h))}</span>' for h in range(n_heads)]
    parts = [grid, "<span></span>", *head_names]  # the corner above the layers' names, then a head a column
    layer_name, tip = _("layer {layer}"), _("{family}, layer {layer}, head {head}: open it large")
    for layer in range(n_layers):
        parts.append(f'<span class="thumbs-layer">{html.escape(layer_name.format(layer=layer))}</span>')
        for head in range(n_heads):
            png = base64.b64encode(thumbnail_png(z[layer, head], masked=masked, highlight_query=highlight_query))
            chosen = " selected" if selected == (layer, head) else ""
            label = html.escape(tip.format(family=what, layer=layer, head=head))
            parts.append(
                f'<button class="thumb{chosen}" data-layer="{layer}" data-head="{head}" title="{label}" '
                f'aria-label="{label}"><img alt="" src="data:image/png;base64,{png.decode()}"></button>'
            )
    parts.append("</div>")
    return "".join(parts)
