"""The page's settings as one object (ui.settings): from the controls' values to the user's explorer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from benchmarks import classroom
from explorer import Explorer, ExplorerError, ExplorerState, ModelRegistry
from ui.settings import RESTORED, Settings, restored_values, settle

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
PAGE_DEFAULTS = ("numbers-de", "twenty-one", "greedy", 1.0, 0, 1.0, 0, 4, 64, True, True, True, 0, [], "cross", 0,
                 "average", "heatmap", False, "decoder.self_attention", 0, 0, 0)  # fmt: skip


@pytest.fixture(scope="module")
def registry():
    return ModelRegistry(CHECKPOINTS)


def test_the_values_arrive_in_the_order_of_the_fields():
    settings = Settings.from_values(PAGE_DEFAULTS)
    assert settings.model == "numbers-de" and settings.head == "average" and settings.silenced == []
    assert len(Settings.names()) == len(PAGE_DEFAULTS)
    # the classroom benchmark sends the page's events its own settings, by name: the page's defaults
    student = classroom.Settings("numbers-de", "twenty-one")
    assert [student.value(name) for name in Settings.names()] == list(PAGE_DEFAULTS)


def test_the_controls_values_become_state_fields():
    values = dict(zip(Settings.names(), PAGE_DEFAULTS, strict=True))
    values.update(top_k=5.0, seed=None, head="all heads", silenced=["cross · layer 1 · head 2"], model=" numbers-de ")
    fields = Settings(**values).state_fields()
    assert fields["model"] == "numbers-de" and fields["top_k"] == 5 and fields["seed"] == 0
    assert fields["head"] is None and fields["grid"] is True
    assert fields["silenced"] == frozenset({("cross", 1, 2)})
    assert ExplorerState(**fields).grid


def test_settle_makes_an_explorer_then_changes_only_what_differs(registry):
    settings = Settings.from_values(PAGE_DEFAULTS)
    explorer, _ = settle(registry, None, settings)
    explorer.step()
    same, note = settle(registry, explorer, settings)
    assert same is explorer and len(same.state.choices) == 1 and not note  # nothing changed: the step stays
    wider, _ = settle(registry, explorer, dataclasses.replace(settings, layer=1))
    assert wider is explorer and wider.state.layer == 1 and len(wider.state.choices) == 1  # a view setting


def test_a_new_model_starts_from_its_first_layer_with_no_heads_silenced(registry):
    settings = dataclasses.replace(Settings.from_values(PAGE_DEFAULTS), silenced=["cross · layer 0 · head 1"], layer=1)
    explorer, _ = settle(registry, None, settings)
    assert explorer.state.silenced
    moved, note = settle(registry, explorer, dataclasses.replace(settings, model="numbers-de-untrained"))
    assert moved is not explorer and not moved.state.silenced and moved.state.layer == 0
    assert not note and moved.state.source == "twenty-one"  # a sentence the new model reads stays


def test_a_new_model_that_cannot_read_the_sentence_starts_from_its_own_example(registry):
    english = dataclasses.replace(Settings.from_values(PAGE_DEFAULTS), model="en-de", source="The weather is nice.")
    explorer, _ = settle(registry, None, english)
    moved, note = settle(registry, explorer, dataclasses.replace(english, model="numbers-de"))
    assert moved.state.source == registry.examples("numbers-de")[0][0] == "twenty-one"
    assert "numbers-de cannot read that sentence" in note and "'twenty-one'" in note


def test_a_bad_setting_raises_the_explorers_error(registry):
    with pytest.raises(ExplorerError):
        settle(registry, None, dataclasses.replace(Settings.from_values(PAGE_DEFAULTS), head="head 99"))


def test_a_shared_links_state_puts_back_every_control_a_refresh_does_not_set(registry):
    assert set(RESTORED) <= set(Settings.names())
    set_by_a_refresh = {"model", "silenced", "layer", "head", "stage_layer", "stage_head", "stage_position"}
    assert set(RESTORED) | set_by_a_refresh == set(Settings.names())
    state = Explorer(registry, ExplorerState("numbers-de", "ninety-seven", strategy="beam", pad_to=9)).state
    assert restored_values(state) == {name: getattr(state, name) for name in RESTORED}
    assert restored_values(state)["strategy"] == "beam" and restored_values(state)["pad_to"] == 9


def test_a_text_too_long_is_cut_after_a_whole_word_and_the_note_says_so(registry):
    """Issue 22: the browser cut a 3,000-character paste to 500 without a word, and a shorter one that was still
    too many pieces for the model gave an error. Now it is cut where both fit, after a whole word, and said so."""
    from ui.settings import within_limit

    assert within_limit(registry, "en-de", "Good morning.") == ("Good morning.", "")
    pasted = "The cat sleeps on the warm sofa. " * 100
    cut, note = within_limit(registry, "en-de", pasted)
    tokens = len(registry.get("en-de").tokenizer.encode_source(cut))
    assert len(cut) <= 500 and tokens <= 128 and pasted.startswith(cut) and pasted[len(cut)] == " "
    longer = pasted[: len(cut) + pasted[len(cut) + 1 :].index(" ") + 1]  # one more word does not fit
    assert len(longer) > 500 or len(registry.get("en-de").tokenizer.encode_source(longer)) > 128
    assert note.startswith("The text is too long (3,300 characters)") and "en-de at most 128 pieces" in note
    explorer, said = settle(registry, None, Settings.from_values(("en-de", pasted, *PAGE_DEFAULTS[2:])))
    assert explorer.state.source == cut and said == note
