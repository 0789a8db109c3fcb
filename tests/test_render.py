"""From explorer state to page content (explorer.render), without a browser."""

from __future__ import annotations

import re

import numpy as np
import pytest

from explorer import Explorer, ExplorerError, ExplorerState, render
from tests.conftest import explorer_on
from ui.page import enlarged_for_presentation


@pytest.fixture
def explorer(registry):
    """numbers-de on "twenty-one", two tokens written: a sentence short enough to pad (`pad_to=8`), whose
    translation, "einundzwanzig", the twin comparison quotes."""
    return explorer_on(registry, "twenty-one", steps=2)


@pytest.mark.parametrize(
    "family, rows, cols",
    [("encoder", "source", "source"), ("decoder_self", "target", "target"), ("cross", "target", "source")],
)
def test_attention_figure_puts_queries_on_rows_and_keys_on_columns(explorer, family, rows, cols):
    snapshot = explorer.snapshot()
    state = explorer.state.replace(family=family, layer=1, head=2)
    figure = render.attention_figure(snapshot, state)
    tokens = {"source": snapshot.source_tokens, "target": snapshot.target_tokens}
    assert figure.data[0].z.shape == (len(tokens[rows]), len(tokens[cols]))
    assert figure.layout.yaxis.autorange == "reversed"
    assert "layer 1, head 2" in figure.layout.title.text


def test_all_heads_grid_has_one_panel_per_head(explorer):
    figure = render.attention_figure(explorer.snapshot(), explorer.state.replace(grid=True))
    assert len(figure.data) == explorer.checkpoint.model.config.n_heads


def test_candidates_and_force_choices_agree(explorer):
    snapshot = explorer.snapshot()
    choices = render.candidate_radio_choices(snapshot)
    assert [int(value) for _, value in choices] == [c.token_id for c in snapshot.candidates]
    assert choices[0][0].startswith(snapshot.candidate_tokens[0])
    assert render.candidates_figure(snapshot).data[0].x[0] == pytest.approx(snapshot.candidates[0].prob)


def test_positional_figures_show_the_models_own_encoding(explorer):
    heatmap, curves, similarity = render.positional_figures(explorer, 20, [0, 1])
    table = explorer.checkpoint.model.src_embed.positions(20).numpy()
    assert heatmap.data[0].z.shape == table.shape
    assert abs(heatmap.data[0].z - table).max() < 1e-6
    assert len(curves.data) == 2 and similarity.data[0].z.shape == (20, 20)


def test_the_teacher_forced_table_shows_tokens_exactly_once_escaped():
    """Markdown shows a code span's inside literally: `<s>` must reach it as `<s>`, not `&lt;s&gt;`."""
    assert render.table_code("<s>") == "`<s>`"
    assert render.table_code("a|b") == "`a\\|b`"  # a pipe would end the table cell
    assert render.table_code("x`y") == "``x`y``"  # a longer fence than the backticks inside
    assert render.table_code("`") == "`` ` ``"


def test_the_teacher_forced_markdown_keeps_markup_as_text(explorer):
    snapshot = explorer.snapshot()
    markdown = render.teacher_forced_markdown(snapshot, explorer.state)
    assert f"`{snapshot.target_tokens[0]}`" in markdown and "&lt;" not in markdown and "&amp;" not in markdown


def test_the_comparison_names_the_next_token_and_counts_heads_in_words(explorer):
    assert render.heads_silenced(1) == "1 head silenced" and render.heads_silenced(3) == "3 heads silenced"
    silenced = Explorer(explorer.registry, explorer.state.replace(silenced=frozenset({("cross", 0, 1)})))
    figure, report = render.comparison(silenced)
    assert figure.layout.title.text.startswith("Next token after “") and "1 head silenced" in report
    assert [trace.name for trace in figure.data] == ["all heads", "1 head silenced"]
    fresh = Explorer(explorer.registry, silenced.state.replace(choices=()))
    assert render.comparison(fresh)[0].layout.title.text == "First token of the translation"


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("sinusoidal_interleaved", [0, 64, 128, 254]),
        ("sinusoidal_concat", [0, 32, 64, 127]),
        ("learned", [0, 64, 128, 255]),
    ],
)
def test_the_default_curves_spread_from_the_fastest_to_the_slowest_wave(kind, expected):
    assert render.spread_dimensions(kind, 256) == expected


