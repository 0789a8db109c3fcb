"""What every figure shares: the template and colours, escaped labels, input checks, and the `Figure` itself.

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

import html
import io
import operator
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image
from plotly.colors import diverging, sequential
from plotly.io.json import to_json_plotly

from ..i18n import N_, _
from .plotly_internals import with_typed_arrays

# The parts of plotly's "plotly_white" template these figures use. The full template is about 7 KB of JSON in
# every figure sent to the browser, more than the data of a heatmap; this one is a tenth of that.
_AXIS = {"gridcolor": "#EBF0F8", "linecolor": "#EBF0F8", "zerolinecolor": "#EBF0F8", "ticks": "", "automargin": True}
# The page's typeface (ui/fonts.py, served by the app), then Chinese ones from the reader's system (macOS, Windows,
# Linux, Android), then any; an exported PNG uses whichever of them the exporting machine has.
FONT_STACK = (
    "Noto Sans",
    "Noto Sans SC",
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "PingFang SC",
    "Microsoft YaHei",
    "ui-sans-serif",
    "system-ui",
    "sans-serif",
)
FONT_FAMILY = ", ".join(f"'{name}'" if " " in name else name for name in FONT_STACK)  # as CSS and Plotly write it

TEMPLATE = {
    "layout": {
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "font": {"color": "#2a3f5f", "family": FONT_FAMILY},
        "colorway": ["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880"],
        "hovermode": "closest",
        "hoverlabel": {"align": "left"},
        "xaxis": _AXIS,
        "yaxis": _AXIS,
        "coloraxis": {"colorbar": {"outlinewidth": 0, "ticks": ""}},
    }
}


def _scale(colours: Sequence[str]) -> list[list[Any]]:
    """A colour scale as Plotly's JSON writes it: [position, colour] pairs, evenly spaced from 0 to 1."""
    return [[i / (len(colours) - 1), colour] for i, colour in enumerate(colours)]


ATTENTION_COLORSCALE = _scale(sequential.Blues)  # white at 0, dark blue at 1
DIVERGING_COLORSCALE = _scale(diverging.RdBu_r)  # blue below 0, white at 0, red above
BAR_COLOR = "#4c78a8"
ACCENT = "#f58518"  # the chosen candidate, the highlighted query row, the best beam path
FINISHED_COLOR = "#54a24b"
MUTED = "#b0b0b0"

AXIS_TITLES: dict[str, tuple[str, str]] = {  # attention family -> (y title, x title), names as in model.py
    "encoder": (N_("query (source token)"), N_("key (source token)")),
    "decoder_self": (N_("query (target token)"), N_("key (target token)")),
    "cross": (N_("query (target token)"), N_("key (source token)")),
}

MAX_LABEL_CHARS = 24  # longer token labels are shortened with "…" (hover shows the same shortened label)
VALUE_TEXT_MAX = 12  # write the weight in each cell only when both sides have at most this many tokens
GRID_TICK_MAX = 24  # small multiples: tick labels only when a side has at most this many tokens

