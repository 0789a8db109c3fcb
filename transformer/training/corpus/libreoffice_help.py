"""LibreOffice help (Debian `libreoffice-help-en-us` and `libreoffice-help-<language>`): paragraphs matched by id.

Debian ships the help as HTML generated from the .xhp sources, the same page in every language, each paragraph
with a stable `id` (`par_id…`, `hd_id…`): software documentation, plentiful and repetitive.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from babel import Locale

from .cleaning import Pair, clean_product

HELP = "usr/share/libreoffice/help"  # in each package, then one folder per language (`en-US`, `de`, `zh-CN`)


class _IdTextParser(HTMLParser):
    """Collects the text of every element whose `id` starts with `par_id` or `hd_id` (LibreOffice help HTML).

    Of the `switchinline` variants (Mac, Windows, Writer, …) only the default one is read: the other variants
    are `hidden` elements whose id does not start with `default`. An id seen twice keeps its first text.
    """

    _VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: dict[str, str] = {}  # finished paragraphs, in document order
        self._open: list[tuple[str, str | None, bool]] = []  # (tag, paragraph id or None, skipped)
        self._fragments: dict[str, list[str]] = {}  # open paragraph id -> its text so far

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._VOID:
            if tag == "br":
                self.handle_data(" ")
            return
        attributes = dict(attrs)
        element_id = attributes.get("id") or ""
        paragraph_id = element_id if element_id.startswith(("par_id", "hd_id")) else None
        skipped = tag in ("script", "style") or ("hidden" in attributes and not element_id.startswith("default"))
        self._open.append((tag, paragraph_id, skipped))
        if paragraph_id is not None and paragraph_id not in self.texts:
            self._fragments.setdefault(paragraph_id, [])

    def handle_endtag(self, tag: str) -> None:
        if tag in self._VOID or all(open_tag != tag for open_tag, _, _ in self._open):
            return
        while True:  # also closes children left open (`<p>` without `</p>` is legal HTML)
            open_tag, paragraph_id, _ = self._open.pop()
            if paragraph_id in self._fragments:
                self.texts[paragraph_id] = "".join(self._fragments.pop(paragraph_id))
            if open_tag == tag:
                return

    def handle_data(self, data: str) -> None:
        if not any(skipped for _, _, skipped in self._open):
            for fragments in self._fragments.values():
                fragments.append(data)


def paragraphs_by_id(page: str) -> dict[str, str]:
    """{paragraph id: text} of one LibreOffice help page (HTML), in document order."""
    parser = _IdTextParser()
    parser.feed(page)
    parser.close()
    return parser.texts


def help_page_pairs(english_html: str, translated_html: str) -> list[Pair]:
    """Pairs from one help page in English and in translation, matched by paragraph id, in English order."""
    english, translated = paragraphs_by_id(english_html), paragraphs_by_id(translated_html)
    return [
        (clean_product(english[key]), clean_product(translated[key]))
        for key in english
        if key in translated and english[key].strip() and translated[key].strip()
    ]


def read(root: Path, packages: tuple[str, ...], *, language: str) -> tuple[list[Pair], list[str]]:
    """The pairs of every English page (`packages[0]`) that has a page in `language` (`packages[1]`)."""
    english_help = root / packages[0] / HELP / "en-US"
    translated_help = root / packages[1] / HELP / language
    pages = sorted(english_help.rglob("*.html"))
    pairs: list[Pair] = []
    matched = 0
    for page in pages:
        translated_page = translated_help / page.relative_to(english_help)
        if translated_page.is_file():
            matched += 1
            pairs += help_page_pairs(page.read_text("utf-8"), translated_page.read_text("utf-8"))
    name = Locale.parse(language.replace("-", "_")).english_name
    return pairs, [f"{matched:,} of {len(pages):,} English pages have a {name} page"]
