"""The explorer's state machine, on the shipped numbers-de model (no gradio); the tests that take
`registry_on_device` with the model on each device present (conftest.py)."""

from __future__ import annotations

import base64
import json

import pytest
import torch

from explorer import Explorer, ExplorerError, ExplorerState, render, shuffle_words


def explorer(registry, **settings) -> Explorer:
    return Explorer(registry, ExplorerState(model="numbers-de", source="twenty-one", **settings))


def test_step_back_force_reset_keep_the_choices_in_step(registry_on_device):
    e = explorer(registry_on_device)
    first = e.step()
    assert e.state.choices == (None,)
    forced = e.step(force=first.token_id)
    assert forced.forced and e.state.choices == (None, first.token_id)
    e.back()
    assert e.state.choices == (None,)
    e.reset()
    assert e.state.choices == () and e.decoding.output_ids == []


def test_run_reaches_the_translation(registry):
    e = explorer(registry)
    steps = list(e.run())
    assert e.finished and steps[-1].finished
    assert e.snapshot().output_text == "einundzwanzig"


def test_a_link_restores_exactly_the_same_view(registry_on_device):
    e = explorer(
        registry_on_device, strategy="beam", beam_width=3, silenced=frozenset({("cross", 0, 1)}), layer=1, head=2
    )
    e.step()
    e.step(force=5)
    e.step()
    restored = Explorer(registry_on_device, ExplorerState.from_link(e.state.to_link()))
    assert restored.state == e.state
    assert restored.decoding.output_ids == e.decoding.output_ids
    torch.testing.assert_close(restored.snapshot().cross, e.snapshot().cross)


@pytest.mark.parametrize(
    "token, message",
    [("!!!", "damaged"), ("eyJ4IjogMX0", "unknown settings"), ("eyJiZWFtX3dpZHRoIjogOTl9", "beam width")],
)
def test_malformed_links_are_clear_errors(token, message):
    with pytest.raises(ExplorerError, match=message):
        ExplorerState.from_link(token)


def link_of(**values) -> str:
    """A link token holding exactly `values` (JSON), as a hand-made link would."""
    raw = json.dumps(values).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "values, message",
    [
        ({"model": 7}, "model must be a name"),
        ({"model": ["en-de"]}, "model must be a name"),
        ({"model": {"name": "en-de"}}, "model must be a name"),
        ({"model": None}, "model must be a name"),
        ({"choices": [True]}, "invalid forced token"),
        ({"choices": [1.5]}, "invalid forced token"),
        ({"causal_mask": "no"}, "causal_mask must be true or false"),
        ({"positions": 0}, "positions must be true or false"),
        ({"grid": "false"}, "grid must be true or false"),
        ({"layer": True}, "layer"),
        ({"temperature": "2"}, "temperature"),
        ({"silenced": [["cross", "0", 1]]}, "silenced head"),
        ({"family": ["cross"]}, "family"),
        ({"language": {"zh": 1}}, "language"),
    ],
)
def test_every_field_of_a_link_has_its_type(values, message):
    """Issue 36 §4: a model that was a number, a list, an object or null, a forced token `true`, or a mask `"no"`
    passed the checks and broke every component of the page (or switched the mask on)."""
    with pytest.raises(ExplorerError, match=message):
        ExplorerState.from_link(link_of(**values))


def test_a_link_nested_too_deep_is_a_clear_error():
    """Issue 36 §4: 5,000 nested lists raised a RecursionError from the JSON parser."""
    token = base64.urlsafe_b64encode(("[" * 5000 + "]" * 5000).encode()).decode()
    with pytest.raises(ExplorerError, match="damaged"):
        ExplorerState.from_link(token)


def test_changing_the_strategy_replays_forced_tokens_and_rechooses_the_rest(registry_on_device):
    e = explorer(registry_on_device)
    e.step(force=7)
    e.step()
    e.update(strategy="sampling", temperature=2.0, seed=3)
    assert e.state.choices[0] == 7 and len(e.state.choices) == 2
    assert e.decoding.output_ids[0] == 7


def test_causal_mask_off_lets_decoder_positions_see_the_future(registry_on_device):
    e = explorer(registry_on_device)
    list(e.run())
    on = e.snapshot().decoder_self
    e.update(causal_mask=False)
    off = e.snapshot().decoder_self
    upper = torch.ones(on.shape[-2:], dtype=torch.bool).triu(1)
    assert torch.all(on[..., upper] == 0)
    assert off[..., upper].sum() > 1.0  # attention mass on future positions (a trained model can put ~0 on some)


def test_padding_mask_off_lets_attention_reach_padding(registry):
    e = explorer(registry, pad_to=10)
    snapshot = e.snapshot()
    n_real = len(e.checkpoint.tokenizer.encode_source("twenty-one"))
    assert len(snapshot.source_tokens) == 10 and snapshot.source_tokens[-1] == "<pad>"
    assert torch.all(snapshot.cross[..., n_real:] == 0) and torch.all(snapshot.encoder[..., n_real:] == 0)
    e.update(padding_mask=False)
    assert torch.all(e.snapshot().cross[..., n_real:] > 0)


