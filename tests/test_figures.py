"""Figures: data shapes, labels, orientation, the shared 0–1 colour axis, escaping of user text, JSON size; drawn
from a model on each device present for the tests that take `device` (conftest.py)."""

from __future__ import annotations

import base64
import itertools
import json
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from explorer import figures
from explorer.stages import Block
from tests.conftest import Elsewhere, tiny_model
from transformer.decoding import BeamSearch, Decoding
from transformer.model import sinusoidal_position_encoding

MALICIOUS = ["<img src=x onerror=alert(1)>", '<a href="javascript:alert(1)">x</a>', "<b>"]
OUR_MARKUP = re.compile(r"<br>|<extra>|</extra>")  # the only tags the figures write themselves, in templates


def attention(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random rows that sum to one, like softmax output."""
    logits = np.random.default_rng(seed).normal(size=shape) * 2
    weights = np.exp(logits)
    return (weights / weights.sum(-1, keepdims=True)).astype(np.float32)


def figure_strings(fig) -> list[str]:
    """Every string in the figure as the browser receives it (decoded JSON), without plotly's own template.

    Decoding matters: `fig.to_json()` writes `<` as `\\u003c`, so searching the raw JSON for `<` proves nothing.
    """
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    spec = json.loads(fig.to_json())
    spec["layout"].pop("template", None)
    walk(spec)
    return found


def assert_inert(fig) -> None:
    strings = figure_strings(fig)
    leftovers = [s for s in strings if "<" in OUR_MARKUP.sub("", s)]
    assert leftovers == []
    text = "\n".join(strings)
    for shown in ("&lt;img src=x", "&lt;a href=&#34;javascript:", "&lt;b&gt;"):  # kept as text (maybe shortened)
        assert shown in text


def json_size(fig) -> int:
    return len(fig.to_json().encode())


# --------------------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------------------


def test_escape_label_makes_markup_inert_and_keeps_the_text():
    assert figures.escape_label("<b>bold</b>") == "&lt;b&gt;bold&lt;/b&gt;"
    assert figures.escape_label("a & \"b\" 'c'") == "a &amp; &#34;b&#34; &#39;c&#39;"  # plotly decodes numeric ones
    assert figures.escape_label("▁the") == "▁the"
    assert figures.escape_label("two\nlines\r\n") == "two↵lines↵"  # plotly would turn a newline into a break
    assert figures.escape_label(7) == "7"


def test_axis_labels_are_unique_positioned_and_escaped():
    labels = figures.axis_labels(["▁the", "▁cat", "▁the", "<b>", "x" * 40])
    assert labels[:4] == ["0 · ▁the", "1 · ▁cat", "2 · ▁the", "3 · &lt;b&gt;"]
    assert labels[4] == "4 · " + "x" * 23 + "…"
    assert len(set(labels)) == len(labels)


# --------------------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------------------

SOURCE = ["▁the", "▁cat", "▁saw", "▁the", "▁dog", "</s>"]
TARGET = ["<s>", "▁die", "▁Katze", "▁sah", "▁die"]


def test_attention_heatmap_rows_are_queries_from_the_top():
    weights = attention((5, 6))
    fig = figures.attention_heatmap(weights, TARGET, SOURCE, title="cross")
    (trace,) = fig.data
    assert trace.type == "heatmap"
    assert trace.z.shape == (5, 6) and trace.z.dtype == np.float32
    np.testing.assert_array_equal(trace.z[0], weights[0])  # row 0 of the data is query 0 ...
    assert fig.layout.yaxis.autorange == "reversed"  # ... and is drawn at the top
    assert list(trace.y) == ["0 · &lt;s&gt;", "1 · ▁die", "2 · ▁Katze", "3 · ▁sah", "4 · ▁die"]
    assert list(trace.x)[:4] == ["0 · ▁the", "1 · ▁cat", "2 · ▁saw", "3 · ▁the"]  # repeated tokens stay apart
    assert len(set(trace.x)) == 6 and len(set(trace.y)) == 5
    assert fig.layout.yaxis.title.text == "query (target token)"
    assert fig.layout.xaxis.title.text == "key (source token)"
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "category"
    assert {"%{y}", "%{x}", "%{z:.3f}"} <= set(re.findall(r"%\{[^}]*\}", trace.hovertemplate))
    assert fig.layout.title.text == "cross"


def test_attention_heatmap_uses_the_fixed_zero_to_one_colour_axis():
    fig = figures.attention_heatmap(attention((3, 3)) * 0.2, ["a", "b", "c"], ["a", "b", "c"])
    assert fig.data[0].coloraxis == "coloraxis"
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)  # not rescaled to the data


@pytest.mark.parametrize(
    ("family", "y_title", "x_title"),
    [
        ("encoder", "query (source token)", "key (source token)"),
        ("decoder_self", "query (target token)", "key (target token)"),
        ("cross", "query (target token)", "key (source token)"),
    ],
)
def test_attention_axis_titles_follow_the_family(family, y_title, x_title):
    fig = figures.attention_heatmap(attention((2, 2)), ["a", "b"], ["c", "d"], family=family)
    assert (fig.layout.yaxis.title.text, fig.layout.xaxis.title.text) == (y_title, x_title)


def test_attention_heatmap_outlines_the_highlighted_query_row():
    fig = figures.attention_heatmap(attention((5, 6)), TARGET, SOURCE, highlight_query=3)
    (shape,) = fig.layout.shapes
    assert (shape.type, shape.y0, shape.y1) == ("rect", 2.5, 3.5)  # row 3 of the categories
    assert (shape.x0, shape.x1) == (-0.5, 5.5)  # across all keys
    last = figures.attention_heatmap(attention((5, 6)), TARGET, SOURCE, highlight_query=-1).layout.shapes[0]
    assert (last.y0, last.y1) == (3.5, 4.5)
    assert figures.attention_heatmap(attention((5, 6)), TARGET, SOURCE).layout.shapes == ()
    with pytest.raises(ValueError, match="out of range"):
        figures.attention_heatmap(attention((5, 6)), TARGET, SOURCE, highlight_query=5)


def test_attention_heatmap_writes_values_only_in_small_matrices():
    small = figures.attention_heatmap(attention((12, 12)), ["t"] * 12, ["s"] * 12)
    big = figures.attention_heatmap(attention((13, 13)), ["t"] * 13, ["s"] * 13)
    assert small.data[0].texttemplate == "%{z:.2f}"
    assert big.data[0].texttemplate is None and big.data[0].text is None and big.data[0].customdata is None


def test_attention_heatmap_rejects_mismatched_labels_and_unknown_families():
    with pytest.raises(ValueError, match="unknown attention family 'self'"):
        figures.attention_heatmap(attention((5, 6)), TARGET, SOURCE, family="self")
    with pytest.raises(ValueError, match="key_tokens: expected 6 labels, got 5"):
        figures.attention_heatmap(attention((5, 6)), TARGET, SOURCE[:5])
    with pytest.raises(ValueError, match="2-D"):
        figures.attention_heatmap(attention((2, 5, 6)), TARGET, SOURCE)


def test_attention_heatmap_accepts_a_torch_tensor_with_grad():
    weights = torch.tensor(attention((5, 6)), dtype=torch.float64, requires_grad=True)
    trace = figures.attention_heatmap(weights, TARGET, SOURCE).data[0]
    assert trace.z.dtype == np.float32
    np.testing.assert_allclose(trace.z, weights.detach().numpy(), atol=1e-7)


def test_figures_read_the_tensors_of_a_model_on_the_device_back_to_the_cpu(device):
    """The attention maps and the positional encodings of a model on the device go into the figures as they come
    out of the model: each figure reads its tensor back to the CPU."""
    model = tiny_model(seed=3).to(device)
    src, tgt = (torch.tensor([ids], device=device) for ids in ([5, 6, 7, 8, 9, 2], [1, 10, 11, 12, 13]))
    with torch.no_grad():
        cross = model(src, tgt, return_attention=True).attention.cross[1][0]  # (H, T, S), on the device
        table = model.src_embed.positions(12)  # (P, d), on the device
    on_cpu = cross.cpu().numpy()
    np.testing.assert_array_equal(figures.attention_heatmap(cross[0], TARGET, SOURCE).data[0].z, on_cpu[0])
    grid = figures.attention_grid(cross, TARGET, SOURCE, family="cross", highlight_query=-1)
    assert all(np.array_equal(trace.z, on_cpu[h]) for h, trace in enumerate(grid.data))
    assert figures.thumbnail_png(cross[1], highlight_query=2).startswith(b"\x89PNG")
    np.testing.assert_array_equal(figures.positional_heatmap(table).data[0].z, table.cpu().numpy())
    assert len(figures.positional_curves(table, [0, 3]).data) == 2 and figures.position_similarity(table).data


def test_figures_bring_their_tensors_and_masks_to_the_cpu_before_numpy_reads_them():
    """As a GPU's: `Elsewhere` tensors (conftest.py), which NumPy refuses to read, as weights, tables and masks."""
    weights = torch.tensor(attention((2, 5, 6))).as_subclass(Elsewhere)
    masked = (torch.arange(6) > torch.arange(5)[:, None]).as_subclass(Elsewhere)  # (5, 6): a causal band
    with pytest.raises(TypeError, match="another device"):
        np.asarray(masked)
    heatmap = figures.attention_heatmap(weights[0], TARGET, SOURCE, masked=masked)
    assert np.isnan(heatmap.data[-1].z[0, 5]) and heatmap.data[-1].z[4, 0] == weights[0, 4, 0].item()
    assert len(figures.attention_grid(weights, TARGET, SOURCE, masked=masked).data) == 4  # a grey layer per head
    assert figures.thumbnail_png(weights[1], masked=masked).startswith(b"\x89PNG")
    bars = figures.TensorPanel("scores", weights[0, 0], kind="bars", x_labels=SOURCE, masked=masked[0])
    page = figures.tensor_panels_html([bars, figures.TensorPanel("weights", weights[1])])
    assert page.count("−∞ (masked)") == 5 and page.count('data-value="-inf"') == 5
    assert figures.positional_heatmap(weights[0]).data[0].z.shape == (5, 6)


def test_attention_grid_has_one_panel_per_head_on_one_colour_axis():
    weights = attention((6, 5, 6))
    fig = figures.attention_grid(weights, TARGET, SOURCE, title="layer 0", highlight_query=1)
    assert len(fig.data) == 6
    assert [a.text for a in fig.layout.annotations] == [f"head {h}" for h in range(6)]
    for h, trace in enumerate(fig.data):
        np.testing.assert_array_equal(trace.z, weights[h])
        assert trace.coloraxis == "coloraxis"
        assert trace.colorscale is None and trace.zmin is None  # no per-panel colour scaling
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    # 4 columns: heads 0-3 in the first row, 4-5 in the second
    rows = {trace.yaxis for trace in fig.data}
    assert len(rows) == 6  # one pair of axes per panel
    y_axes = [fig.layout[trace.yaxis.replace("y", "yaxis")] for trace in fig.data]
    x_axes = [fig.layout[trace.xaxis.replace("x", "xaxis")] for trace in fig.data]
    assert all(axis.autorange == "reversed" for axis in y_axes)
    assert [axis.showticklabels for axis in y_axes] == [True, False, False, False, True, False]  # left column
    assert [axis.showticklabels for axis in x_axes] == [False, False, True, True, True, True]  # nothing below
    assert y_axes[0].title.text == "query (target token)"
    assert x_axes[4].title.text == "key (source token)"


def test_attention_grid_highlights_the_query_in_every_panel():
    fig = figures.attention_grid(attention((6, 5, 6)), TARGET, SOURCE, highlight_query=2, max_cols=3)
    assert len(fig.layout.shapes) == 6
    assert {(s.y0, s.y1, s.x0, s.x1) for s in fig.layout.shapes} == {(1.5, 2.5, -0.5, 5.5)}
    assert [(s.xref, s.yref) for s in fig.layout.shapes] == [(t.xaxis, t.yaxis) for t in fig.data]


def test_attention_grid_of_layers_and_heads():
    fig = figures.attention_grid(attention((2, 3, 5, 6)), TARGET, SOURCE)
    assert len(fig.data) == 6
    assert [a.text for a in fig.layout.annotations] == ["L0 H0", "L0 H1", "L0 H2", "L1 H0", "L1 H1", "L1 H2"]
    assert {t.xaxis for t in fig.data[3:]} == {"x4", "x5", "x6"}  # layer 1 is the second row of 3 columns
    assert fig.layout.xaxis4.domain == fig.layout.xaxis.domain


def test_attention_grid_hides_tick_labels_for_long_sentences():
    tokens = [f"t{i}" for i in range(30)]
    fig = figures.attention_grid(attention((2, 30, 30)), tokens, tokens)
    assert not any(fig.layout[a].showticklabels for a in fig.layout if a.startswith(("xaxis", "yaxis")))
    assert fig.data[0].hovertemplate.startswith("query %{y}")  # hover still names the tokens


def test_attention_grid_checks_its_titles():
    with pytest.raises(ValueError, match="head_titles: expected 2 labels, got 1"):
        figures.attention_grid(attention((2, 5, 6)), TARGET, SOURCE, head_titles=["only one"])


def test_attention_figures_escape_user_text():
    tokens = [*MALICIOUS, "▁ok"]
    weights = attention((2, 4, 4))
    figs = [
        figures.attention_heatmap(weights[0], tokens, tokens, title=MALICIOUS[0] + MALICIOUS[1] + MALICIOUS[2]),
        figures.attention_grid(weights, tokens, tokens, title=MALICIOUS[1], head_titles=[MALICIOUS[0], MALICIOUS[2]]),
    ]
    for fig in figs:
        assert_inert(fig)


def test_attention_json_stays_small():
    tokens = [f"▁w{i}" for i in range(64)]
    heatmap = figures.attention_heatmap(attention((64, 64)).astype(np.float64), tokens, tokens)
    assert json_size(heatmap) < 100_000
    tokens = tokens[:40]
    grid = figures.attention_grid(attention((6, 8, 40, 40)), tokens, tokens, highlight_query=5)
    assert len(grid.data) == 48
    assert json_size(grid) < 700_000  # float32 base64: 48 × 40 × 40 × 4 bytes ≈ 410 kB, or 480 kB with `\/` escapes


# --------------------------------------------------------------------------------------------------------
# Candidates
# --------------------------------------------------------------------------------------------------------


def test_candidates_bar_puts_the_most_probable_on_top():
    fig = figures.candidates_bar(["▁Hund", "▁Katze", "▁die", "▁Maus"], [0.2, 0.6, 0.05, 0.15], chosen=0)
    (bar,) = fig.data
    assert bar.orientation == "h"
    assert list(bar.y) == ["1 · ▁Katze", "0 · ▁Hund", "3 · ▁Maus", "2 · ▁die"]
    np.testing.assert_allclose(bar.x, [0.6, 0.2, 0.15, 0.05])
    assert list(bar.customdata) == [1, 0, 3, 2]  # the index into the tokens given, for click handlers
    assert fig.layout.yaxis.autorange == "reversed"  # the first category at the top
    assert list(bar.marker.color) == [figures.BAR_COLOR, figures.ACCENT, figures.BAR_COLOR, figures.BAR_COLOR]
    assert tuple(fig.layout.xaxis.range) == (0, 1) and fig.layout.xaxis.tickformat == ".0%"
    assert fig.layout.xaxis.title.text == "probability"


def test_candidates_bar_without_a_choice_and_with_bad_input():
    fig = figures.candidates_bar(["a", "b"], np.array([0.3, 0.7]))
    assert set(fig.data[0].marker.color) == {figures.BAR_COLOR}
    with pytest.raises(ValueError, match="chosen=2 is out of range"):
        figures.candidates_bar(["a", "b"], [0.3, 0.7], chosen=2)
    with pytest.raises(ValueError, match="expected 2 values"):
        figures.candidates_bar(["a", "b"], [0.3, 0.5, 0.2])


def test_candidate_figures_of_nothing_are_empty_charts():  # the app shows these when there is nothing to rank
    assert len(figures.candidates_bar([], [], title="finished").data[0].x) == 0
    assert [len(t.x) for t in figures.compare_candidates([], [], []).data] == [0, 0]


def test_the_bare_word_start_piece_gets_a_readable_label():
    assert figures.axis_labels(["▁", "▁Ge", "stern"]) == ["0 · ▁ (word start)", "1 · ▁Ge", "2 · stern"]


def test_compare_candidates_groups_two_conditions_in_the_same_order():
    fig = figures.compare_candidates(
        ["▁a", "▁b", "▁c"], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2], labels=("all heads", "head 1.3 silenced")
    )
    assert fig.layout.barmode == "group"
    assert [t.name for t in fig.data] == ["all heads", "head 1.3 silenced"]
    for trace in fig.data:
        assert list(trace.y) == ["0 · ▁b", "1 · ▁c", "2 · ▁a"]  # ranked by the first condition, top down
        assert list(trace.customdata) == [1, 2, 0]
    np.testing.assert_allclose(fig.data[1].x, [0.3, 0.2, 0.5])
    assert fig.layout.yaxis.autorange == "reversed"


