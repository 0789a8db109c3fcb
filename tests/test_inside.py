"""The Inside a step view (explorer/inside.py): every stage of the architecture drawn from the worked computation,
with this sentence's numbers, in step with the explorer; the tests that take `explorer_on_device` on each device
present (conftest.py)."""

from __future__ import annotations

import html
import itertools
import re

import pytest

from explorer import Explorer, ExplorerError, ExplorerState, figures, inside, stages


@pytest.mark.parametrize("stage", stages.STAGES)
def test_every_stage_draws_its_tensors_and_says_what_they_are(explorer, stage):
    state = explorer.state.replace(stage=stage, stage_layer=1, stage_head=3, stage_position=2)
    viewed = Explorer(explorer.registry, state)
    page, text = inside.stage_view(viewed)
    assert text and page.startswith('<div class="tensors">')
    titles = html.unescape(" ".join(re.findall(r'<div class="tensor-title">(.*?)</div>', page)))
    if stage.endswith("attention"):
        assert "(d_k,)" in titles and "head 3" in titles and "W^O" in titles
        assert ("S, d_k" in titles) == (stage == "decoder.cross_attention")
    if stage.endswith("add_norm"):
        assert "μ =" in titles and "γ" in titles and "β" in titles
    if stage.endswith("ffn"):
        assert "exactly zero" in titles and "(d_ff,)" in titles
    if stage.startswith("encoder") and stage != "encoder.embedding":
        assert "position 2" in text  # the source position chosen
    diagram = inside.diagram(viewed, stage)
    filled = [a.text for a in diagram.layout.annotations if a.font.color == "white"]
    assert len(filled) == 1  # the chosen block, and only it, is filled


def test_the_output_stage_shows_the_candidates_of_the_step(explorer):
    state = explorer.state.replace(stage="output")
    viewed = Explorer(explorer.registry, state)
    page, text = inside.stage_view(viewed)
    last_bars = page.rsplit('<div class="bars">', 1)[1]
    probabilities = [float(v) for v in re.findall(r'data-value="([^"]+)"', last_bars)]
    candidates = viewed.snapshot().candidates
    assert probabilities == pytest.approx([c.prob for c in candidates], abs=1e-6)
    assert len(probabilities) == inside.TOP  # never the whole vocabulary
    assert "the top of the next-token chart" in text


def test_what_each_layer_would_say_ends_where_the_model_does(explorer_on_device):
    explorer = explorer_on_device
    worked = inside.worked_step(explorer)
    assert worked.layer_predictions[-1].top_ids[0] == explorer.decoding.upcoming()[0].token_id
    _, text = inside.stage_view(Explorer(explorer.registry, explorer.state.replace(stage="layers")), worked)
    assert text.count("\n| ") == len(worked.layer_predictions) + 1  # the header and one row per layer


def test_the_view_follows_the_step_the_masks_and_the_silenced_heads(explorer_on_device):
    explorer = explorer_on_device
    state = explorer.state.replace(stage="decoder.self_attention", stage_layer=0, stage_head=1)
    before = inside.stage_view(Explorer(explorer.registry, state))[1]
    stepped = Explorer(explorer.registry, state)
    stepped.step()
    assert "position 2" in before and "position 3" in inside.stage_view(stepped)[1]
    silenced = Explorer(explorer.registry, state.replace(silenced=frozenset({("decoder_self", 0, 1)})))
    page, text = inside.stage_view(silenced)
    assert "silenced: zeros" in page
    assert "Silenced heads of this layer: 1" in text
    masked = Explorer(explorer.registry, state)  # the causal mask hides the future of every earlier row
    unmasked = Explorer(explorer.registry, state.replace(causal_mask=False))  # off: nothing is hidden
    assert not inside.worked_step(masked).decoder[0].self_attention.allowed.all()
    assert inside.worked_step(unmasked).decoder[0].self_attention.allowed.all()


def test_a_layer_head_or_position_beyond_the_model_is_brought_into_range(explorer):
    state = explorer.state.replace(stage="encoder.ffn", stage_layer=9, stage_head=9, stage_position=99)
    viewed = Explorer(explorer.registry, state)
    shown = inside.shown_stage(viewed, inside.worked_step(viewed))
    config = viewed.checkpoint.model.config
    assert (shown.layer, shown.head) == (config.n_encoder_layers - 1, config.n_heads - 1)
    assert shown.row == len(viewed.source_ids()) - 1
    with pytest.raises(ExplorerError, match="unknown stage"):
        ExplorerState(stage="decoder.somewhere")