_TOP_LEGEND = {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"}  # under the title
# The entries a top legend holds on one row in a half-width column (the Positions tab's curves, at 1024 px): a
# fourth wraps to a second row, which the top margin must hold too, or it runs into the title.
_LEGEND_PER_ROW = 3
_NEWLINES = re.compile(r"\r\n?|\n")
_HOVER_ATTENTION = N_("query %{y}<br>key %{x}<br>weight %{z:.3f}")  # Plotly's template: shown as `_(…)`


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
    return _("{marker} (word start)").format(marker=WORD_START) if str(token) == WORD_START else str(token)


def text_width(text: str) -> int:
    """The width of `text` in characters of Latin text: a Chinese (wide) character takes two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


# A label's width in ems of Noto Sans: a Latin character at most 0.62 (lower case and digits are 0.5–0.6, "m" and
# capitals more, and a label has few of those), a wide (Chinese) one 1.
LATIN_EM, WIDE_EM = 0.62, 1.0


def label_width_em(label: str) -> float:
    """The width of a label as Plotly draws it (`html.unescape`d: `&amp;` is one character), in ems."""
    text = html.unescape(label)
    return sum(WIDE_EM if unicodedata.east_asian_width(char) in "WF" else LATIN_EM for char in text)


def with_margins_for(figure: Figure, y_labels: Sequence[str]) -> Figure:
    """`figure` with its left and bottom margins set from its labels instead of measured by Plotly (`automargin`):
    the y axis's tick labels `y_labels` and its title on the left, one line of x tick labels and the x title below.
    Plotly measures every label of an `automargin` axis (a forced layout of the page each) and draws a new plot
    again when the margins change: half the time the browser took for the candidates (docs/benchmark-notes.md)."""
    layout = figure.layout
    size = (layout.font.size if layout.font else None) or 12
    widest = max((label_width_em(label) for label in y_labels), default=0.0)
    margin = layout.setdefault("margin", Props())
    margin["l"] = round(widest * size + 6 + 1.6 * size + 6)  # the labels, their gap, the title (one line) and air
    margin["b"] = round(1.5 * size + 1.6 * size + 8)  # a line of tick labels, the title and air
    layout.xaxis["automargin"] = False
    layout.yaxis["automargin"] = False
    return figure


def axis_labels(tokens: Sequence[object]) -> list[str]:
    """Unique, escaped category labels: `"3 · ▁the"` for the token `▁the` at position 3."""
    return [f"{i} · {escape_label(shorten(readable(token)))}" for i, token in enumerate(tokens)]


def _on_host(values: Any) -> Any:
    """A torch tensor (on any device, with or without grad) brought to the CPU, where NumPy can read it; anything
    else as it is. The figures read the tensors they are given through this: the model may be on a GPU."""
    return values.detach().cpu() if hasattr(values, "detach") else values  # a torch tensor, without importing torch


def _as_array(values: Any, ndim: int | tuple[int, ...], name: str) -> np.ndarray:
    """A float32 numpy array from a numpy array, a list or a torch tensor (on any device, with or without grad)."""
    if hasattr(values, "detach"):  # a torch tensor, without importing torch
        values = _on_host(values).float()  # (NumPy reads no bfloat16)
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
    y_title, x_title = AXIS_TITLES[family]
    return _(y_title), _(x_title)


def _domain(start: float, end: float) -> list[float]:
    """A subplot's domain, rounded into 0 … 1 (plotly rejects -1e-17)."""
    return [round(min(max(start, 0.0), 1.0), 6), round(min(max(end, 0.0), 1.0), 6)]


def _clamp(value: float, low: int, high: int) -> int:
    return int(min(max(value, low), high))


class Props(dict):
    """A dict whose keys also read as attributes, as a Plotly figure's properties do (`figure.layout.title.text`);
    a property that is not set reads as None."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)


def _props(value: Any) -> Any:
    """`value` with every dict in it (at any depth, also in lists) a new `Props`, and every list a new tuple (as
    Plotly's figures read): the figure owns all of its structure, so changing it (`enlarged`) changes no shared
    constant. Arrays are kept."""
    if isinstance(value, dict):
        return Props({key: _props(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_props(item) for item in value)
    return value


class Figure:
    """A Plotly figure as plain data: `data`, a list of traces (`trace`), and `layout`, as in Plotly's JSON.

    Plotly's `graph_objects` check every property of a figure as it is built; for the figures the page draws at every
    step, for every user of a class, that took a tenth of the server's time. These figures are built as plain
    dicts instead, and the tests check that Plotly accepts each one unchanged (`tests/test_figures.py`). The page's
    plots take one as they take a Plotly figure: they call `to_json`.
    """

    def __init__(self, data: Sequence[dict], layout: dict):
        self.data: tuple[Props, ...] = _props(data)
        self.layout: Props = _props(layout)
        # Drawn at its size for the presentation layout already: `enlarged` keeps it as it is.
        self.drawn_for_presentation = False

    def to_dict(self) -> dict[str, Any]:
        """The figure as Plotly's JSON in Python values (a copy), numpy arrays as Plotly's base64 typed arrays."""
        return with_typed_arrays({"data": _props(self.data), "layout": _props(self.layout)})

    def to_json(self) -> str:
        return to_json_plotly(self.to_dict())


def trace(kind: str, **properties: Any) -> dict[str, Any]:
    """A trace of Plotly's `kind` ("heatmap", "bar", "scatter") with `properties`, as Plotly's JSON writes it."""
    return {"type": kind, **properties}


def _figure(data: Sequence[Any], title: str, height: int, *, xaxis: dict, yaxis: dict, **layout: Any) -> Figure:
    """The figure, with the layout every figure shares: template, escaped short title, fixed height, tight
    margins."""
    legend_rows = -(-len(data) // _LEGEND_PER_ROW) if layout.get("legend") is _TOP_LEGEND else 0
    top = (40 if title else 20) + 28 * legend_rows
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
    return Figure(data, {**shared, **layout})


ENLARGED_MIN_HEIGHT = 460  # a heatmap of a few rows keeps a plot taller than its enlarged axis title
ENLARGED_MAX_HEIGHT = 600  # a projector's 768 px hold the whole figure, below the tabs (assets/style.css)
MODEBAR_PX = 34  # Plotly's toolbar, drawn over the figure's top right corner while the pointer is on it
MIN_TICK_FONT = 10


def enlarged(figure: Figure, by: float = 1.4) -> Figure:
    """A copy of `figure` with every text `by` times larger (the presentation layout: readable from the back of a
    room), and as much taller, so that the larger labels leave the plot its room, up to `ENLARGED_MAX_HEIGHT`
    (beyond it, the labels of a long axis are made smaller to fit its rows); the title below Plotly's toolbar.
    A figure drawn for that layout already (`Figure.drawn_for_presentation`) is returned as it is."""
    if figure.drawn_for_presentation:
        return figure
    figure = Figure(figure.data, figure.layout)
    layout = figure.layout
    grow = lambda size, default: round((size or default) * by)  # noqa: E731
    top = layout.margin.t if layout.margin and layout.margin.t else 0
    bars = any(trace.type == "bar" and trace.orientation == "h" for trace in figure.data)  # their rows hold it
    for name, default in (("font", 12), ("title", 14), ("hoverlabel", 12)):
        part = layout.setdefault(name, Props())
        font = part if name == "font" else part.setdefault("font", Props())
        font["size"] = grow(font.size, default)
    if layout.title and layout.title.text:  # the title under the toolbar, not beneath it
        layout.title.update(y=1, yref="container", yanchor="top", pad=Props(t=MODEBAR_PX))
        margin = layout.setdefault("margin", Props())
        extra = (margin.t or 40) - 40  # a legend on top keeps its room
        margin["t"] = MODEBAR_PX + round(layout.title.font.size * 1.4) + 8 + max(extra, 0)
    elif layout.margin and layout.margin.t:
        layout.margin["t"] = round(layout.margin.t * by)
    if layout.height and bars:  # only the title's room grows
        layout["height"] += (layout.margin.t if layout.margin and layout.margin.t else 0) - top
    elif layout.height:
        layout["height"] = min(max(round(layout.height * by), ENLARGED_MIN_HEIGHT), ENLARGED_MAX_HEIGHT)
    for annotation in layout.annotations or []:
        if annotation.font and annotation.font.size:
            annotation.font["size"] = grow(annotation.font.size, 12)
    if layout.xaxis and layout.xaxis.automargin is False and layout.margin:  # margins set from the labels
        layout.margin.update(l=round(layout.margin.l * by), b=round(layout.margin.b * by))
    for name, axis in layout.items():
        if not re.fullmatch(r"[xy]axis\d*", name):
            continue
        if axis.tickfont and axis.tickfont.size:
            axis.tickfont["size"] = grow(axis.tickfont.size, 12)
        if axis.title and axis.title.font and axis.title.font.size:
            axis.title.font["size"] = grow(axis.title.font.size, 12)
    _fit_rows(figure)
    return figure


def _fit_rows(figure: Figure) -> None:
    """A heatmap whose rows are fewer pixels than its enlarged labels are tall gets labels that fit (at least
    `MIN_TICK_FONT`): a capped height would otherwise draw them over each other."""
    layout = figure.layout
    rows = max((len(trace.y) for trace in figure.data if trace.type == "heatmap" and trace.y is not None), default=0)
    if not rows or not layout.height or not layout.yaxis:
        return
    per_row = (layout.height - (layout.margin.t or 0) - 60) / rows  # 60: the x axis's labels and title below
    size = (layout.yaxis.tickfont.size if layout.yaxis.tickfont else None) or layout.font.size
    if per_row < size * 1.15:
        layout.yaxis["tickfont"] = Props(size=max(MIN_TICK_FONT, int(per_row / 1.15)))


def _title(text: str) -> dict[str, str]:
    return {"text": text}


def _colour_table(colorscale: Sequence[tuple[float, str]], n: int = 256) -> np.ndarray:
    """(n, 3) uint8 colours along a plotly colour scale of [position, "rgb(r,g,b)"] stops, from 0 to 1."""
    stops = np.array([[int(v) for v in re.findall(r"\d+", colour)] for _at, colour in colorscale], dtype=np.float64)
    at = np.array([position for position, _colour in colorscale], dtype=np.float64)
    return np.stack([np.interp(np.linspace(0, 1, n), at, stops[:, c]) for c in range(3)], axis=1).astype(np.uint8)


def _png(rgb: np.ndarray) -> bytes:
    """An (H, W, 3) uint8 image as PNG bytes (fast compression: these are made at every step)."""
    buffer = io.BytesIO()
    Image.fromarray(rgb.astype(np.uint8)).save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()