def test_candidate_figures_escape_user_text():
    assert_inert(figures.candidates_bar(MALICIOUS, [0.5, 0.3, 0.2], chosen=1, title=MALICIOUS[0]))
    assert_inert(figures.compare_candidates(MALICIOUS, [0.5, 0.3, 0.2], [0.2, 0.3, 0.5], labels=MALICIOUS[1:]))


# --------------------------------------------------------------------------------------------------------
# Positional encoding
# --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def table() -> torch.Tensor:
    return sinusoidal_position_encoding(50, 16)  # the function the model adds to its embeddings


def test_positional_heatmap_shows_the_table_position_down(table):
    fig = figures.positional_heatmap(table)
    (trace,) = fig.data
    assert trace.z.shape == (50, 16) and trace.z.dtype == np.float32
    np.testing.assert_array_equal(trace.z, table.numpy())
    assert fig.layout.yaxis.autorange == "reversed"
    assert (trace.zmin, trace.zmax) == (-1.0, 1.0)
    assert (fig.layout.yaxis.title.text, fig.layout.xaxis.title.text) == ("position", "dimension")
    assert json_size(fig) < 30_000


def test_positional_curves_draw_the_chosen_columns(table):
    fig = figures.positional_curves(table, [0, 1, 9], title="low and high frequencies")
    assert [t.name for t in fig.data] == ["dim 0", "dim 1", "dim 9"]
    for trace, d in zip(fig.data, [0, 1, 9], strict=True):
        np.testing.assert_array_equal(trace.x, np.arange(50))
        np.testing.assert_array_equal(trace.y, table[:, d].numpy())
    with pytest.raises(ValueError, match=r"dims \[16\] out of range"):
        figures.positional_curves(table, [16])
    # The legend sits above the plot, below the title: a fourth curve wraps it to a second row, given room too (its
    # second row ran into the title at 1024 px).
    four = figures.positional_curves(table, [0, 1, 8, 9], title="low and high frequencies")
    assert four.layout.margin.t == fig.layout.margin.t + 28