def test_the_stacks_stage_follows_one_vector_up_each_stack(explorer):
    viewed = Explorer(explorer.registry, explorer.state.replace(stage="stacks", stage_position=1))
    page, text = inside.stage_view(viewed)
    worked = inside.worked_step(viewed)
    titles = html.unescape(" ".join(re.findall(r'<div class="tensor-title">(.*?)</div>', page)))
    n_enc, n_dec = len(worked.encoder), len(worked.decoder)
    assert f"the encoder stream at “{viewed.snapshot().source_tokens[1]}”" in titles
    assert f"({1 + 2 * n_enc}, d_model)" in titles and f"({1 + 3 * n_dec}, d_model)" in titles
    assert titles.count("cosine similarity") == 2
    values = [float(v) for v in re.findall(r'data-value="([-0-9.e]+)"', page)]
    assert values[2 * n_enc] == pytest.approx(1.0)  # the encoder stream's last row is where it ends
    assert "residual stream" in text and "memory" in text


ADD_NORM_NAMES = {  # issue 22: each Add & Norm named by the sub-layer it follows
    "encoder.self_attention_add_norm": "Encoder · Add & Norm after self-attention",
    "encoder.ffn_add_norm": "Encoder · Add & Norm after feed forward",
    "decoder.self_attention_add_norm": "Decoder · Add & Norm after self-attention",
    "decoder.cross_attention_add_norm": "Decoder · Add & Norm after cross-attention",
    "decoder.ffn_add_norm": "Decoder · Add & Norm after feed forward",
}


def test_every_stage_has_a_name_of_its_own_and_keeps_its_key():
    """Issue 22: the list of stages said "Encoder · Add & Norm" twice and "Decoder · Add & Norm" three times. Only
    the labels changed: the keys, which shared links carry, are the state's `STAGES` as before, in order."""
    choices = inside.stage_choices()
    labels = [label for label, _ in choices]
    assert len(set(labels)) == len(labels) == len(stages.STAGES)
    assert tuple(key for _, key in choices) == stages.STAGES
    assert {key: label for label, key in choices if key.endswith("add_norm")} == ADD_NORM_NAMES
    for blocks in (stages.ENCODER_BLOCKS, stages.DECODER_BLOCKS):
        for below, block in itertools.pairwise(blocks):
            if block.key.endswith("add_norm"):  # it follows the block below it, and says which
                assert block.key == f"{below.key}_add_norm"
                assert block.name.endswith(f"after {below.name.lower().removeprefix('masked ')}")


@pytest.mark.parametrize("presentation", [False, True])
def test_the_diagram_names_each_block_as_the_list_does_and_fits_each_label_in_its_block(explorer, presentation):
    """Each block of the diagram is a rectangle named by its stage's key (the page finds the block under a click by
    it) and labelled with its stage's name; in the presentation layout it is drawn smaller, for a narrow column,
    and not enlarged again."""
    state = explorer.state.replace(stage="decoder.cross_attention_add_norm", presentation=presentation)
    diagram = inside.diagram(Explorer(explorer.registry, state), state.stage)
    named = [shape for shape in diagram.layout.shapes if shape.name]
    assert [shape.name for shape in named] == list(stages.STAGES)
    texts = {html.unescape(a.text).replace("<br>", " "): a for a in diagram.layout.annotations if not a.showarrow}
    names = {label.removeprefix("Encoder · ").removeprefix("Decoder · ") for label, _ in inside.stage_choices()}
    assert names <= set(texts)
    assert texts["Add & Norm after cross-attention"].font.color == "white"  # the chosen block, filled
    size = figures.tensors._SIZES[presentation]
    for shape in named:  # every label's lines fit its block: across (in characters) and up (in pixels)
        block = next(b for b in (*stages.ENCODER_BLOCKS, *stages.DECODER_BLOCKS) if b.key == shape.name)
        lines = figures.tensors.label_lines(block.label, size.chars)
        assert max(len(line) for line in lines) <= size.chars
        assert shape.y1 - shape.y0 >= len(lines) * size.line
    plot_height = diagram.layout.height - diagram.layout.margin.t - diagram.layout.margin.b
    assert abs(plot_height - diagram.layout.yaxis.range[1]) < 1  # the y axis counts the plot's pixels
    assert diagram.layout.dragmode is False and diagram.layout.xaxis.fixedrange  # a click chooses; it never zooms
    assert diagram.drawn_for_presentation == presentation
    if presentation:  # drawn for the presentation layout: not enlarged, and short enough for a 768 px screen
        assert figures.enlarged(diagram) is diagram and diagram.layout.height < 600
    _, text = inside.stage_view(Explorer(explorer.registry, state))
    assert text.startswith("**Residual connection and LayerNorm after the cross-attention**")
    assert "Sublayer is the cross-attention" in text and "*Feed forward* network" in text


def test_a_pre_norm_diagram_says_what_each_add_follows_and_that_its_layernorm_came_first():
    blocks = inside._blocks(stages.DECODER_BLOCKS, pre_norm=True)
    adds = [b.name for b in blocks if b.key.endswith("add_norm")]
    assert adds == [
        "Add after self-attention (LayerNorm first)",
        "Add after cross-attention (LayerNorm first)",
        "Add after feed forward (LayerNorm first)",
    ]
