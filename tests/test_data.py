"""The corpus builder on tiny fixtures: extractors, cleaning, filters, dedup, splits, files. No downloads."""

from __future__ import annotations

import io
import shutil
import unicodedata
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo

from transformer.training import data
from transformer.training.data import (
    catalog_pairs,
    clean_text,
    ddtp_pairs,
    ding_kind,
    ding_lexicon,
    ding_pairs,
    help_page_pairs,
    is_held_out_candidate,
    load_corpus,
    make_corpus,
    mallard_pairs,
    norm_key,
    placeholders,
    read_pairs,
    reject_reason,
    strip_accelerators,
    write_pairs,
)

FIXTURES = Path(__file__).parent / "fixtures" / "data"


# --- cleaning and filters ---------------------------------------------------------------------------------------------


def test_clean_text_normalises_unicode_apostrophes_ellipses_and_whitespace():
    decomposed = unicodedata.normalize("NFD", "schön")
    assert decomposed != "schön"
    assert clean_text(f"  Das  ist\u00a0{decomposed}\n !") == "Das ist schön!"
    assert clean_text("I’ve got it...") == "I've got it…"
    assert clean_text("Mon\u00adday") == "Monday"  # soft hyphen


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("_File", "File"),
        ("~Save Anyway", "Save Anyway"),
        ("&File", "File"),
        ("Sample _Average", "Sample Average"),
        ("Stichproben_mittelwert", "Stichprobenmittelwert"),
        ("Date&Time", "Date&Time"),  # `&` inside a word is not an accelerator
        ("gimp_image_new", "gimp_image_new"),  # several marks: an identifier, left alone (and filtered later)
        ("Drag & Drop", "Drag & Drop"),
    ],
)
def test_strip_accelerators(text, expected):
    assert strip_accelerators(text) == expected


def test_placeholders_finds_format_specifiers_but_not_percent_words_or_prices():
    text = "%s %d %0.2f %(name)s %1 %1$s {0} {} $(ARG1) $1 %ENGLISHUSLOCALE"
    assert placeholders(text) == sorted(text.split())
    assert placeholders("Ein 5%-iger Anstieg, 100%ig sicher, $30,000 and 50% off.") == []


@pytest.mark.parametrize(
    ("english", "german", "reason"),
    [
        ("Better late than never.", "Besser spät als nie.", None),
        ("", "Leer.", "empty side"),
        (" ".join(["word"] * 21), "Ein Satz.", "more than 20 words"),
        ("He's peeved.", "Ihm ist eine Laus über die Leber gelaufen, und zwar gewaltig heute.", "length ratio"),
        ("Open the file.", "open the file", "untranslated (de == en)"),
        ("Could not open %s.", "Konnte nicht geöffnet werden.", "placeholders differ"),
        ("Could not open %s.", "%s konnte nicht geöffnet werden.", None),
        ("Could not open {0}.", "{0} konnte nicht geöffnet werden.", None),
        ("Use gimp_image_new here.", "Benutzen Sie hier gimp_image_new.", "markup or code"),
        ("See https://example.org now.", "Siehe https://example.org jetzt.", "markup or code"),
        ("Files in /etc/dconf/db are read.", "Dateien in /etc/dconf/db werden gelesen.", "markup or code"),
        ("1 2 3", "4 5 6", "no letters"),
    ],
)
def test_reject_reason(english, german, reason):
    assert reject_reason(english, german) == reason


def test_norm_key_ignores_case_punctuation_and_spacing():
    assert norm_key("Better  late than NEVER!") == norm_key("better late, than never.") == "better late than never"


def test_held_out_candidates_are_short_complete_sentences():
    assert is_held_out_candidate("Better late than never.", "Besser spät als nie.")
    assert not is_held_out_candidate("Go!", "Los!")  # fewer than 3 words
    assert not is_held_out_candidate("to be late", "zu spät kommen")  # not a sentence
    assert not is_held_out_candidate("My congratulations to …!", "Ich gratuliere zu …!")  # a gap to fill
    long = " ".join(["word"] * 15) + " end."
    assert not is_held_out_candidate(long.capitalize(), "Ein Satz mit Wörtern.")


