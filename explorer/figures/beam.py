"""The beam search tree: the hypotheses the beam kept and dropped, a column a step, and the best path."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..i18n import _
from .base import (
    ACCENT,
    BAR_COLOR,
    FINISHED_COLOR,
    MUTED,
    Figure,
    _clamp,
    _figure,
    _title,
    escape_label,
    shorten,
    trace,
)

Point = tuple[int, int]  # (x, y) = (step, row) in the beam tree; the start is at (-1, 0)
_ROOT: Point = (-1, 0)


def beam_tree(steps: Sequence[Any], token_label: Callable[[int], str], *, title: str = "") -> Figure:
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
            hover = _("step {step} · beam {rank}<br>{hypothesis}<br>score {score:.3f}").format(
                step=i, rank=rank, hypothesis=_hypothesis_text(beam.tokens, token_label), score=beam.score
            )
            beams.add((i, rank), _node_label(beam.tokens, token_label), hover)

    finished, ended = _finished_nodes(steps, width, token_label, edges)
    n_finished_rows = max((y - width + 1 for _step, y in ended.values()), default=0)

    start = _Nodes()
    start.add(_ROOT, _("start"), _("start"))
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
    # A dotted line between the running beams and the finished hypotheses, across the whole width.
    across = {"xref": "x domain", "x0": 0, "x1": 1}
    below_the_beams = {"yref": "y", "y0": width - 0.5, "y1": width - 0.5}
    divider = {"type": "line", **across, **below_the_beams, "line": {"color": MUTED, "width": 1, "dash": "dot"}}
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
            node = ended[key] = (i, width + sum(x == i for x, _row in ended.values()))
            parent = _parent_of_finished(steps, i, key)
            if parent is not None:
                edges.append((parent, node))
            if key in kept:
                hover = _("finished at step {step}<br>{hypothesis}<br>score {score:.3f}")
            else:
                hover = _(
                    "finished, then pushed out by better ones at step {step}<br>{hypothesis}<br>score {score:.3f}"
                )
            hover = hover.format(step=i, hypothesis=_hypothesis_text(key, token_label), score=hyp.score)
            finished.add(node, _node_label(key, token_label), hover, "diamond" if key in kept else "diamond-open")
    return finished, ended


def _beam_axes(n_steps: int, width: int, n_finished_rows: int) -> tuple[dict, dict]:
    """Steps along x (from "start"), beams by rank down y, then a "finished" row for each finished hypothesis."""
    x_ticks = [-1, *range(0, n_steps, max(1, math.ceil(n_steps / 30)))]
    y_ticks = list(range(width + n_finished_rows))
    xaxis = {
        "title": _title(_("step")),
        "tickvals": x_ticks,
        "ticktext": [_("start"), *map(str, x_ticks[1:])],
        "range": [-1.6, max(n_steps, 1) - 0.4],
        "showgrid": False,
        "zeroline": False,
    }
    yaxis = {
        "title": _title(_("beam (best at top)")),
        "autorange": "reversed",
        "tickvals": y_ticks,
        "ticktext": [f"#{r}" if r < width else _("finished") for r in y_ticks],
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

    def trace(self, name: str, color: str) -> dict:
        return trace(
            "scatter",
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


def _edge_trace(edges: list[tuple[Point, Point]], color: str, width: float, name: str) -> dict:
    """All edges as one line trace (segments separated by None)."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for (x0, y0), (x1, y1) in edges:
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    return trace(
        "scatter", x=xs, y=ys, mode="lines", line={"color": color, "width": width}, name=name, hoverinfo="skip"
    )