def test_position_similarity_cosine_and_dot(table):
    fig = figures.position_similarity(table)
    z = fig.data[0].z
    assert z.shape == (50, 50)
    np.testing.assert_allclose(np.diag(z), 1.0, atol=1e-6)
    np.testing.assert_allclose(z, z.T, atol=1e-6)
    assert fig.data[0].colorbar.title.text == "cosine similarity"
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-1.0, 1.0)
    assert fig.layout.yaxis.autorange == "reversed"
    # square cells: a side longer than the other shrinks, rather than show positions -10 or 60 of a 50-row table
    assert fig.layout.xaxis.scaleanchor == "y" and fig.layout.xaxis.constrain == fig.layout.yaxis.constrain == "domain"
    dot = figures.position_similarity(table, metric="dot")
    np.testing.assert_allclose(np.diag(dot.data[0].z), 8.0, atol=1e-5)  # sin² + cos² for each of 8 frequencies
    assert dot.data[0].zmax == pytest.approx(8.0, abs=1e-5) and dot.data[0].colorbar.title.text == "dot product"
    with pytest.raises(ValueError, match="metric"):
        figures.position_similarity(table, metric="euclid")


# --------------------------------------------------------------------------------------------------------
# Beam search
# --------------------------------------------------------------------------------------------------------