# --- extractors ------------------------------------------------------------------------------------------------------


def test_ding_pairs_split_sub_entries_one_to_one_and_strip_editorial_marks():
    pairs = list(ding_pairs((FIXTURES / "de-en").read_text(encoding="utf-8")))
    assert pairs == [
        ("eel", "Aal"),
        ("eels", "Aale"),
        ("to backbite", "über andere lästern"),  # the `;` inside {backbit; backbitten} is not an alternative
        ("to be late", "zu spät kommen"),
        ("Better late than never.", "Besser spät als nie."),
        ("to litter", "Abfall verstreuen"),
        ("Please keep the lawn clean!", "Bitte halten Sie den Rasen sauber!"),  # first `;` alternative, no [Schw.]
        ("Has the mail come yet?", "Ist die Post schon da?"),  # come/arrived -> come
        ("He has bats in the belfry.", "Er hat einen Vogel."),
        ("modification", "Abänderung"),  # {f} and (to sth.) removed
        ("to make a modification", "eine Abänderung vornehmen"),
    ]  # the ` / ` line and the line with 3 German but 2 English sub-entries are skipped


def test_ding_kind():
    assert ding_kind("Better late than never.", "Besser spät als nie.") == "sentence"
    assert ding_kind("to make a modification", "eine Abänderung vornehmen") == "phrase"
    assert ding_kind("to be late", "zu spät kommen") == "phrase"
    assert ding_kind("to litter", "Abfall verstreuen") == "term"
    assert ding_kind("database management system", "Datenbankmanagementsystem") == "term"


def test_help_page_pairs_match_paragraphs_by_id():
    english = (FIXTURES / "help-en.html").read_text(encoding="utf-8")
    german = (FIXTURES / "help-de.html").read_text(encoding="utf-8")
    assert help_page_pairs(english, german) == [
        ("Adding Exceptions to the AutoCorrect List", "Hinzufügen von Ausnahmen zur AutoKorrektur-Liste"),
        (
            "You can prevent AutoCorrect from correcting specific abbreviations.",
            "Sie können verhindern, dass AutoKorrektur bestimmte Abkürzungen korrigiert.",
        ),
        # the Mac variant of the switch is skipped, the default kept; <br> is a space
        (
            "Choose Tools - Options - Load/Save. Then click OK.",
            "Wählen Sie Extras – Optionen – Laden/Speichern. Klicken Sie dann auf OK.",
        ),
    ]  # in English order; paragraphs in one language only, embedded copies without an id and <script> are skipped


def _mo(messages: list[tuple], fuzzy: tuple[str, ...] = ()) -> bytes:
    catalog = Catalog(locale="de")
    for message in messages:
        msgid, msgstr, *context = message
        catalog.add(msgid, msgstr, context=context[0] if context else None, flags=("fuzzy",) if msgid in fuzzy else ())
    buffer = io.BytesIO()
    write_mo(buffer, catalog)  # like msgfmt: fuzzy entries are left out
    return buffer.getvalue()


def test_catalog_pairs_read_mo_and_clean_ui_strings():
    mo = _mo(
        [
            ("_Open the file", "Datei ö_ffnen"),
            ("~Save Anyway", "Trotzdem ~Speichern"),
            ("<b>Drag</b> to create a spiral.", "<b>Ziehen</b> erstellt eine Spirale."),
            ("Top &amp; bottom", "Oben &amp; unten"),
            ("%PRODUCTNAME could not start.", "%PRODUCTNAME konnte nicht starten."),
            ("Delete", "Löschen", "menu"),
            ("Untranslated string", ""),
            ("Fuzzy string", "Unscharfe Zeichenkette"),
            (("%d file", "%d files"), ("%d Datei", "%d Dateien")),
        ],
        fuzzy=("Fuzzy string",),
    )
    assert catalog_pairs(mo) == [
        ("LibreOffice could not start.", "LibreOffice konnte nicht starten."),
        ("Drag to create a spiral.", "Ziehen erstellt eine Spirale."),
        ("Delete", "Löschen"),
        ("Top & bottom", "Oben & unten"),
        ("Open the file", "Datei öffnen"),
        ("Save Anyway", "Trotzdem Speichern"),
    ]  # .mo files are sorted by (context +) msgid; header, untranslated, fuzzy and plural entries are skipped


