"""The page's settings (ui.settings): declared once by `ExplorerState`, read from the controls' values, shown back."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks import classroom
from explorer import Explorer, ExplorerError, ExplorerState
from explorer.session import with_settings, within_limit
from ui.settings import (
    DEFAULTS,
    NAMES,
    Settings,
    control_values,
    head_choice,
    head_label,
    parse_head,
    parse_head_ref,
    silenced_choices,
    silenced_options,
)
from ui.tabs.positions import chosen_dimensions

# What the page's controls send when it opens on numbers-de, in the order of its events' inputs.
PAGE_VALUES = ("numbers-de", "twenty-one", "greedy", 1.0, 0, 1.0, 0, 4, 64, True, True, True, 0, [], "cross", 0,
               "average", "heatmap", False, "decoder.self_attention", 0, 0, 0, "", "en")  # fmt: skip


def page_settings(**changes) -> Settings:
    return Settings.from_values(PAGE_VALUES).replace(**changes)


def test_the_settings_are_the_states_fields_that_a_control_sets_in_their_order():
    fields = [field.name for field in dataclasses.fields(ExplorerState)]
    assert list(NAMES) == [name for name in fields if name not in ("choices", "grid", "tab")]
    assert len(NAMES) == len(PAGE_VALUES)
    settings = Settings.from_values(PAGE_VALUES)
    assert settings["model"] == "numbers-de" and settings["head"] == "average" and settings["silenced"] == []
    with pytest.raises(ValueError):
        Settings.from_values(PAGE_VALUES[:-1])  # a value missing: never read into the wrong setting


def test_each_controls_first_value_is_the_states_default():
    assert control_values(ExplorerState()) == DEFAULTS and DEFAULTS["head"] == "average"
    assert {name: value for name, value in DEFAULTS.items() if name not in ("model", "source")} == dict(
        zip(NAMES[2:], PAGE_VALUES[2:], strict=True)
    )
    # the classroom benchmark sends the page's events its students' settings, by name, and the defaults for the rest
    student = classroom.Settings("numbers-de", "twenty-one")
    assert [student.value(name) for name in NAMES] == list(PAGE_VALUES)


def test_the_controls_values_become_state_fields():
    fields = page_settings(
        top_k=5.0, seed=None, head="all heads", silenced=["cross · layer 1 · head 2"], model=" numbers-de "
    ).state_fields()
    assert fields["model"] == "numbers-de" and fields["top_k"] == 5 and type(fields["top_k"]) is int
    assert fields["seed"] == 0  # an empty number box: the default
    assert fields["head"] is None and fields["grid"] is True
    assert fields["silenced"] == frozenset({("cross", 1, 2)})
    state = ExplorerState(**fields)
    assert state.grid and control_values(state)["head"] == "all heads"
    assert control_values(state)["silenced"] == ["cross-attention · layer 1 · head 2"]


def test_a_value_that_is_no_number_is_the_explorers_error():
    with pytest.raises(ExplorerError, match="top k must be a number"):
        page_settings(top_k="many").state_fields()


def test_a_switch_takes_true_or_false_only():
    """Issue 36 §4: `causal_mask: "no"` through the API switched the mask on (bool("no") is True)."""
    for value in ("no", "false", 0, "off"):
        with pytest.raises(ExplorerError, match="causal mask must be true or false"):
            page_settings(causal_mask=value).state_fields()
    assert page_settings(causal_mask=False).state_fields()["causal_mask"] is False
    with pytest.raises(ExplorerError, match=r"top k must be a number, not 'xxxxx.*…$"):  # what was sent, cut short
        page_settings(top_k="x" * 5000).state_fields()


def test_head_choices_round_trip():
    assert parse_head("average") == (None, False)
    assert parse_head("all heads") == (None, True)
    assert parse_head("head 3") == (3, False)
    assert head_choice(ExplorerState(head=3)) == "head 3"
    with pytest.raises(ExplorerError):
        parse_head("head x")


def test_one_parser_reads_a_head_as_the_page_and_as_the_api_write_it(registry):
    assert parse_head_ref(head_label(("cross", 1, 2))) == ("cross", 1, 2)
    assert parse_head_ref("cross:1:2") == parse_head_ref(" cross : 1 : 2 ") == ("cross", 1, 2)
    assert parse_head_ref("decoder_self · layer 10 · head 7") == ("decoder_self", 10, 7)
    for bad in ("cross", "cross:1", "cross:1:2:3", "cross · layer x · head 1", "cross:1:-2", ""):
        with pytest.raises(ExplorerError, match="family:layer:head"):
            parse_head_ref(bad)
    explorer = Explorer(registry, ExplorerState("numbers-de", "twenty-one"))
    config, labels = explorer.checkpoint.model.config, silenced_choices(explorer)
    assert len(labels) == (config.n_encoder_layers + 2 * config.n_decoder_layers) * config.n_heads
    assert len({parse_head_ref(label) for label in labels}) == len(labels)  # every head, each once


def settings_applied(registry, explorer, settings: Settings):
    """The explorer with the page's `settings` (`explorer.session.with_settings`, given their state's fields)."""
    return with_settings(registry, explorer, settings.state_fields())


def test_settings_make_an_explorer_then_change_only_what_differs(registry):
    settings = page_settings()
    explorer, _ = settings_applied(registry, None, settings)
    explorer.step()
    same, note = settings_applied(registry, explorer, settings)
    assert same is explorer and len(same.state.choices) == 1 and not note  # nothing changed: the step stays
    wider, _ = settings_applied(registry, explorer, settings.replace(layer=1))
    assert wider is explorer and wider.state.layer == 1 and len(wider.state.choices) == 1  # a view setting


def test_a_new_model_starts_from_its_first_layer_with_no_heads_silenced(registry):
    settings = page_settings(silenced=["cross · layer 0 · head 1"], layer=1)
    explorer, _ = settings_applied(registry, None, settings)
    assert explorer.state.silenced
    moved, note = settings_applied(registry, explorer, settings.replace(model="numbers-de-untrained"))
    assert moved is not explorer and not moved.state.silenced and moved.state.layer == 0
    assert not note and moved.state.source == "twenty-one"  # a sentence the new model reads stays


def test_a_new_model_that_cannot_read_the_sentence_starts_from_its_own_example(registry):
    english = page_settings(model="en-de", source="The weather is nice.")
    explorer, _ = settings_applied(registry, None, english)
    moved, note = settings_applied(registry, explorer, english.replace(model="numbers-de"))
    assert moved.state.source == registry.examples("numbers-de")[0][0] == "twenty-one"
    assert "numbers-de cannot read that sentence" in note and "'twenty-one'" in note


def test_a_bad_setting_raises_the_explorers_error(registry):
    with pytest.raises(ExplorerError):
        settings_applied(registry, None, page_settings(head="head 99"))


def test_a_text_too_long_is_cut_after_a_whole_word_and_the_note_says_so(registry):
    """Issue 22: the browser cut a 3,000-character paste to 500 without a word, and a shorter one that was still
    too many pieces for the model gave an error. Now it is cut where both fit, after a whole word, and said so."""

    assert within_limit(registry, "en-de", "Good morning.") == ("Good morning.", "")
    pasted = "The cat sleeps on the warm sofa. " * 100
    cut, note = within_limit(registry, "en-de", pasted)
    tokens = len(registry.get("en-de").tokenizer.encode_source(cut))
    assert len(cut) <= 500 and tokens <= 128 and pasted.startswith(cut) and pasted[len(cut)] == " "
    longer = pasted[: len(cut) + pasted[len(cut) + 1 :].index(" ") + 1]  # one more word does not fit
    assert len(longer) > 500 or len(registry.get("en-de").tokenizer.encode_source(longer)) > 128
    assert note.startswith("The text is too long (3,300 characters)") and "en-de at most 128 pieces" in note
    explorer, said = settings_applied(registry, None, page_settings(model="en-de", source=pasted))
    assert explorer.state.source == cut and said == note


def test_dimensions_that_cannot_be_shown_are_named_in_a_note():
    """Issue 22: "abc, 999" was ignored without a word."""
    assert chosen_dimensions("0, 1 10", 256) == ([0, 1, 10], "")
    assert chosen_dimensions("", 256) == ([], "")
    dims, note = chosen_dimensions("abc, 999", 256)
    assert dims == [] and note == (
        "Left out: “abc” is not a whole number; 999 is not between 0 and 255 (this model has 256 dimensions). "
        "Showing the default four."
    )
    dims, note = chosen_dimensions("3, x, y, -1", 256)
    assert dims == [3] and "“x”, “y” are not whole numbers; -1 is not between" in note and note.endswith("Showing 3.")
    # Issue 36 §4: "²" is a digit to str.isdigit (and int() failed on it), and int() reads no 5,000-digit number
    dims, note = chosen_dimensions("2, ², " + "9" * 5000, 256)
    assert dims == [2] and "“²”" in note and "not whole numbers" in note


def test_a_silenced_head_checkbox_is_named_in_words_in_each_language_and_read_back_in_any(registry):
    """Issue 35: the English checkboxes read "decoder_self · layer 0 · head 0" (a name from the code), and the Chinese
    ones showed that English name when the pointer rested on them (a checkbox's title is its value). The value is the
    caption in the page's language, read back whatever the language of the page that drew it."""
    from explorer.i18n import speaking

    explorer = Explorer(registry, ExplorerState("numbers-de", "twenty-one"))
    for language, first in (
        ("en", "encoder self-attention · layer 0 · head 0"),
        ("zh", "编码器自注意力 · 第 0 层 · 头 0"),
    ):
        with speaking(language):
            options = silenced_options(explorer)
        assert options[0] == (first, first)
        assert all(label == value and "_" not in label for label, value in options)
        assert [parse_head_ref(value) for _label, value in options] == [
            parse_head_ref(c) for c in silenced_choices(explorer)
        ]
        with speaking(language):
            assert control_values(ExplorerState(silenced=frozenset({("encoder", 0, 0)})))["silenced"] == [first]


def test_a_toy_models_unknown_spaces_and_cut_are_named(registry):
    """Issue 35: "1 2 3 4 5 6 7" typed for the trained reverse model: its spaces are pieces it does not know, named
    visibly (the note said it did not know “”), and the cut is said in terms of pieces (not "too long (13
    characters)")."""
    from transformer.training.live import LiveRun, LiveSetup
    from ui.sentence import named_piece

    assert named_piece("▁") == "a space (▁)" and named_piece("▁the") == "“the”" and named_piece("x") == "“x”"
    checkpoint = LiveRun(LiveSetup(task="reverse", layers=1, heads=2, d_model=32, batch_size=16, seed=3)).checkpoint()

    class One:  # a registry of the one toy model
        def get(self, name):
            return checkpoint

    positions = checkpoint.model.config.max_positions
    cut, note = within_limit(One(), "reverse", "1 2 3 4 5 6 7")
    assert len(checkpoint.tokenizer.encode_source(cut)) <= positions < 14
    assert note.startswith(f"reverse reads at most {positions} pieces, and this text is 14: it was cut after “…")