VOCAB = ["</s>", "▁Die", "▁Eine", MALICIOUS[0], "▁Katze", "▁Hund", "▁Maus", "▁saß", "▁lief", "▁ging", "."]


def hyp(tokens, score):
    return SimpleNamespace(tokens=tuple(tokens), score=score)


def fake_steps():
    """Width 3: step 1 finishes `Eine </s>` (pushed out later), step 3 finishes `Die Katze saß </s>` (wins)."""
    return [
        SimpleNamespace(beams=(hyp([1], -0.1), hyp([2], -0.5), hyp([3], -1.0)), parents=(0, 0, 0), finished=False),
        SimpleNamespace(
            beams=(hyp([1, 4], -0.3), hyp([3, 5], -0.8), hyp([1, 6], -0.9)),
            parents=(0, 2, 0),
            finished_beams=(hyp([2, 0], -1.2),),
            finished=False,
        ),
        SimpleNamespace(
            beams=(hyp([1, 4, 7], -0.5), hyp([1, 6, 8], -1.1), hyp([3, 5, 9], -1.3)),
            parents=(0, 2, 1),
            finished_beams=(hyp([2, 0], -1.2),),
            finished=False,
        ),
        SimpleNamespace(
            beams=(hyp([1, 4, 7, 10], -0.9), hyp([1, 6, 8, 10], -1.5), hyp([3, 5, 9, 10], -1.6)),
            parents=(0, 1, 2),
            finished_beams=(hyp([1, 4, 7, 0], -0.55), hyp([1, 6, 8, 0], -1.0), hyp([3, 5, 9, 0], -1.1)),
            finished=True,
        ),
    ]


def segments(trace) -> set[tuple[tuple[float, float], tuple[float, float]]]:
    xs, ys = list(trace.x), list(trace.y)
    return {((xs[i], ys[i]), (xs[i + 1], ys[i + 1])) for i in range(0, len(xs), 3)}


def test_beam_tree_nodes_edges_and_finished_hypotheses():
    fig = figures.beam_tree(fake_steps(), VOCAB.__getitem__, title="beam search")
    edges, best, start, beams, finished = fig.data
    assert (start.x, start.y) == ((-1,), (0,))
    assert list(zip(beams.x, beams.y, strict=True)) == [(i, r) for i in range(4) for r in range(3)]
    assert list(beams.text[:3]) == ["▁Die", "▁Eine", "&lt;img src=x…"]
    assert "score -0.300" in beams.hovertext[3] and "▁Die ▁Katze" in beams.hovertext[3]
    assert fig.layout.yaxis.autorange == "reversed"  # the best beam at the top
    # every running beam hangs from its parent, one step to the left
    assert {((-1, 0), (0, r)) for r in range(3)} <= segments(edges)
    assert {((0, 0), (1, 0)), ((0, 2), (1, 1)), ((1, 2), (2, 1)), ((2, 2), (3, 2))} <= segments(edges)
    # finished hypotheses sit below the beams (row 3 = width), at the step where they ended
    assert list(zip(finished.x, finished.y, strict=True)) == [(1, 3), (3, 3), (3, 4), (3, 5)]
    assert list(finished.marker.symbol) == ["diamond-open", "diamond", "diamond", "diamond"]  # `Eine </s>` pushed out
    assert list(finished.text) == ["&lt;/s&gt;"] * 4
    assert {((0, 1), (1, 3)), ((2, 0), (3, 3)), ((2, 1), (3, 4)), ((2, 2), (3, 5))} <= segments(edges)
    # the winner's path: Die → Katze → saß → </s>
    assert segments(best) == {((-1, 0), (0, 0)), ((0, 0), (1, 0)), ((1, 0), (2, 0)), ((2, 0), (3, 3))}
    assert list(fig.layout.yaxis.ticktext) == ["#0", "#1", "#2", "finished", "finished", "finished"]


def test_beam_tree_while_running_follows_the_best_beam():
    steps = fake_steps()[:3]
    best = figures.beam_tree(steps, VOCAB.__getitem__).data[1]
    assert segments(best) == {((-1, 0), (0, 0)), ((0, 0), (1, 0)), ((1, 0), (2, 0))}


def test_beam_tree_of_nothing_is_an_empty_tree():
    fig = figures.beam_tree([], str)
    assert len(fig.data[3].x) == 0 and len(fig.data) == 4


