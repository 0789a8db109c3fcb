"""From explorer state to page content (explorer.render), without a browser."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import Explorer, ExplorerError, ExplorerState, ModelRegistry, render

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


@pytest.fixture(scope="module")
def explorer():
    e = Explorer(ModelRegistry(CHECKPOINTS), ExplorerState(model="numbers-de", source="twenty-one"))
    e.step()
    e.step()
    return e


@pytest.mark.parametrize(
    "family, rows, cols",
    [("encoder", "source", "source"), ("decoder_self", "target", "target"), ("cross", "target", "source")],
)
def test_attention_figure_puts_queries_on_rows_and_keys_on_columns(explorer, family, rows, cols):
    views = explorer.views()
    state = explorer.state.replace(family=family, layer=1, head=2)
    figure = render.attention_figure(views, state)
    tokens = {"source": views.source_tokens, "target": views.target_tokens}
    assert figure.data[0].z.shape == (len(tokens[rows]), len(tokens[cols]))
    assert figure.layout.yaxis.autorange == "reversed"
    assert "layer 1, head 2" in figure.layout.title.text


def test_all_heads_grid_has_one_panel_per_head(explorer):
    figure = render.attention_figure(explorer.views(), explorer.state.replace(grid=True))
    assert len(figure.data) == explorer.checkpoint.model.config.n_heads


def test_candidates_and_force_choices_agree(explorer):
    views = explorer.views()
    choices = render.candidate_radio_choices(views)
    assert [int(value) for _, value in choices] == [c.token_id for c in views.candidates]
    assert choices[0][0].startswith(views.candidate_tokens[0])
    assert render.candidates_figure(views).data[0].x[0] == pytest.approx(views.candidates[0].prob)


def test_head_choices_round_trip():
    assert render.parse_head("average") == (None, False)
    assert render.parse_head("all heads") == (None, True)
    assert render.parse_head("head 3") == (3, False)
    state = ExplorerState(head=3)
    assert render.head_choice(state) == "head 3"
    with pytest.raises(ExplorerError):
        render.parse_head("head x")
    assert render.parse_head_ref(render.head_ref_label(("cross", 1, 2))) == ("cross", 1, 2)


def test_every_head_can_be_silenced_from_the_checkboxes(explorer):
    config = explorer.checkpoint.model.config
    labels = render.silenced_choices(explorer)
    assert len(labels) == (config.n_encoder_layers + 2 * config.n_decoder_layers) * config.n_heads
    assert len({render.parse_head_ref(label) for label in labels}) == len(labels)


def test_positional_figures_show_the_models_own_encoding(explorer):
    heatmap, curves, similarity = render.positional_figures(explorer, 20, [0, 1])
    table = explorer.checkpoint.model.src_embed.positions(20).numpy()
    assert heatmap.data[0].z.shape == table.shape
    assert abs(heatmap.data[0].z - table).max() < 1e-6
    assert len(curves.data) == 2 and similarity.data[0].z.shape == (20, 20)
