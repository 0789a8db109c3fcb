"""The page in English and in Simplified Chinese: gettext catalogs read with Babel.

Every string a reader sees is written in English in the code and marked, in one of two ways:

* `_("Step")` where the text is made for one user: a caption, a message, a figure's title. It is translated on
  the server, into the language of the user whose action is running (`speaking`).
* `T("Step")` (`ui.i18n`) where the text is a fixed part of the page: a label, a button, an accordion's title.
  The page sends the key, and the browser shows it in the page's language (gradio's `gr.I18n`, filled from the same
  catalogs by `gradio_translations`).

The translations live in `locale/<locale>/LC_MESSAGES/messages.po`: gettext catalogs, which a translator edits
without reading Python (Poedit, Weblate, a text editor). `python -m explorer.catalogs update` collects the marked
strings of the code into `locale/messages.pot` and merges them into every catalog; a new or changed string then
waits in the catalog, untranslated, and the tests fail until it is translated. Terms: `docs/glossary-zh.md`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gettext
import io
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCALE_DIR = ROOT / "locale"
DOMAIN = "messages"

# The page's languages: a short code (the link's `?lang=`, the state's `language`) and the catalog's locale.
LANGUAGES = {"en": "en", "zh": "zh_CN"}
NAMES = {"en": "English", "zh": "简体中文"}  # each in itself: how the switch offers it
DEFAULT = "en"  # the language of the code: it needs no catalog

_language: contextvars.ContextVar[str] = contextvars.ContextVar("language", default=DEFAULT)


def catalog_path(language: str) -> Path:
    return LOCALE_DIR / LANGUAGES[language] / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def translations(language: str) -> gettext.NullTranslations:
    """The catalog of `language`, compiled in memory (fuzzy entries left out, as `msgfmt` does); English, and a
    language without a catalog, translate nothing."""
    if language == DEFAULT or language not in LANGUAGES or not catalog_path(language).is_file():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo  # Babel only where a catalog is read: English needs none
    from babel.messages.pofile import read_po

    with catalog_path(language).open("rb") as file:
        catalog = read_po(file, locale=LANGUAGES[language], domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def current() -> str:
    """The language of the user whose action is running."""
    return _language.get()


@contextlib.contextmanager
def speaking(language: str) -> Iterator[None]:
    """Translate `_` into `language` inside the block (the page enters it for each user's action)."""
    token = _language.set(language if language in LANGUAGES else DEFAULT)
    try:
        yield
    finally:
        _language.reset(token)


def _(message: str) -> str:
    """`message` in the current user's language."""
    return translations(current()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for `n`, in the current user's language (Chinese has one form)."""
    return translations(current()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Mark `message` for the catalogs without translating it here (a constant translated where it is shown)."""
    return message


def language_of(preferred: str | None) -> str:
    """The page's language for a browser's preferences (`navigator.languages`, or an Accept-Language header:
    "zh-CN,zh;q=0.9,en;q=0.8"), English when none of them is one of ours."""
    wanted = []
    for part in (preferred or "").split(","):
        tag = part.split(";")[0].strip().replace("-", "_")
        if tag:
            wanted.append(tag)
    from babel import negotiate_locale

    codes = {code: locale for code, locale in LANGUAGES.items()}
    available = [*codes, *codes.values()]
    found = negotiate_locale(wanted, available, sep="_") or negotiate_locale(
        [tag.split("_")[0] for tag in wanted], available, sep="_"
    )
    if found is None:
        return DEFAULT
    return next(code for code, locale in codes.items() if found in (code, locale))


# --------------------------------------------------------------------------------------------------------------------
# Fixed text, translated in the browser (gradio's gr.I18n, `ui.i18n`)
# --------------------------------------------------------------------------------------------------------------------


def gradio_translations() -> dict[str, dict[str, str]]:
    """{language: {key: text}} for gr.I18n: each catalog's translations keyed by their English text, and nothing for
    English: the browser shows a key it has no text for as it is, and the key is the English text (no ICU
    formatting happens there). The tables go into every page (an English one of every string took 107 KB)."""
    from babel.messages.pofile import read_po

    by_language: dict[str, dict[str, str]] = {DEFAULT: {}}
    for language in LANGUAGES:
        if language == DEFAULT:
            continue
        table = {}
        if catalog_path(language).is_file():
            with catalog_path(language).open("rb") as file:
                for message in read_po(file, locale=LANGUAGES[language]):
                    if message.id and isinstance(message.id, str) and message.string and not message.fuzzy:
                        table[message.id] = message.string
        by_language[language] = table
    return by_language