def test_the_positional_curves_default_to_the_spread(explorer):
    d = explorer.checkpoint.model.config.d_model
    _, curves, _ = render.positional_figures(explorer, 50, [])
    expected = render.spread_dimensions(explorer.checkpoint.model.config.positional_encoding, d)
    assert [trace.name for trace in curves.data] == [f"dim {x}" for x in expected]
    assert expected[0] == 0 and expected[-1] >= d - 2


def test_trained_vs_untrained_shows_the_selected_layer_and_both_translations(explorer):
    state = explorer.state.replace(family="cross", layer=1, head=None)
    chosen = Explorer(explorer.registry, state)
    trained, untrained, report = render.twin_comparison(chosen)
    assert trained.layout.title.text.startswith("Trained: cross-attention, layer 1")
    assert untrained.layout.title.text.startswith("Untrained: cross-attention, layer 1")
    assert "**Trained:** einundzwanzig" in report and "**Untrained twin:**" in report
    assert list(trained.data[0].y) == list(untrained.data[0].y)  # the same tokens


def test_the_colour_bar_title_runs_along_the_bar_clear_of_its_labels(explorer):
    figure = render.attention_figure(explorer.snapshot(), explorer.state)
    assert figure.layout.coloraxis.colorbar.title.side == "right"


def test_the_causal_and_padding_masks_show_as_masked_cells(explorer):
    snapshot = explorer.snapshot()
    causal = render.masked_cells(snapshot, explorer.state, "decoder_self")
    assert causal.tolist() == np.triu(np.ones_like(causal), 1).tolist()  # above the diagonal
    assert not render.masked_cells(snapshot, explorer.state.replace(causal_mask=False), "decoder_self").any()
    padded = Explorer(explorer.registry, explorer.state.replace(pad_to=8))
    pviews = padded.snapshot()
    cross = render.masked_cells(pviews, padded.state, "cross")
    assert cross.shape == (len(pviews.target_tokens), 8) and cross[:, -1].all() and not cross[:, 0].any()
    assert not render.masked_cells(pviews, padded.state.replace(padding_mask=False), "cross").any()
    figure = render.attention_figure(snapshot, explorer.state.replace(family="decoder_self", layer=0))
    assert figure.data[0].name == "masked"


@pytest.mark.parametrize("family", ["encoder", "decoder_self", "cross"])
def test_the_attention_caption_says_what_rows_and_columns_are(explorer, family):
    snapshot = explorer.snapshot()
    caption = render.attention_caption(snapshot, explorer.state.replace(family=family))
    assert "**row**" in caption and "**column**" in caption and "`▁`" in caption
    if family == "encoder":
        assert "outlined" not in caption
    else:  # row t predicts t + 1, and the outlined row is the current step's
        assert "predicts piece *t + 1*" in caption and f"“{snapshot.target_tokens[-1]}”" in caption
    assert ("causal mask" in caption) == (family == "decoder_self")


# ---- issue 13: the Attention tab's views --------------------------------------------------------------------


def test_the_three_families_view_shows_one_layer_in_every_family(explorer):
    snapshot = explorer.snapshot()
    figure = render.attention_figure(snapshot, explorer.state.replace(view="families", layer=1, head=3))
    heatmaps = [t for t in figure.data if t.name != "masked"]
    assert [t.z.shape for t in heatmaps] == [
        tuple(snapshot.encoder.shape[2:]),
        tuple(snapshot.decoder_self.shape[2:]),
        tuple(snapshot.cross.shape[2:]),
    ]
    np.testing.assert_allclose(heatmaps[2].z, snapshot.cross[1, 3].numpy())
    assert any(t.name == "masked" for t in figure.data)  # the causal mask, grey
    assert "layer 1, head 3" in figure.layout.title.text.lower()
    caption = render.attention_caption(snapshot, explorer.state.replace(view="families"))
    assert "three places" in caption