def test_mallard_pairs_zip_blocks_in_document_order():
    english = (FIXTURES / "mallard-C.page").read_bytes()
    german = (FIXTURES / "mallard-de.page").read_bytes()
    assert mallard_pairs(english, german) == [
        (
            "Ignore quickly-repeated key presses of the same key.",
            "Schnell wiederholtes Drücken derselben Tasten ignorieren.",
        ),
        ("Turn on bounce keys", "Tastenprellung einschalten"),
        (
            "Turn on bounce keys to ignore key presses that are rapidly repeated.",
            "Schalten Sie die Tastenprellung ein, um schnell wiederholte Tastendrücke zu ignorieren.",
        ),
        ("Click on Settings.", "Klicken Sie auf Einstellungen."),
        (
            "You can turn bounce keys on and off by clicking the accessibility icon.",
            "Sie können die Tastenprellung ein- und ausschalten, indem Sie auf das Barrierefreiheitssymbol klicken.",
        ),
    ]  # translator credits are not blocks


def test_mallard_pairs_skip_a_page_whose_block_counts_differ():
    english = (FIXTURES / "mallard-C.page").read_text(encoding="utf-8")
    german = (
        (FIXTURES / "mallard-de.page")
        .read_text(encoding="utf-8")
        .replace("<title>Tastenprellung einschalten</title>", "")
    )
    assert mallard_pairs(english.encode(), german.encode()) == []


def test_ding_lexicon_keeps_common_short_terms_one_per_english_term_headwords_first():
    violin = (
        "Musikinstrument {n} | Geige {f} :: musical instrument | violin\n"
        "Violine {f} | Violinen {pl} :: violin | violins\n"
    )
    lexicon = ding_lexicon((FIXTURES / "de-en").read_text(encoding="utf-8") + violin)
    assert ("eel", "Aal") in lexicon and ("eels", "Aale") in lexicon  # tags and marks stripped
    assert ("modification", "Abänderung") in lexicon  # "(to sth.)" is editorial
    # "violin" is first a sub-entry (Geige), then the headword of its own entry (Violine): the headword wins
    assert ("violin", "Violine") in lexicon and ("violin", "Geige") not in lexicon
    assert ("musical instrument", "Musikinstrument") in lexicon
    englishes = [english for english, _ in lexicon]
    assert "to backbite" not in englishes  # a rare word (wordfreq Zipf 1.3)
    assert "to be late" not in englishes and "Better late than never." not in englishes  # phrases and sentences
    assert len(englishes) == len(set(englishes))


def test_ding_lexicon_frequency_floor_is_a_parameter():
    text = (FIXTURES / "de-en").read_text(encoding="utf-8")
    assert ("to backbite", "über andere lästern") in ding_lexicon(text, min_zipf=(0.0, 0.0))
    assert ding_lexicon(text, min_zipf=(9.0, 0.0)) == []


def test_ddtp_pairs_match_descriptions_by_md5_and_zip_sentences_of_running_text():
    english = (FIXTURES / "Translation-en").read_text(encoding="utf-8")
    german = (FIXTURES / "Translation-de").read_text(encoding="utf-8")
    assert ddtp_pairs(english, german) == [
        (
            "Tea Timer counts down the minutes while your tea brews.",
            "Tea Timer zählt die Minuten herunter, während Ihr Tee zieht.",
        ),
        ("It rings when the tea is ready.", "Er klingelt, wenn der Tee fertig ist."),
        ("This package contains the program.", "Dieses Paket enthält das Programm."),
    ]  # the list paragraph is verbatim text; "Most people …" has two sentences, its German one; one is untranslated