def test_silencing_heads_changes_the_translation_and_can_be_compared(registry_on_device):
    e = explorer(registry_on_device)
    config = e.checkpoint.model.config
    every_cross = frozenset(("cross", layer, head) for layer in range(config.n_decoder_layers) for head in range(4))
    e.update(silenced=every_cross)
    silenced_text, silenced_next = e.translate_to_end()
    plain_text, plain_next = e.translate_to_end(silenced=frozenset())
    assert plain_text == "einundzwanzig" and silenced_text != plain_text
    assert silenced_next != plain_next
    assert e.state.choices == ()  # comparing does not move this explorer


def test_views_have_the_shapes_of_the_model(registry_on_device):
    e = explorer(registry_on_device)
    e.step()
    e.step()
    v = e.snapshot()
    config = e.checkpoint.model.config
    S, T = len(v.source_tokens), len(v.target_tokens)
    assert T == 3 and v.target_tokens[0] == "<s>"
    assert v.encoder.shape == (config.n_encoder_layers, config.n_heads, S, S)
    assert v.decoder_self.shape == (config.n_decoder_layers, config.n_heads, T, T)
    assert v.cross.shape == (config.n_decoder_layers, config.n_heads, T, S)
    assert len(v.candidates) == 10 and v.candidates[0].prob >= v.candidates[1].prob


def test_force_text_accepts_pieces_and_rejects_unknown_text(registry):
    e = explorer(registry)
    piece = e.checkpoint.tokenizer.target_piece(e.decoding.upcoming()[1].token_id)
    assert e.force_text(piece) == "" and e.decoding.steps[-1].forced
    with pytest.raises(ExplorerError, match="not a token"):
        e.force_text("<script>")


def test_a_typed_word_that_is_several_tokens_is_forced_piece_by_piece(registry):
    e = explorer(registry)
    tokenizer = e.checkpoint.tokenizer
    pieces = tokenizer.target.processor.encode("siebenundneunzig", out_type=str)
    assert len(pieces) > 1  # not one token of numbers-de: split, then forced in order
    message = e.force_text("siebenundneunzig")
    assert [tokenizer.target_piece(i) for i in e.decoding.output_ids] == pieces
    assert all(step.forced for step in e.decoding.steps) and " · ".join(pieces) in message
    with pytest.raises(ExplorerError, match="output length limit leaves 1"):
        Explorer(registry, e.state.replace(choices=(), max_output_tokens=1)).force_text("siebenundneunzig")


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(source=""), "type a sentence"),
        (dict(source="x" * 501), "too long"),
        (dict(beam_width=9), "beam width"),
        (dict(strategy="magic"), "unknown strategy"),
        (dict(temperature=0.0), "temperature"),
        (dict(layer=7), "layer 7 does not exist"),
        (dict(silenced=frozenset({("cross", 0, 9)})), "head 9 does not exist"),
        (dict(model="Helsinki-NLP/opus-mt-xx-yy"), "opus-mt-xx-yy"),
    ],
)
def test_bad_settings_are_clear_errors(registry, settings, message):
    with pytest.raises(ExplorerError, match=message):
        Explorer(registry, ExplorerState(**{"model": "numbers-de", "source": "one", **settings}))


def test_shuffle_words_is_a_seeded_permutation():
    text = "the quick brown fox jumps"
    assert sorted(shuffle_words(text, 1).split()) == sorted(text.split())
    assert shuffle_words(text, 1) == shuffle_words(text, 1) != text


def test_a_rejected_change_leaves_the_explorer_as_it_was(registry):
    e = explorer(registry)
    e.step()
    before = (e.state, e.decoding.output_ids)
    with pytest.raises(ExplorerError, match="does not exist"):
        e.update(silenced=frozenset({("cross", 0, 99)}))
    with pytest.raises(ExplorerError, match="layer 9"):
        e.update(layer=9)
    assert (e.state, e.decoding.output_ids) == before
    e.step()  # and it still works


def test_teacher_forced_predictions_repeat_greedy_decoding_with_the_causal_mask(registry):
    e = explorer(registry)
    list(e.run())
    snapshot = e.snapshot()
    output = [e.checkpoint.tokenizer.target_piece(i) for i in e.decoding.output_ids]
    assert snapshot.predictions == output  # position i reads tokens 0…i and predicts token i + 1, as while decoding
    e.update(causal_mask=False)
    assert len(e.snapshot().predictions) == len(output)


def test_beam_search_uses_the_models_length_penalty():
    from explorer import ExplorerState
    from transformer.decoding import BeamSearch

    state = ExplorerState(model="en-de", source="Hello.", strategy="beam", beam_width=3)
    assert state.strategy_object(2.0) == BeamSearch(width=3, length_penalty=2.0)
    assert state.strategy_object() == BeamSearch(width=3, length_penalty=1.0)


