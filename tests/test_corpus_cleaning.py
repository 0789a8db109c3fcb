"""The corpus's cleaning and filters (transformer.training.corpus.cleaning): text in, text or a reason out."""

from __future__ import annotations

import unicodedata

import pytest

from transformer.training.corpus.cleaning import clean_text, norm_key, placeholders, reject_reason


def test_clean_text_normalises_unicode_apostrophes_ellipses_and_whitespace():
    decomposed = unicodedata.normalize("NFD", "schön")
    assert decomposed != "schön"
    assert clean_text(f"  Das  ist\u00a0{decomposed}\n !") == "Das ist schön!"
    assert clean_text("I’ve got it...") == "I've got it…"
    assert clean_text("Mon\u00adday") == "Monday"  # soft hyphen


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