def test_read_sources_on_a_tree_laid_out_like_the_packages(tmp_path):
    layout = {
        "trans-de-en/usr/share/trans/de-en": "de-en",
        "libreoffice-help-en-us/usr/share/libreoffice/help/en-US/text/shared/page.html": "help-en.html",
        "libreoffice-help-de/usr/share/libreoffice/help/de/text/shared/page.html": "help-de.html",
        "gnome-user-docs/usr/share/help/C/gnome-help/page.page": "mallard-C.page",
        "gnome-user-docs/usr/share/help/de/gnome-help/page.page": "mallard-de.page",
        "gnome-mines/usr/share/help/C/gnome-mines/index.page": "mallard-C.page",
        "gnome-mines/usr/share/help/de/gnome-mines/index.page": "mallard-de.page",
        "gnome-mines/usr/share/help/C/gnome-mines/untranslated.page": "mallard-C.page",
        "ddtp/Translation-en": "Translation-en",
        "ddtp/Translation-de": "Translation-de",
    }
    for target, fixture in layout.items():
        (tmp_path / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / fixture, tmp_path / target)
    catalog = tmp_path / "inkscape/usr/share/locale/de/LC_MESSAGES/inkscape.mo"
    catalog.parent.mkdir(parents=True)
    catalog.write_bytes(_mo([("_Open the file", "Datei ö_ffnen")]))
    other_language = tmp_path / "inkscape/usr/share/locale/fr/LC_MESSAGES/inkscape.mo"
    other_language.parent.mkdir(parents=True)
    other_language.write_bytes(_mo([("Close", "Fermer")]))

    authored = tmp_path / "authored"
    authored.mkdir()
    (authored / "food.tsv").write_text("I like soup.\tIch mag Suppe.\tfood\tpresent\n", encoding="utf-8")
    raw, notes = data.read_sources(tmp_path, authored)
    assert raw["authored"] == [("I like soup.", "Ich mag Suppe.")]
    assert ("eel", "Aal") in raw["ding-lexicon"]
    assert raw["gnome-app-help"] == raw["gnome-help"]  # the same page, from an application's package
    assert notes["gnome-app-help"] == ["1 of 2 pages aligned (same number of blocks in C and de)"]
    assert len(raw["ddtp"]) == 3
    assert raw["ding-sentences"][0] == ("Better late than never.", "Besser spät als nie.")
    assert len(raw["ding-sentences"]) == 4 and len(raw["ding-phrases"]) == 2  # terms are not used
    assert len(raw["libreoffice-help"]) == 3
    assert raw["ui-catalogs"] == [("Open the file", "Datei öffnen")]  # German catalogs only
    assert len(raw["gnome-help"]) == 5
    assert notes["gnome-help"] == ["1 of 1 pages aligned (same number of blocks in C and de)"]


# --- filter, deduplicate, cap, split ---------------------------------------------------------------------------------


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


def _corpus(seed: int = 0):
    return make_corpus(_raw_corpus(), seed, caps={"libreoffice-help": 4}, dev_size=5, test_size=6)


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
        raw, 0, caps={}, dev_size=5, test_size=6, everyday=(everyday_dev, everyday_test), repeat={"authored": 3}
    )
    assert splits["everyday-dev"] == everyday_dev and splits["everyday-test"] == everyday_test
    assert stats["authored"].everyday_overlap == 1 and near not in splits["train"]
    assert splits["train"].count(("We eat soup on Mondays.", "Montags essen wir Suppe.")) == 3
    assert far in splits["train"]  # 6 of 11 English words shared (Jaccard 0.55): kept
    assert stats["authored"].splits["train"] == 2  # distinct pairs


def test_make_corpus_is_deterministic_in_the_seed():
    assert _corpus(seed=0) == _corpus(seed=0)
    assert _corpus(seed=0)[0]["test"] != _corpus(seed=1)[0]["test"]


def test_make_corpus_says_when_there_are_too_few_held_out_candidates():
    with pytest.raises(ValueError, match="held-out candidates"):
        make_corpus(_raw_corpus(), 0, dev_size=40, test_size=40)