def test_the_alignment_view_draws_the_written_piece_shifted_by_one(explorer):
    snapshot = explorer.snapshot()
    written = render.written_tokens(snapshot)
    assert written[:-1] == snapshot.target_tokens[1:] and written[-1] == "(choosing now)"
    figure = render.alignment_figure(snapshot, explorer.state.replace(view="alignment", layer=1))
    assert len(figure.layout.xaxis.ticktext) == len(snapshot.target_tokens)  # the written pieces, along the bottom
    assert re.fullmatch(
        r"Cross-attention as alignment, layer 1( \(the most peaked\))?, average of the heads", figure.layout.title.text
    )
    assert "shift by one" in render.attention_caption(snapshot, explorer.state.replace(view="alignment"))
    finished = Explorer(explorer.registry, explorer.state.replace(choices=()))
    for _ in finished.run():
        pass
    assert render.written_tokens(finished.snapshot())[-1] == "</s>"


def test_the_thumbnails_cover_every_layer_and_head_and_outline_the_one_shown(explorer):
    snapshot, config = explorer.snapshot(), explorer.checkpoint.model.config
    page = render.attention_thumbnails(snapshot, explorer.state.replace(layer=1, head=2))
    assert page.count('<button class="thumb') == config.n_layers("cross") * config.n_heads
    assert 'class="thumb selected" data-layer="1" data-head="2"' in page
    assert "selected" not in render.attention_thumbnails(snapshot, explorer.state)  # the average: no single head


def test_figures_grow_only_in_the_presentation_layout(explorer):
    snapshot = explorer.snapshot()
    plain, large = (render.attention_figure(snapshot, explorer.state) for _ in range(2))
    assert enlarged_for_presentation({"plot": plain}, explorer.state)["plot"].layout.font.size == 12
    shown = enlarged_for_presentation({"plot": large, "text": "unchanged"}, explorer.state.replace(presentation=True))
    assert shown["plot"].layout.font.size > 12 and shown["plot"].layout.height > plain.layout.height
    assert shown["text"] == "unchanged" and large.layout.font.size == 12  # a new figure: the original may be shared


def test_a_state_names_its_attention_view_and_layout_and_a_link_keeps_them():
    state = ExplorerState(model="numbers-de", source="twenty-one", view="alignment", presentation=True)
    assert ExplorerState.from_link(state.to_link()) == state
    with pytest.raises(ExplorerError, match="attention view"):
        ExplorerState(view="sideways")
    with pytest.raises(ExplorerError, match="presentation"):
        ExplorerState(presentation="yes")


def rows(*tops: float, n_source: int = 4) -> list[list[float]]:
    """Attention rows whose largest weight is each of `tops`, the rest spread evenly over the other pieces."""
    return [[top, *[(1 - top) / (n_source - 1)] * (n_source - 1)] for top in tops]


def test_the_peakedness_of_a_layer_is_the_mean_top_weight_of_the_map_drawn():
    """Issue 22: the alignment lines opened on layer 0, the muddiest; they open on the most peaked layer."""
    import torch

    cross = torch.tensor([  # (L=3, H=2, T=2, S=4)
        [rows(0.4, 0.4), rows(0.4, 0.4)],
        [rows(0.9, 0.9), rows(0.3, 0.3)],  # one sharp head and one vague one: the average is what is drawn
        [rows(0.7, 0.5), rows(0.7, 0.5)],
    ])  # fmt: skip
    assert render.layer_peakedness(cross) == pytest.approx([0.4, 0.6, 0.6])  # the head average's top weights
    assert render.layer_peakedness(cross, head=0) == pytest.approx([0.4, 0.9, 0.6])
    uniform = torch.full((2, 1, 3, 4), 0.25)
    assert render.layer_peakedness(uniform) == pytest.approx([0.25, 0.25])  # 1/S: spread evenly


