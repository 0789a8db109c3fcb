"""The corpus's mix and splits (transformer.training.corpus.splitting): filter, deduplicate, cap, draw dev and
test, and keep them and the everyday set out of train."""

from __future__ import annotations

import pytest

from transformer.training.corpus.cleaning import norm_key
from transformer.training.corpus.sources import EN_DE
from transformer.training.corpus.splitting import Selection, is_held_out_candidate, make_corpus


def test_held_out_candidates_are_short_complete_sentences():
    assert is_held_out_candidate("Better late than never.", "Besser spät als nie.")
    assert not is_held_out_candidate("Go!", "Los!")  # fewer than 3 words
    assert not is_held_out_candidate("to be late", "zu spät kommen")  # not a sentence
    assert not is_held_out_candidate("My congratulations to …!", "Ich gratuliere zu …!")  # a gap to fill
    long = " ".join(["word"] * 15) + " end."
    assert not is_held_out_candidate(long.capitalize(), "Ein Satz mit Wörtern.")


def _raw_corpus() -> dict[str, list[tuple[str, str]]]:
    """60 Ding sentences (one duplicated), a phrase, and help/UI text that repeats some of them."""
    ding = [(f"The house number {i} is red.", f"Das Haus Nummer {i} ist rot.") for i in range(60)]
    ding.append(("The house number 7 is red!", "Das Haus Nummer 7 ist rot!"))  # a duplicate up to punctuation
    ding.append(("He has bats in the belfry and more words than fifteen in this very long sentence.", "Er spinnt."))
    return {
        "ding-sentences": ding,
        "ding-phrases": [("to be late", "zu spät kommen")],
        "ui-catalogs": [
            *[(english, f"Ein anderes deutsches Haus {i}.") for i, (english, _) in enumerate(ding[:60])],
            ("Open the file", "Datei öffnen"),  # not a sentence: dropped from help/UI text
            ("Could not open %s.", "Konnte nicht geöffnet werden."),  # placeholders differ
            ("Click OK to close the dialog.", "Klicken Sie auf OK, um den Dialog zu schließen."),
        ],
        "libreoffice-help": [(f"Choose item {i} in the menu.", f"Wählen Sie Eintrag {i} im Menü.") for i in range(10)],
    }


def _selections(**changed: Selection) -> dict[str, Selection]:
    """en-de's selections, with libreoffice-help capped at 4 pairs (and any other change named)."""
    return {**EN_DE.selections(), "libreoffice-help": Selection(sentences_only=True, cap=4), **changed}


def _corpus(seed: int = 0):
    return make_corpus(
        _raw_corpus(), seed, selections=_selections(), held_out_source="ding-sentences", dev_size=5, test_size=6
    )


def test_make_corpus_filters_deduplicates_and_caps():
    splits, stats = _corpus()
    assert stats["ding-sentences"].extracted == 62
    assert stats["ding-sentences"].rejected == {"length ratio": 1}
    assert stats["ding-sentences"].kept == 61 and stats["ding-sentences"].unique == 60  # "number 7 … red!" is a dup
    assert stats["ui-catalogs"].rejected == {"not a sentence": 1, "placeholders differ": 1}
    assert stats["libreoffice-help"].unique == 10 and stats["libreoffice-help"].used == 4
    assert ("to be late", "zu spät kommen") in splits["train"]
    assert ("Click OK to close the dialog.", "Klicken Sie auf OK, um den Dialog zu schließen.") in splits["train"]
    help_in_train = [pair for pair in splits["train"] if pair[0].startswith("Choose item")]
    assert len(help_in_train) == 4
    all_pairs = [pair for split in splits.values() for pair in split]
    assert len({(norm_key(e), norm_key(g)) for e, g in all_pairs}) == len(all_pairs)


def test_make_corpus_draws_dev_and_test_from_ding_sentences_only_with_no_overlap_in_train():
    splits, stats = _corpus()
    assert len(splits["dev"]) == 5 and len(splits["test"]) == 6
    ding = set(_raw_corpus()["ding-sentences"])
    held_out = splits["dev"] + splits["test"]
    assert all(pair in ding for pair in held_out)
    held_out_english = {norm_key(e) for e, _ in held_out}
    held_out_german = {norm_key(g) for _, g in held_out}
    assert len(held_out_english) == len(held_out_german) == 11  # no side repeated between dev and test
    for english, german in splits["train"]:
        assert norm_key(english) not in held_out_english and norm_key(german) not in held_out_german
    # each held-out English sentence also came with another German translation from the UI catalogs: removed
    assert stats["ui-catalogs"].held_out_overlap == 11
    assert stats["ding-sentences"].splits == {"train": 49, "dev": 5, "test": 6}


def test_make_corpus_keeps_the_everyday_set_out_of_train_and_repeats_a_source():
    raw = _raw_corpus()
    far = ("My sister bought a red bike yesterday.", "Meine Schwester hat gestern ein rotes Fahrrad gekauft.")
    near = (  # the dev sentence with one word changed: 9 of 11 words shared (Jaccard 0.82)
        "My little sister bought a new red bike in town yesterday.",
        "Meine kleine Schwester hat gestern in der Stadt ein neues rotes Fahrrad gekauft.",
    )
    raw["authored"] = [far, near, ("We eat soup on Mondays.", "Montags essen wir Suppe.")]
    everyday_dev = [
        (
            "My little sister bought a new blue bike in town yesterday.",
            "Meine kleine Schwester hat gestern in der Stadt ein neues blaues Fahrrad gekauft.",
        )
    ]
    everyday_test = [("The pharmacy opens at half past eight.", "Die Apotheke öffnet um halb neun.")]
    splits, stats = make_corpus(
        raw,
        0,
        selections={"authored": Selection(max_words=25, repeat=3)},
        held_out_source="ding-sentences",
        dev_size=5,
        test_size=6,
        everyday=(everyday_dev, everyday_test),
    )
    assert splits["everyday-dev"] == everyday_dev and splits["everyday-test"] == everyday_test
    assert stats["authored"].everyday_overlap == 1 and near not in splits["train"]
    assert splits["train"].count(("We eat soup on Mondays.", "Montags essen wir Suppe.")) == 3
    assert far in splits["train"]  # 6 of 11 English words shared (Jaccard 0.55): kept
    assert stats["authored"].splits["train"] == 2  # distinct pairs
    assert stats["authored"].words == [12, 12]  # the distinct train pairs' words, per side, counted once


def test_make_corpus_is_deterministic_in_the_seed():
    assert _corpus(seed=0) == _corpus(seed=0)
    assert _corpus(seed=0)[0]["test"] != _corpus(seed=1)[0]["test"]


def test_make_corpus_says_when_there_are_too_few_held_out_candidates():
    with pytest.raises(ValueError, match="held-out candidates"):
        make_corpus(_raw_corpus(), 0, selections={}, held_out_source="ding-sentences", dev_size=40, test_size=40)