# --- files -----------------------------------------------------------------------------------------------------------


PAIRS = [("Better late than never.", "Besser spät als nie."), ("Where is the station?", "Wo ist der Bahnhof?")]


@pytest.mark.parametrize("name", ["pairs.tsv", "pairs.tsv.gz"])
def test_write_and_read_pairs_round_trip(tmp_path, name):
    write_pairs(tmp_path / name, PAIRS)
    assert read_pairs(tmp_path / name) == PAIRS


def test_gzip_output_is_byte_identical(tmp_path):
    write_pairs(tmp_path / "a.tsv.gz", PAIRS)
    write_pairs(tmp_path / "b.tsv.gz", PAIRS)
    assert (tmp_path / "a.tsv.gz").read_bytes() == (tmp_path / "b.tsv.gz").read_bytes()


def test_write_pairs_refuses_tabs_and_read_pairs_refuses_lines_without_one(tmp_path):
    with pytest.raises(ValueError, match="tab or newline"):
        write_pairs(tmp_path / "x.tsv", [("a\tb", "c")])
    (tmp_path / "bad.tsv").write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected one tab"):
        read_pairs(tmp_path / "bad.tsv")


def test_write_corpus_and_load_corpus(tmp_path):
    splits, stats = _corpus()
    copyright_file = tmp_path / "copyright"
    copyright_file.write_text("License: GPL-2+\n", encoding="utf-8")
    card = data.data_card(splits, stats, {}, {"trans-de-en": "1.9-6"}, seed=0)
    data.write_corpus(tmp_path / "out", splits, card, {"trans-de-en.copyright": copyright_file})
    assert load_corpus(tmp_path / "out") == splits
    assert (tmp_path / "out/licenses/trans-de-en.copyright").read_text(encoding="utf-8") == "License: GPL-2+\n"
    assert "GPL-2+" in (tmp_path / "out/licenses/NOTICE.md").read_text(encoding="utf-8")
    card_text = (tmp_path / "out/DATA_CARD.md").read_text(encoding="utf-8")
    assert "python -m transformer.training.data build --out data/en-de --seed 0" in card_text
    assert f"| train | {len(splits['train']):,} |" in card_text


def test_licence_files_include_the_common_licence_texts(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "COMMON_LICENCES_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="GPL-2"):
        data.licence_files(tmp_path / "x", ["trans-de-en"])
    for name in data.COMMON_LICENCES:
        (tmp_path / name).write_text(name, encoding="utf-8")
    assert data.licence_files(tmp_path / "x", ["trans-de-en"]) == {
        "trans-de-en.copyright": tmp_path / "x/trans-de-en/usr/share/doc/trans-de-en/copyright",
        "GPL-2": tmp_path / "GPL-2",
        "GPL-3": tmp_path / "GPL-3",
        "MPL-2.0": tmp_path / "MPL-2.0",
    }


def test_build_without_the_packages_says_what_is_missing(tmp_path, capsys):
    with pytest.raises(SystemExit, match="no trans-de-en_"):
        data.main(["build", "--out", str(tmp_path / "out"), "--from-debs", str(tmp_path)])


def test_repeat_settings_are_parsed_and_bad_ones_are_refused():
    assert data.parse_repeat(None) is None
    assert data.parse_repeat(["authored=1", "ding-lexicon=2"]) == {"authored": 1, "ding-lexicon": 2}
    for bad in (["authored"], ["authored=0"], ["authored=x"], ["nonsense=2"]):
        with pytest.raises(ValueError, match="SOURCE=N"):
            data.parse_repeat(bad)


def test_build_refuses_a_bad_repeat_with_a_usage_message(tmp_path, capsys):
    with pytest.raises(SystemExit):
        data.main(["build", "--out", str(tmp_path / "out"), "--from-debs", str(tmp_path), "--repeat", "authored=0"])
    assert "--repeat takes SOURCE=N" in capsys.readouterr().err