def test_beam_tree_escapes_user_text():
    steps = [SimpleNamespace(beams=(hyp([0], -0.1), hyp([1], -0.2), hyp([2], -0.3)), parents=(0, 0, 0))]
    assert_inert(figures.beam_tree(steps, MALICIOUS.__getitem__, title=MALICIOUS[0]))


def test_beam_tree_of_a_real_beam_search(device):
    model = tiny_model(seed=3).to(device)
    decoding = Decoding(model, [5, 6, 7, 8, 9, 2], BeamSearch(3), max_new_tokens=8)
    steps = [decoding.step() for _ in range(8) if not decoding.finished]
    fig = figures.beam_tree(steps, lambda i: f"t{i}")
    beams = fig.data[3]
    assert len(beams.x) == sum(len(s.beams) for s in steps)
    n_finished = len({h.tokens for s in steps for h in s.finished_beams})
    assert len(fig.data) == (5 if n_finished else 4)
    assert sum(len(t.x) for t in fig.data[3:]) == len(beams.x) + n_finished
    best = segments(fig.data[1])
    if steps[-1].finished and steps[-1].finished_beams:  # one edge per token, from the start to the winner
        winner = steps[-1].finished_beams[0]
        assert len(best) == len(winner.tokens)
        assert max(best)[1] in set(zip(fig.data[4].x, fig.data[4].y, strict=True))
    else:
        assert len(best) == len(steps)
    assert json_size(fig) < 40_000


# --------------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------------


def test_token_chips_html_escapes_everything():
    html = figures.token_chips_html(["▁The", *MALICIOUS], ids=[5, 6, 7, 8])
    assert html.count('class="token-chip"') == 4
    assert 'title="position 0 · id 5"' in html
    for payload in MALICIOUS:
        assert payload not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "&lt;b&gt;" in html
    assert 'href="javascript' not in html and "&lt;a href=&#34;javascript:alert(1)&#34;&gt;x&lt;/a&gt;" in html
    assert html.count('class="token-space"') == 1  # the ▁ of ▁The, greyed
    assert "<script" not in html and "onerror=" not in html.replace("&lt;img src=x onerror=", "")


def test_token_chips_html_without_ids_and_with_the_wrong_count():
    assert 'title="position 1"' in figures.token_chips_html(["a", "b"])
    with pytest.raises(ValueError, match="ids: expected 2 labels, got 1"):
        figures.token_chips_html(["a", "b"], ids=[1])


def test_masked_cells_are_grey_and_say_so_not_a_learned_zero():
    weights = np.array([[1.0, 0.0], [0.4, 0.6]])
    masked = np.array([[False, True], [False, False]])
    fig = figures.attention_heatmap(weights, ["a", "b"], ["a", "b"], family="decoder_self", masked=masked)
    grey, shown = fig.data
    assert grey.name == "masked" and "masked" in grey.hovertemplate and grey.showscale is False
    assert np.isnan(shown.z[0][1]) and shown.z[1][1] == 0.6  # a gap where the mask is; the weights elsewhere
    assert np.isnan(grey.z[0][0]) and grey.z[0][1] == 1.0
    plain = figures.attention_heatmap(weights, ["a", "b"], ["a", "b"], masked=np.zeros((2, 2), dtype=bool))
    assert len(plain.data) == 1  # nothing masked: no grey layer
    with pytest.raises(ValueError, match="masked"):
        figures.attention_heatmap(weights, ["a", "b"], ["a", "b"], masked=np.zeros((3, 2), dtype=bool))


# ---- issue 13: every head at a glance, three families, alignment, presentation -----------------------------


def test_the_all_heads_grid_shows_masked_cells_grey_in_every_panel():
    weights = np.full((2, 3, 3), 1 / 3, dtype=np.float32)
    masked = np.triu(np.ones((3, 3), dtype=bool), 1)
    figure = figures.attention_grid(weights, list("abc"), list("abc"), family="decoder_self", masked=masked)
    grey = [t for t in figure.data if t.name == "masked"]
    weights_traces = [t for t in figure.data if t.name != "masked"]
    assert len(grey) == len(weights_traces) == 2
    assert {t.xaxis for t in grey} == {t.xaxis for t in weights_traces} == {"x", "x2"}
    for trace in weights_traces:  # a gap where masked, so the grey shows through
        assert np.isnan(trace.z[0, 2]) and not np.isnan(trace.z[2, 0])
    assert "masked" in grey[0].hovertemplate


def test_side_by_side_maps_keep_their_own_tokens_and_share_one_colour_axis():
    maps = [
        figures.AttentionMap(np.eye(3), list("abc"), list("abc"), "encoder", "encoder self-attention"),
        figures.AttentionMap(
            np.tril(np.ones((2, 2))) / 2,
            ["<s>", "x"],
            ["<s>", "x"],
            "decoder_self",
            "decoder",
            highlight_query=-1,
            masked=np.triu(np.ones((2, 2), dtype=bool), 1),
        ),
        figures.AttentionMap(np.full((2, 3), 1 / 3), ["<s>", "x"], list("abc"), "cross", "cross", highlight_query=-1),
    ]
    figure = figures.attention_side_by_side(maps, title="Layer 0")
    heatmaps = [t for t in figure.data if t.name != "masked"]
    assert [t.z.shape for t in heatmaps] == [(3, 3), (2, 2), (2, 3)]
    assert {t.coloraxis for t in heatmaps} == {"coloraxis"} and figure.layout.coloraxis.cmax == 1
    assert [a.text for a in figure.layout.annotations] == ["encoder self-attention", "decoder", "cross"]
    assert len(figure.layout.shapes) == 2  # the current row of the two decoder maps
    domains = [figure.layout.xaxis.domain, figure.layout.xaxis2.domain, figure.layout.xaxis3.domain]
    assert all(a[1] < b[0] for a, b in itertools.pairwise(domains))  # side by side, not overlapping
    assert figure.layout.yaxis.title.text == "query (source token)" and "target" in figure.layout.yaxis2.title.text