def test_the_open_tab_travels_in_the_link_and_changes_nothing_else(registry):
    e = explorer(registry)
    e.step()
    choices = e.state.choices
    e.update(tab="positions")
    assert e.state.choices == choices and e.state.tab == "positions"  # a view change: nothing is replayed
    assert ExplorerState.from_link(e.state.to_link()).tab == "positions"
    with pytest.raises(ExplorerError, match="unknown view"):
        e.update(tab="<script>")
    assert e.state.tab == "positions"


def test_without_the_causal_mask_the_table_the_chart_and_step_agree(registry):
    e = explorer(registry, causal_mask=False)
    for _ in range(2):
        snapshot = e.snapshot()
        assert snapshot.predictions[-1] == snapshot.candidate_tokens[0]  # the last row is the next-token chart's pick
        e.step()
        assert e.checkpoint.tokenizer.target_piece(e.decoding.output_ids[-1]) == snapshot.candidate_tokens[0]


def test_an_untrained_twin_has_the_same_weights_on_every_device(registry, registry_on_device, device):
    """A twin's weights are drawn from its seed by NumPy on the CPU (`checkpoint.untrained_model`), then moved: the
    same bits whichever device the twin is loaded on; the Trained vs untrained view draws from there."""
    on_cpu, on_device = (r.get("numbers-de-untrained").model for r in (registry, registry_on_device))
    assert next(on_device.parameters()).device.type == device
    for (name, a), b in zip(on_cpu.state_dict().items(), on_device.state_dict().values(), strict=True):
        assert torch.equal(a, b.cpu()), name
    trained, untrained, report = render.twin_comparison(explorer(registry_on_device))
    assert trained is not None and untrained is not None and "Untrained twin:" in report


# A link made before the settings were declared once (issue 23, at cc9d810): every setting not at its default.
OLD_LINK = (
    "eyJtb2RlbCI6Im51bWJlcnMtZGUiLCJzb3VyY2UiOiJ0aHJlZSBodW5kcmVkIGFuZCBmb3J0eS10d28iLCJzdHJhdGVneSI6ImJlYW0iLCJ0ZW1wZXJh"
    "dHVyZSI6MS4wLCJ0b3BfayI6MCwidG9wX3AiOjEuMCwic2VlZCI6MCwiYmVhbV93aWR0aCI6MywibWF4X291dHB1dF90b2tlbnMiOjY0LCJjYXVzYWxf"
    "bWFzayI6ZmFsc2UsInBhZGRpbmdfbWFzayI6dHJ1ZSwicG9zaXRpb25zIjp0cnVlLCJwYWRfdG8iOjAsInNpbGVuY2VkIjpbWyJjcm9zcyIsMCwxXV0s"
    "ImNob2ljZXMiOltudWxsLDEyXSwiZmFtaWx5IjoiZGVjb2Rlcl9zZWxmIiwibGF5ZXIiOjEsImhlYWQiOm51bGwsImdyaWQiOnRydWUsInRhYiI6Imlu"
    "c2lkZSIsInZpZXciOiJmYW1pbGllcyIsInByZXNlbnRhdGlvbiI6dHJ1ZSwic3RhZ2UiOiJlbmNvZGVyLmZmbiIsInN0YWdlX2xheWVyIjoxLCJzdGFn"
    "ZV9oZWFkIjoxLCJzdGFnZV9wb3NpdGlvbiI6Mn0"
)


def test_a_link_made_before_the_tidy_opens_the_same_view():
    state = ExplorerState(
        model="numbers-de",
        source="three hundred and forty-two",
        strategy="beam",
        beam_width=3,
        causal_mask=False,
        silenced=frozenset({("cross", 0, 1)}),
        choices=(None, 12),
        family="decoder_self",
        layer=1,
        grid=True,
        tab="inside",
        view="families",
        presentation=True,
        stage="encoder.ffn",
        stage_layer=1,
        stage_head=1,
        stage_position=2,
    )
    assert ExplorerState.from_link(OLD_LINK) == state and state.to_link() == OLD_LINK


def test_back_says_what_it_took_off_when_the_output_shows_no_change(registry):
    """Issue 35: after a Run to the end, the first Back took off the end token and nothing on the page changed. Back
    says so when the piece it takes off shows nothing in the output (the end token, a bare word start "▁")."""
    e = explorer(registry)
    list(e.run())
    text = e.snapshot().output_text
    said = e.back()
    assert e.snapshot().output_text == text  # the end token shows nothing…
    assert said == "Back took off the end token </s>: the translation is not finished any more."  # …so it is said
    assert e.back() is None  # a piece that shows: the output says it
    tokenizer = e.checkpoint.tokenizer
    space = tokenizer.target.processor.piece_to_id("▁")
    assert tokenizer.target_piece(space) == "▁"
    e.step(force=space)
    assert e.back() == "Back took off “▁”, a piece that shows nothing in the output by itself."
