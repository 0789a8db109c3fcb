"""The corpus's sources on tiny fixtures: one extractor per file format, and the registry reading a tree laid out
like the extracted Debian packages. No downloads."""

from __future__ import annotations

import dataclasses
import io
import shutil
from functools import partial
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo

from transformer.training.corpus import authored
from transformer.training.corpus.catalogs import catalog_pairs, strip_accelerators
from transformer.training.corpus.ddtp import ddtp_pairs
from transformer.training.corpus.ding import ding_entries, ding_kind, ding_lexicon, ding_pairs
from transformer.training.corpus.gnome_help import mallard_pairs
from transformer.training.corpus.libreoffice_help import help_page_pairs
from transformer.training.corpus.sources import EN_DE, PAIRS, read_sources

FIXTURES = Path(__file__).parent / "fixtures" / "data"


def _ding_file(extra: str = "") -> list:
    return list(ding_entries((FIXTURES / "de-en").read_text(encoding="utf-8") + extra))


# --- Ding ------------------------------------------------------------------------------------------------------------


def test_ding_pairs_split_sub_entries_one_to_one_and_strip_editorial_marks():
    assert list(ding_pairs(_ding_file())) == [
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


def test_ding_lexicon_keeps_common_short_terms_one_per_english_term_headwords_first():
    violin = (
        "Musikinstrument {n} | Geige {f} :: musical instrument | violin\n"
        "Violine {f} | Violinen {pl} :: violin | violins\n"
    )
    lexicon = ding_lexicon(_ding_file(violin))
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
    assert ("to backbite", "über andere lästern") in ding_lexicon(_ding_file(), min_zipf=(0.0, 0.0))
    assert ding_lexicon(_ding_file(), min_zipf=(9.0, 0.0)) == []


# --- LibreOffice help, catalogs, GNOME help, package descriptions -----------------------------------------------------


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


def test_ddtp_pairs_match_descriptions_by_md5_and_zip_sentences_of_running_text():
    english = (FIXTURES / "Translation-en").read_text(encoding="utf-8")
    german = (FIXTURES / "Translation-de").read_text(encoding="utf-8")
    assert ddtp_pairs(english, german, "de") == [
        (
            "Tea Timer counts down the minutes while your tea brews.",
            "Tea Timer zählt die Minuten herunter, während Ihr Tee zieht.",
        ),
        ("It rings when the tea is ready.", "Er klingelt, wenn der Tee fertig ist."),
        ("This package contains the program.", "Dieses Paket enthält das Programm."),
    ]  # the list paragraph is verbatim text; "Most people …" has two sentences, its German one; one is untranslated


# --- the registry ----------------------------------------------------------------------------------------------------


def test_each_pair_names_its_sources_once_and_draws_dev_and_test_from_one_of_them():
    for pair in PAIRS.values():
        names = [source.name for source in pair.sources]
        assert len(names) == len(set(names)) and pair.held_out_source in names
    assert EN_DE.packages[:2] == ("trans-de-en", "gnome-user-docs")  # each package once, in the sources' order
    assert len(EN_DE.source("gnome-app-help").packages) == 39


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
    authored_folder = tmp_path / "authored"
    authored_folder.mkdir()
    (authored_folder / "food.tsv").write_text("I like soup.\tIch mag Suppe.\tfood\tpresent\n", encoding="utf-8")
    here = partial(authored.read, folder=authored_folder)
    sources = [dataclasses.replace(s, read=here) if s.name == "authored" else s for s in EN_DE.sources]

    raw, notes = read_sources(tmp_path, sources)
    assert list(raw) == [source.name for source in EN_DE.sources]
    assert raw["authored"] == [("I like soup.", "Ich mag Suppe.")]
    assert notes["authored"] == ["1 files in `data/authored`"]
    assert ("eel", "Aal") in raw["ding-lexicon"]
    assert raw["gnome-app-help"] == raw["gnome-help"]  # the same page, from an application's package
    assert notes["gnome-app-help"] == ["1 of 2 pages aligned (same number of blocks in C and de)"]
    assert len(raw["ddtp"]) == 3
    assert raw["ding-sentences"][0] == ("Better late than never.", "Besser spät als nie.")
    assert len(raw["ding-sentences"]) == 4 and len(raw["ding-phrases"]) == 2  # terms are not used
    assert len(raw["libreoffice-help"]) == 3
    assert notes["libreoffice-help"] == ["1 of 1 English pages have a German page"]
    assert raw["ui-catalogs"] == [("Open the file", "Datei öffnen")]  # German catalogs only
    assert len(raw["gnome-help"]) == 5
    assert notes["gnome-help"] == ["1 of 1 pages aligned (same number of blocks in C and de)"]