def test_alignment_lines_join_each_written_piece_to_the_source_pieces_it_attended_to():
    weights = np.array([[0.9, 0.06, 0.04], [0.02, 0.18, 0.8]], dtype=np.float32)
    figure = figures.alignment_lines(weights, ["Hallo", "(choosing now)"], ["hello", "my", "friend"], current=-1,
                                     read_tokens=["<s>", "Hallo"])  # fmt: skip
    lines = [t for t in figure.data if t.mode == "lines"]
    segments = sum(len(t.x) // 3 for t in lines)
    assert segments == 4  # every weight of at least 0.05: 0.9, 0.06, 0.18, 0.8 (0.04 and 0.02 draw no line)
    assert any("245,133,24" in t.line.color and t.line.width == 7.0 for t in lines)  # 0.8, the step now: orange
    assert any("33,113,181" in t.line.color and t.line.width == 7.0 for t in lines)  # 0.9, an earlier step: blue
    assert any("245,133,24" in t.line.color and t.line.width == 2.0 for t in lines)  # 0.18: thinner
    source_row, target_row = (t for t in figure.data if t.mode == "markers")
    assert (source_row.xaxis, set(source_row.y), target_row.xaxis, set(target_row.y)) == ("x2", {1}, "x", {0})
    assert list(figure.layout.xaxis2.ticktext) == ["hello", "my", "friend"] and figure.layout.xaxis2.side == "top"
    assert list(figure.layout.xaxis.ticktext) == ["Hallo", "(choosing now)"] and figure.layout.xaxis.side == "bottom"
    assert list(figure.layout.xaxis.tickvals) == list(target_row.x)  # each name under its piece
    assert "its query read &lt;s&gt;" in target_row.hovertext[0] and "hello: 0.90" in target_row.hovertext[0]


def test_a_thumbnail_is_the_heatmap_in_whole_pixels_with_masks_grey_and_the_current_row_framed():
    from io import BytesIO

    from PIL import Image

    weights = np.array([[1.0, 0.0], [0.5, 0.5]], dtype=np.float32)
    masked = np.array([[False, True], [False, False]])
    image = np.asarray(Image.open(BytesIO(figures.thumbnail_png(weights, masked=masked, highlight_query=1))))
    k = image.shape[0] // 2  # pixels per cell
    assert image.shape == (2 * k, 2 * k, 3) and k >= 3
    assert tuple(image[k // 2, k // 2]) == (8, 48, 107)  # weight 1: the darkest blue of the heatmaps
    assert tuple(image[k // 2, k + k // 2]) == (0xD9, 0xD9, 0xD9)  # masked: grey, not the white of a 0
    assert tuple(image[k, 0]) == (0xF5, 0x85, 0x18) and tuple(image[2 * k - 1, k]) == (0xF5, 0x85, 0x18)  # frame
    assert tuple(image[k + k // 2, k // 2]) == tuple(image[k + k // 2, k + k // 2])  # 0.5 and 0.5: one colour


def test_the_thumbnails_are_one_button_per_layer_and_head_and_escape_their_labels():
    weights = np.full((2, 3, 2, 2), 0.5, dtype=np.float32)
    page = figures.attention_thumbnails_html(weights, selected=(1, 2), what="<b>cross</b>")
    buttons = re.findall(r'<button class="thumb( selected)?" data-layer="(\d)" data-head="(\d)"', page)
    assert [(int(layer), int(head)) for _, layer, head in buttons] == [(lay, h) for lay in range(2) for h in range(3)]
    assert [bool(sel) for sel, *_ in buttons].count(True) == 1 and buttons[5][0]  # layer 1, head 2 is outlined
    assert "<b>" not in page and "&lt;b&gt;cross&lt;/b&gt;, layer 0, head 0" in page
    assert page.count("data:image/png;base64,") == 6


def test_enlarged_figures_have_larger_type_and_room_for_it():
    figure = figures.attention_grid(np.full((2, 3, 3), 1 / 3), list("abc"), list("abc"), title="t")
    height, title_size = figure.layout.height, figure.layout.title.font.size
    panel_title, ticks = figure.layout.annotations[0].font.size, figure.layout.xaxis.tickfont.size
    figure, original = figures.enlarged(figure, by=1.5), figure
    assert original.layout.height == height  # a copy: the figure itself may be shared by several users
    grown = max(round(height * 1.5), figures.base.ENLARGED_MIN_HEIGHT)
    assert figure.layout.height == grown and figure.layout.title.font.size == round(title_size * 1.5)
    assert figure.layout.font.size == 18 and figure.layout.annotations[0].font.size == round(panel_title * 1.5)
    assert figure.layout.xaxis.tickfont.size == round(ticks * 1.5)


def test_enlarged_figures_fit_a_projector_screen_with_their_titles_below_the_toolbar():
    """Issue 22: at 1024×768 the heatmap of a long output was 1,000 px tall, and Plotly's toolbar covered the
    titles. An enlarged figure is at most `ENLARGED_MAX_HEIGHT` tall (its row labels shrink to fit its rows), its
    title sits below the toolbar's row, and a bar chart (whose bars hold the larger labels) grows only by that."""
    tall = figures.attention_heatmap(attention((40, 6)), [f"t{i}" for i in range(40)], SOURCE[:6], title="tall")
    big = figures.enlarged(tall)
    assert big.layout.height == figures.base.ENLARGED_MAX_HEIGHT < round(tall.layout.height * 1.4)
    rows_px = (big.layout.height - big.layout.margin.t - 60) / 40
    assert figures.base.MIN_TICK_FONT <= big.layout.yaxis.tickfont.size <= rows_px / 1.15
    title = big.layout.title
    assert (title.y, title.yref, title.yanchor, title.pad.t) == (1, "container", "top", figures.base.MODEBAR_PX)
    assert big.layout.margin.t >= figures.base.MODEBAR_PX + title.font.size
    bars = figures.candidates_bar(["▁a", "▁b", "▁c"], [0.5, 0.3, 0.2], title="next")
    grown = figures.enlarged(bars)
    assert grown.layout.height - bars.layout.height == grown.layout.margin.t - bars.layout.margin.t
    assert "Noto Sans" in tall.layout.template["layout"]["font"]["family"]  # the page's typeface (ui/fonts.py)


# --------------------------------------------------------------------------------------------------------
# Plain data: every figure is one Plotly accepts, unchanged
# --------------------------------------------------------------------------------------------------------


def every_kind_of_figure() -> dict[str, figures.Figure]:
    """One figure of every builder, with masks, highlights and legends where the builder has them."""
    weights = attention((3, 4, 5))
    causal = np.triu(np.ones((4, 4), dtype=bool), 1)
    maps = [
        figures.AttentionMap(attention((4, 4)), TARGET[:4], TARGET[:4], "decoder_self", "self", 3, causal),
        figures.AttentionMap(attention((4, 5)), TARGET[:4], SOURCE[:5], "cross", "cross", 3),
    ]
    table = sinusoidal_position_encoding(20, 16)
    blocks = [Block("encoder.embedding", "Embedding", ""), Block("encoder.ffn", "FFN", "encoder")]
    masked = np.eye(4, 5, dtype=bool)
    heatmap = figures.attention_heatmap(weights[0, :4], TARGET[:4], SOURCE[:5], highlight_query=3, masked=masked)
    return {
        "heatmap": heatmap,
        "grid": figures.attention_grid(weights, TARGET[:4], SOURCE[:5], highlight_query=-1, title="every head"),
        "side by side": figures.attention_side_by_side(maps, title="families"),
        "alignment": figures.alignment_lines(attention((4, 5)), TARGET[:4], SOURCE[:5], current=-1, title="a"),
        "candidates": figures.candidates_bar(["▁a", "▁b", "<b>"], [0.5, 0.3, 0.2], chosen=1, title="next"),
        "compare": figures.compare_candidates(["▁a", "▁b"], [0.6, 0.4], [0.3, 0.7], labels=("on", "off")),
        "positions": figures.positional_heatmap(table, title="table"),
        "curves": figures.positional_curves(table, [0, 3, 8], title="curves"),
        "similarity": figures.position_similarity(table, title="similarity"),
        "beam": figures.beam_tree(fake_steps(), VOCAB.__getitem__, title="beam search"),
        "diagram": figures.architecture_diagram(blocks, blocks, selected="encoder.ffn", n_encoder=2, n_decoder=2),
    }


@pytest.mark.parametrize("presentation", [False, True])
def test_every_figure_is_sent_exactly_as_plotly_would_send_it(presentation):
    """The figures are built as plain data, without plotly's checks: here plotly builds each one again from that
    data, with every check (an unknown property, or a value of the wrong form, raises), and writes the same JSON:
    nothing was left for plotly to correct (a colour scale as bare colours, a property named with plotly's
    magic underscores)."""
    import plotly.graph_objects as go

    for name, figure in every_kind_of_figure().items():
        if presentation:
            figure = figures.enlarged(figure)
        checked = go.Figure(figure.to_dict())
        assert json.loads(figure.to_json()) == json.loads(checked.to_json()), name


def test_a_figure_owns_its_structure_so_enlarging_one_changes_no_other():
    first = figures.enlarged(figures.candidates_bar(["▁a"], [1.0]))
    second = figures.candidates_bar(["▁a"], [1.0])
    assert first.layout.font.size > second.layout.font.size
    assert second.layout.xaxis.title == {"text": "probability"}  # the shared axis constants are unchanged
    assert first.layout.template is not second.layout.template


def test_alignment_labels_of_a_long_output_are_thinned_and_may_stand_upright():
    """Issue 22: with a long output the names along the bottom ran into each other."""
    from explorer.figures.attention import ALIGNMENT_MAX_LABELS

    n_target, n_source = 127, 69  # en-de's longest output; a sentence of 69 pieces
    written = [("▁" if i % 3 == 0 else "") + f"w{i}" for i in range(n_target - 1)] + ["(choosing now)"]
    source = [("▁" if i % 2 == 0 else "") + f"s{i}" for i in range(n_source)]
    figure = figures.alignment_lines(attention((n_target, n_source)), written, source, current=-1, title="long")
    bottom, top = figure.layout.xaxis, figure.layout.xaxis2
    for axis, names, n in ((bottom, written, n_target), (top, source, n_source)):
        shown = [round(x * (n - 1)) for x in axis.tickvals]
        assert len(shown) <= ALIGNMENT_MAX_LABELS and [names[i] for i in shown] == list(axis.ticktext)
        k = math.ceil(n / ALIGNMENT_MAX_LABELS)
        assert min(b - a for a, b in itertools.pairwise(shown)) >= k  # far enough apart to stand side by side
        assert sum(not names[i].startswith("▁") for i in shown) <= 2  # words' first pieces, where there are some
        assert list(axis.autotickangles) == [0, -90]  # too many to lie flat: upright (plotly picks, in the browser)
    assert bottom.ticktext[-1] == "(choosing now)" and top.ticktext[0] == "▁s0"
    assert figure.layout.height > 380 and figure.layout.title.automargin  # room for upright names, above the title
    larger = figures.alignment_lines(attention((n_target, n_source)), written, source, current=-1, max_labels=20)
    assert len(larger.layout.xaxis.ticktext) <= 20 and larger.layout.xaxis.ticktext[-1] == "(choosing now)"
    short = figures.alignment_lines(attention((3, 4)), ["a", "b", "c"], list("wxyz"), title="short")
    assert list(short.layout.xaxis.ticktext) == ["a", "b", "c"] and short.layout.height == 380  # all, flat


# --------------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------------


def test_training_curves_draw_loss_exact_match_and_rate_against_the_step():
    train = [{"step": s, "loss": 2.0 / s, "exact": min(1.0, s / 100), "lr": 1e-3 * s / 50} for s in (10, 20, 30)]
    held_out = [{"step": s, "held_out_loss": 1.5 / (s + 1), "held_out_exact": s / 60} for s in (0, 30)]
    fig = figures.training_curves(train, held_out, title="reverse")
    spec = json.loads(fig.to_json())
    by_axis = {}
    for line in spec["data"]:
        by_axis.setdefault(line["yaxis"], []).append(line)
    assert [len(by_axis[axis]) for axis in ("y", "y2", "y3")] == [2, 2, 1]
    held_out_exact = by_axis["y2"][1]
    assert held_out_exact["name"] == "held-out" and np.allclose(decoded(held_out_exact["y"]), [0.0, 50.0])
    assert np.allclose(decoded(by_axis["y"][0]["x"]), [10, 20, 30])
    layout = spec["layout"]
    assert layout["yaxis2"]["range"] == [0, 101] and layout["yaxis"]["domain"][1] == 1.0
    assert layout["yaxis3"]["domain"][0] >= 0 and layout["yaxis3"]["domain"][1] < layout["yaxis2"]["domain"][0]


def decoded(values) -> np.ndarray:
    """A Plotly array as the browser reads it: a list, or a base64 typed array."""
    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
    return np.asarray(values)


def test_the_probe_replay_slides_over_the_snapshots_in_the_browser():
    frames = [
        figures.ReplayFrame(0, attention((3, 4), seed=0), ["5", "5"], [False, True]),
        figures.ReplayFrame(8, attention((3, 4), seed=1), ["5", "1", "</s>"], [False, False, False]),
    ]
    fig = figures.probe_replay(frames, ["<s>", "5", "1"], ["1", "5", "9", "</s>"], title="probe")
    spec = json.loads(fig.to_json())
    slider = spec["layout"]["sliders"][0]
    assert [step["label"] for step in slider["steps"]] == ["0", "8"] and slider["active"] == 1  # now, first
    for frame, step in zip(frames, slider["steps"], strict=True):
        restyle, relayout = step["args"]
        assert step["method"] == "update" and np.allclose(np.ravel(decoded(restyle["z"][0])), frame.weights.ravel())
        assert relayout["annotations"][0]["text"].startswith(f"step {frame.step} · prediction:")
    assert spec["layout"]["coloraxis"]["cmin"] == 0.0 and spec["layout"]["coloraxis"]["cmax"] == 1.0
    first = slider["steps"][0]["args"][1]["annotations"][0]["text"]
    assert first.endswith("· 1 wrong") and "<s>5</s></span>" in first  # struck through, and in red
    assert spec["layout"]["annotations"][0]["text"].endswith("· right")
    assert figures.probe_replay(frames, ["a", "b", "c"], list("wxyz"), shown=0).layout.sliders[0].active == 0


def test_the_probe_replay_escapes_pieces_and_checks_its_input():
    frames = [figures.ReplayFrame(3, attention((3, 3)), MALICIOUS, [True, False, True])]
    fig = figures.probe_replay(frames, MALICIOUS, MALICIOUS)
    strings = figure_strings(fig)
    ours = re.compile(r"<span style='color:#d62728'>|</span>|<s>|</s>")
    assert [s for s in strings if "<" in ours.sub("", OUR_MARKUP.sub("", s))] == []
    with pytest.raises(ValueError, match="at least one"):
        figures.probe_replay([], [], [])
    uneven = [frames[0], figures.ReplayFrame(4, attention((2, 3)), [], [])]
    with pytest.raises(ValueError, match="same shape"):
        figures.probe_replay(uneven, MALICIOUS, MALICIOUS)


def test_side_by_side_maps_cut_the_labels_between_them_and_keep_them_whole_on_hover():
    """Issue 35: a long piece's label on the middle map ran over the heatmap on its left. Between two maps the tick
    labels are cut to a few characters (never inside an escaped character), the categories keep the whole label."""
    long = ["<s>", "▁Entschuldigung", "▁R&D"]
    maps = [
        figures.AttentionMap(np.full((2, 2), 0.5), ["a", "b"], ["a", "b"], "encoder", "one"),
        figures.AttentionMap(np.full((3, 3), 0.3), long, long, "decoder_self", "two"),
    ]
    figure = figures.attention_side_by_side(maps).to_dict()
    first, second = figure["layout"]["yaxis"], figure["layout"]["yaxis2"]
    assert "ticktext" not in first  # the left map's labels have the figure's margin
    assert list(second["tickvals"]) == ["0 · &lt;s&gt;", "1 · ▁Entschuldigung", "2 · ▁R&amp;D"]
    assert list(second["ticktext"]) == ["0 · &lt;s&gt;", "1 · ▁Entsch…", "2 · ▁R&amp;D"]
    assert all(
        len(label.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")) <= 12 for label in second["ticktext"]
    )


def test_the_diagram_title_wraps_a_long_model_name_rather_than_cut_it():
    """Issue 35: a trained model's name in Inside a step's title was cut at the right edge of its narrow column."""
    from explorer.figures.tensors import DIAGRAM_TITLE_CHARS
    from explorer.stages import Block

    blocks = [Block("encoder.self_attention", "Self-attention", "")]
    short = figures.architecture_diagram(blocks, blocks, title="en-de: post-norm").to_dict()
    long = figures.architecture_diagram(blocks, blocks, title="reverse · 2 layers, step 167 (trained here): post-norm")
    lines = long.to_dict()["layout"]["title"]["text"].split("<br>")
    assert short["layout"]["title"]["text"] == "en-de: post-norm"
    assert len(lines) == 2 and all(len(line) <= DIAGRAM_TITLE_CHARS for line in lines)
    assert long.to_dict()["layout"]["height"] == short["layout"]["height"] + 20  # room for the second line


def test_the_candidates_margins_are_set_from_their_labels_not_measured_by_plotly():
    """Issue 35 §5: Plotly measured every label of an `automargin` axis and drew the chart again when the margins
    changed, half the time a new bar chart took the browser. The margins hold the widest label (a wide character
    counts as a whole em, an escaped one as one character), the axis title, and grow with the presentation's text."""
    latin = figures.candidates_bar(["▁a", "▁Entschuldigung"], [0.5, 0.5])
    wide = figures.candidates_bar(["▁a", "你好世界你好世界你好世界你好"], [0.5, 0.5])
    escaped = figures.candidates_bar(["&&&&&&&&&&&&&&"], [1.0])
    for figure in (latin, wide, escaped):
        assert figure.layout.xaxis.automargin is False and figure.layout.yaxis.automargin is False
    size = latin.layout.font.size
    assert latin.layout.margin.l >= len("1 · ▁Entschuldigung") * 0.55 * size + 2 * size  # labels, then the title
    assert wide.layout.margin.l - latin.layout.margin.l >= (14 - 15 * 0.62) * size - 1  # 14 wide, not 15 narrow
    assert figures.base.label_width_em(escaped.data[0].y[0]) == pytest.approx(len("0 · ") * 0.62 + 14 * 0.62)
    grown = figures.enlarged(latin)
    assert grown.layout.margin.l == round(latin.layout.margin.l * 1.4)
    assert grown.layout.margin.b == round(latin.layout.margin.b * 1.4)