def test_the_alignment_lines_say_which_layer_is_shown_and_which_is_the_most_peaked(explorer):
    import dataclasses

    import torch

    n_target, n_source = len(explorer.snapshot().target_tokens), len(explorer.snapshot().source_tokens)
    cross = torch.tensor([[rows(*[top] * n_target, n_source=n_source)] * 2 for top in (0.34, 0.52, 0.81)])
    snapshot = dataclasses.replace(explorer.snapshot(), cross=cross)
    assert render.most_peaked_layer(snapshot) == 2
    state = explorer.state.replace(view="alignment", layer=2)
    caption = render.attention_caption(snapshot, state)
    assert caption.startswith(
        "**Layer 2 is shown: its cross-attention is the most peaked for this sentence** (mean top weight 0.81; "
        "layer 0: 0.34, layer 1: 0.52). The *mean top weight* is the largest weight a piece of the translation "
        "gives one source piece, averaged over the pieces so far (the average of the heads)"
    )
    assert "Middle layers often align most clearly" not in caption  # untrue of this model: its last layer aligns
    assert "(the most peaked)" in render.alignment_figure(snapshot, state).layout.title.text
    caption = render.attention_caption(snapshot, state.replace(layer=0, head=1))
    assert caption.startswith("**Layer 0 is shown; the most peaked for this sentence is layer 2** (mean top weight")
    assert "(head 1)" in caption
    assert "most peaked" not in render.alignment_figure(snapshot, state.replace(layer=0)).layout.title.text


def test_the_en_de_example_aligns_most_clearly_in_its_last_layer(registry):
    """The sentence the page opens on (en-de's first example): layer 2 of 3, not a middle one, is the clean one."""
    snapshot = Explorer(registry, ExplorerState(model="en-de", source=registry.examples("en-de")[0][0])).snapshot()
    peaked = render.layer_peakedness(snapshot.cross)
    assert render.most_peaked_layer(snapshot) == 2 == len(peaked) - 1 and peaked[2] > max(peaked[:2]) + 0.15


def test_the_alignment_lines_are_enlarged_once_for_the_presentation_layout_with_their_title_above_the_names(explorer):
    import json

    import plotly.graph_objects as go

    from explorer import figures

    state = explorer.state.replace(view="alignment", presentation=True)
    figure = render.alignment_figure(explorer.snapshot(), state)
    assert (
        figure.drawn_for_presentation and enlarged_for_presentation({"plot": figure}, state)["plot"] is figure
    )  # enlarged once
    assert figure.layout.font.size > 12 and figure.layout.title.text.startswith("Alignment, layer")  # fits 1024 px
    title, margin = figure.layout.title, figure.layout.margin
    assert title.automargin and title.pad.t == figures.base.MODEBAR_PX and margin.t < title.pad.t  # the title pushes
    assert json.loads(figure.to_json()) == json.loads(go.Figure(figure.to_dict()).to_json())  # as plotly would send


@pytest.mark.parametrize("family", ["encoder", "decoder_self", "cross"])
def test_the_heatmap_in_words_and_as_a_table_says_its_numbers(explorer, family):
    """Issue 35 §4: the figure's text alternative, from its numbers: where each row looks most and how strongly,
    and every weight in a table a screen reader reads cell by cell."""
    import html

    explorer.update(family=family, layer=1, head=None)
    snapshot = explorer.snapshot()
    said = render.attention_in_words(snapshot, explorer.state)
    weights = render._heads(render._family_maps(snapshot, family)[1], None)[0].nan_to_num(0.0).numpy()
    queries, keys, _current = render._axes_of(snapshot, family)
    for query, row in zip(queries, weights, strict=True):
        expected = f"“{query}” → “{keys[int(row.argmax())]}” {row.max():.2f}"
        assert html.escape(expected) in said or expected in said
    table = said[said.index("<table>") :]
    assert table.count("<tr>") == len(queries) + 1 and table.count("<td>") == len(queries) * len(keys)
    cells = [float(x) for x in re.findall(r"<td>([0-9.]+)</td>", table)]
    for i in range(len(queries)):  # each row sums to 1, within the table's rounding
        assert abs(sum(cells[i * len(keys) : (i + 1) * len(keys)]) - 1) <= 0.005 * len(keys)
