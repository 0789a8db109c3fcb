"""The English–German corpus: built from Debian data packages, read back for training.

Real parallel text is scarce on an offline machine, but Debian's data packages hold some:

* `trans-de-en`, the Ding dictionary: example sentences and phrases inside the entries ("Better late than
  never." / "Besser spät als nie.") — the everyday register, weighted up, and the only source of dev/test;
* `libreoffice-help-en-us` + `libreoffice-help-de`: the same help page in both languages, paragraphs matched
  by their `id` (`par_id…`, `hd_id…`) — software documentation, capped so it does not dominate;
* message catalogs (`libreoffice-l10n-de`, `gimp-data`, `inkscape`): user-interface strings, msgid -> msgstr;
* `gnome-user-docs`: Mallard help pages, English (`C`) and German paragraphs in the same order.

The pipeline, one small function per step, each pure except the first and the last:

    download + extract (apt-get download, dpkg-deb -x)
    -> extract pairs per source (`ding_pairs`, `help_page_pairs`, `catalog_pairs`, `mallard_pairs`)
    -> clean and filter (`clean_text`, `reject_reason`)
    -> deduplicate, cap, split (`make_corpus`)
    -> write train/dev/test .tsv.gz, DATA_CARD.md and the licences (`write_corpus`)

Build (about a minute and a half, most of it unpacking):

    python -m transformer.training.data build --out data/en-de --seed 0

Read:

    from transformer.training.data import load_corpus
    corpus = load_corpus("data/en-de")    # {"train": [(english, german), ...], "dev": [...], "test": [...]}

Every pair is `(english, german)`, in that order, everywhere in this module.
"""

from __future__ import annotations

import argparse
import gzip
import html
import io
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from babel.messages.mofile import read_mo

from .everyday import AUTHORED_DIR, EVERYDAY_FILE, overlapping, read_authored, read_rows, split_everyday

Pair = tuple[str, str]  # (english, german)

MAX_WORDS = 20  # per side, for every pair in the corpus but the authored ones
AUTHORED_MAX_WORDS = 25  # the authored sentences were planned with 3–25 words
HELD_OUT_WORDS = (3, 15)  # dev/test sentences: this many words a side, inclusive
DEV_SIZE = 1200
TEST_SIZE = 1200
LIBREOFFICE_HELP_CAP = 6000  # help pages are plentiful and repetitive: keep at most this many pairs
# of these, only sentences of 3+ words a side
SENTENCES_ONLY = ("gnome-help", "gnome-app-help", "ui-catalogs", "libreoffice-help", "ddtp")
SPLITS = ("train", "dev", "test")
EVERYDAY_SPLITS = ("everyday-dev", "everyday-test")  # the project's own held-out set (transformer.training.everyday)
AUTHORED_REPEAT = 3  # the authored everyday pairs appear this many times in train: the register the model is for
LEXICON_ZIPF = (3.0, 1.5)  # Ding lexicon: every English word at least this common (wordfreq Zipf), German likewise


# ---------------------------------------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One group of pairs in the corpus, the Debian packages it comes from, and its licence."""

    name: str
    packages: tuple[str, ...]
    licence: str
    description: str


GNOME_APPS = (  # GNOME applications whose packages ship Mallard help in German (usr/share/help/{C,de}/<app>)
    "accerciser",
    "baobab",
    "cheese-common",
    "deja-dup",
    "eog",
    "evince-common",
    "evolution-common",
    "file-roller",
    "five-or-more",
    "four-in-a-row",
    "gnome-boxes",
    "gnome-calculator",
    "gnome-chess",
    "gnome-clocks",
    "gnome-dictionary",
    "gnome-logs",
    "gnome-mahjongg",
    "gnome-mines",
    "gnome-music",
    "gnome-nibbles",
    "gnome-photos",
    "gnome-robots",
    "gnome-sudoku",
    "gnome-system-monitor",
    "gnome-tetravex",
    "gnote",
    "gthumb-data",
    "hitori",
    "iagno",
    "lightsoff",
    "orca",
    "pitivi",
    "polari",
    "quadrapassel",
    "seahorse",
    "shotwell-common",
    "simple-scan",
    "swell-foop",
    "totem-common",
)
DDTP_LISTS = "/var/lib/apt/lists"  # where `apt-get -o Acquire::Languages=en,de update` puts Translation-{en,de}

SOURCES: tuple[Source, ...] = (
    Source("ding-sentences", ("trans-de-en",), "GPL-2+", "Ding example sentences (capitalised, ending in . ! ?)"),
    Source("ding-phrases", ("trans-de-en",), "GPL-2+", "Ding phrases of 3+ words a side"),
    Source(
        "authored",
        (),
        "MIT (the project's own)",
        f"everyday sentences written for the project (`data/authored`), repeated {AUTHORED_REPEAT}× in train",
    ),
    Source(
        "ding-lexicon",
        ("trans-de-en",),
        "GPL-2+",
        "Ding dictionary entries of 1–3 words a side, common words only (wordfreq), one German per English",
    ),
    Source(
        "gnome-help", ("gnome-user-docs",), "CC-BY-SA-3.0", "GNOME desktop help (Mallard pages, C vs de), sentences"
    ),
    Source(
        "gnome-app-help",
        GNOME_APPS,
        "per package (GPL, CC-BY-SA; the copyright files in licenses/)",
        "help of GNOME applications (Mallard pages, C vs de), sentences",
    ),
    Source(
        "ui-catalogs",
        ("libreoffice-l10n-de", "gimp-data", "inkscape"),
        "MPL-2.0 (LibreOffice), GPL-3+ (GIMP), GNU GPL (Inkscape)",
        "user-interface message catalogs (.mo, msgid -> msgstr), sentences",
    ),
    Source(
        "libreoffice-help",
        ("libreoffice-help-en-us", "libreoffice-help-de"),
        "MPL-2.0",
        f"LibreOffice help paragraphs matched by id, sentences, capped at {LIBREOFFICE_HELP_CAP:,}",
    ),
    Source(
        "ddtp",
        (),
        "each package's own licence (Debian main); translations by the Debian Description Translation Project",
        "Debian package descriptions (`Translation-en` / `Translation-de`, paired by `Description-md5`), "
        "sentences of long descriptions with the same sentence count",
    ),
)
SOURCE_BY_NAME: dict[str, Source] = {source.name: source for source in SOURCES}
PACKAGES: tuple[str, ...] = tuple(dict.fromkeys(package for source in SOURCES for package in source.packages))


# ---------------------------------------------------------------------------------------------------------------------
# Cleaning and filters: text in, text (or a reason) out
# ---------------------------------------------------------------------------------------------------------------------

_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,!?;:])")
_ACCELERATOR = re.compile(r"[_~](?=\w)|(?<!\w)&(?=\w)")  # _File, ~File, &File
_MARKUP_TAG = re.compile(r"</?[a-z][a-z0-9]*(\s[^<>]*)?/?>")  # <b>, </small>, <span foo="x">
_PLACEHOLDER = re.compile(
    r"%\([^)]*\)[-+ #0-9.]*[a-zA-Z]"  # %(name)s
    r"|%[-+#0]?[0-9]*(?:\.[0-9]+)?[hlLqjzt]*[diouxXeEfFgGcsSp](?![^\W\d_])"  # %s, %d, %0.2f, %ld (not "5%ig")
    r"|%[0-9]+(?:\$[-+#0-9.]*[a-zA-Z])?"  # %1, %1$s
    r"|%[A-Z][A-Z0-9_]+"  # %PRODUCTNAME-style macros (other than the product name itself)
    r"|\{[^{}\s]*\}"  # {0}, {}, {name}
    r"|\$\(\w+\)|\$\w+\$|\$[A-Z][A-Z_]+|\$[0-9]+(?![0-9.,])"  # $(ARG1), $file$, $ELEMENTNAME, $1 (not $30,000)
)
# identifiers, markup, regular expressions, URLs, absolute paths, control characters (mis-encoded text)
_CODE_LIKE = re.compile(r"[_~`|\\<>\[\]\x00-\x1f\x7f-\x9f]|://|(?<![\w.])/\w+/")
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))  # soft hyphen, zero-width
_SENTENCE_END = re.compile(r"[.!?][\"'»«“”‘)]*$")


def clean_text(text: str) -> str:
    """Unicode NFC, `’` -> `'`, `...` -> `…`, no soft hyphens or zero-width characters, whitespace runs -> one
    space, no space before punctuation."""
    text = unicodedata.normalize("NFC", text).translate(_INVISIBLE).replace("\u2019", "'").replace("...", "…")
    text = " ".join(text.split())
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)


def strip_accelerators(text: str) -> str:
    """Remove a keyboard accelerator mark (`_File`, `~File`, `&File` -> `File`); a string with several is left as is."""
    return _ACCELERATOR.sub("", text) if len(_ACCELERATOR.findall(text)) == 1 else text


def placeholders(text: str) -> list[str]:
    """The printf/format/LibreOffice placeholders in `text` (`%s`, `%(name)s`, `%1`, `{0}`, `$(ARG1)`), sorted."""
    return sorted(match.group(0) for match in _PLACEHOLDER.finditer(text))


def words(text: str) -> int:
    """Number of whitespace-separated words."""
    return len(text.split())


def norm_key(text: str) -> str:
    """The form two texts are compared in for dedup and held-out overlap: casefolded, punctuation dropped."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def is_sentence(english: str, german: str) -> bool:
    """Both sides start with a capital letter and end in `.`, `!` or `?` (closing quotes allowed)."""
    return all(side[:1].isupper() and _SENTENCE_END.search(side) is not None for side in (english, german))


def is_held_out_candidate(english: str, german: str) -> bool:
    """An everyday sentence fit for dev/test: a sentence of 3–15 words on each side, with no `…` gap to fill."""
    low, high = HELD_OUT_WORDS
    return (
        is_sentence(english, german)
        and all(low <= words(side) <= high for side in (english, german))
        and "…" not in english + german
    )


def is_sentence_like(english: str, german: str) -> bool:
    """A sentence of at least 3 words a side: what is kept of help and UI text."""
    return is_sentence(english, german) and min(words(english), words(german)) >= 3


def reject_reason(english: str, german: str, max_words: int = MAX_WORDS) -> str | None:
    """Why a cleaned pair is dropped, or None when it is kept. The reasons are counted in the data card."""
    if not english or not german:
        return "empty side"
    if max(words(english), words(german)) > max_words:
        return f"more than {max_words} words"
    short, long = sorted((len(english), len(german)))
    if long > 2.5 * short + 10:
        return "length ratio"
    if norm_key(english) == norm_key(german):
        return "untranslated (de == en)"
    if placeholders(english) != placeholders(german):
        return "placeholders differ"
    if _CODE_LIKE.search(english) or _CODE_LIKE.search(german):
        return "markup or code"
    if not any(c.isalpha() for c in english) or not any(c.isalpha() for c in german):
        return "no letters"
    return None


# ---------------------------------------------------------------------------------------------------------------------
# Extractors: one file format each, text or bytes in, pairs out
# ---------------------------------------------------------------------------------------------------------------------

# {f} [coll.] <Abk.> (of sth.), abbreviations /UNO/, and " /added" in "contributed /added"
_DING_MARKS = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|<[^<>]*>|\([^()]*\)|(?<!\S)/[^/\s]+/(?!\S)|(?<=\s)/[^\W\d_][\w'-]*")
_SLASH_ALTERNATIVES = re.compile(r"\b([^\W\d_][\w'-]*)(?:/[^\W\d_][\w'-]*)+")  # come/arrived -> come


def clean_ding_side(text: str) -> str:
    """One Ding sub-entry side: editorial marks removed, then the first `;` alternative, `a/b` -> `a`."""
    for _ in range(2):  # twice, for one level of nesting: "(etw. (Bestimmtes))"
        text = _DING_MARKS.sub(" ", text)
    text = _SLASH_ALTERNATIVES.sub(r"\1", text.split(";")[0])
    return clean_text(text)


def ding_pairs(text: str) -> Iterator[Pair]:
    """Every sub-entry of a Ding dictionary file (`DE | DE … :: EN | EN …`), cleaned, as (english, german).

    Sub-entries correspond one to one; a line whose two sides have a different number of them is skipped.
    A sub-entry with a spaced ` / ` left after cleaning ("flat search / apartment search") is skipped too.
    Single words are included: `ding_kind` tells sentences, phrases and single terms apart.
    """
    for entry in ding_entries(text):
        for pair in entry:
            if pair[0] and pair[1] and " / " not in pair[0] + pair[1]:
                yield pair


def ding_entries(text: str) -> Iterator[list[Pair]]:
    """The cleaned (english, german) sub-entries of each line of a Ding file, headword first; lines whose two sides
    have a different number of sub-entries are skipped."""
    for line in text.splitlines():
        if line.startswith("#") or " :: " not in line:
            continue
        german, english = line.split(" :: ", 1)
        german_subs, english_subs = german.split(" | "), english.split(" | ")
        if len(german_subs) == len(english_subs):
            yield [(clean_ding_side(e), clean_ding_side(g)) for e, g in zip(english_subs, german_subs, strict=True)]


def ding_kind(english: str, german: str) -> str:
    """'sentence', 'phrase' (3+ words a side) or 'term' (headwords and short entries, not used)."""
    if is_sentence(english, german):
        return "sentence"
    return "phrase" if min(words(english), words(german)) >= 3 else "term"


def ding_lexicon(text: str, min_zipf: tuple[float, float] = LEXICON_ZIPF) -> list[Pair]:
    """Dictionary entries of a Ding file as a lexicon: (english, german) of 1–3 words a side, one per English term.

    Terms (`ding_kind` "term") whose every English word has at least `min_zipf[0]` on wordfreq's Zipf scale
    (3 is about once per million words: "sunset", "pharmacy") and every German word at least `min_zipf[1]`,
    so the rare technical vocabulary of a large dictionary stays out. Of several German terms for one English
    term, the one from an entry's headword (its first sub-entry) wins, then the first in the file.
    """
    from wordfreq import zipf_frequency

    def common(side: str, language: str, floor: float) -> bool:
        return all(zipf_frequency(word, language) >= floor for word in side.replace("-", " ").split())

    chosen: dict[str, tuple[bool, Pair]] = {}  # casefolded English -> (from a headword, pair)
    for entry in ding_entries(text):
        for position, pair in enumerate(entry):
            key = pair[0].casefold()
            if key in chosen and (chosen[key][0] or position > 0):
                continue
            if not (pair[0] and pair[1]) or " / " in pair[0] + pair[1] or ding_kind(*pair) != "term":
                continue
            if max(words(pair[0]), words(pair[1])) > 3 or reject_reason(*pair) is not None:
                continue
            if common(pair[0], "en", min_zipf[0]) and common(pair[1], "de", min_zipf[1]):
                chosen[key] = (position == 0, pair)
    return [pair for _, pair in chosen.values()]


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


def help_page_pairs(english_html: str, german_html: str) -> list[Pair]:
    """Pairs from one LibreOffice help page in English and in German, matched by paragraph id, in English order."""
    english, german = paragraphs_by_id(english_html), paragraphs_by_id(german_html)
    return [
        (clean_product(english[key]), clean_product(german[key]))
        for key in english
        if key in german and english[key].strip() and german[key].strip()
    ]


def clean_product(text: str) -> str:
    """`%PRODUCTNAME` is LibreOffice's name macro, not a runtime value: write the name, then `clean_text`."""
    return clean_text(text.replace("%PRODUCTNAME", "LibreOffice"))


def catalog_pairs(mo_bytes: bytes) -> list[Pair]:
    """(msgid, msgstr) pairs of a compiled gettext catalog, in file order, cleaned for use as text.

    Skipped: the header, plural entries and untranslated ones (`msgfmt` already leaves fuzzy entries out of a
    .mo file). Cleaned: markup tags (`<b>`), HTML entities, one accelerator mark, `%PRODUCTNAME`, whitespace.
    Placeholders are kept here; `reject_reason` drops pairs whose placeholders differ.
    """
    pairs = []
    for message in read_mo(io.BytesIO(mo_bytes)):
        if not message.id or not isinstance(message.id, str) or not isinstance(message.string, str):
            continue
        if not message.string:
            continue
        pairs.append((_clean_catalog_string(message.id), _clean_catalog_string(message.string)))
    return pairs


def _clean_catalog_string(text: str) -> str:
    text = html.unescape(_MARKUP_TAG.sub("", text))
    return clean_product(strip_accelerators(text))


_MALLARD = "{http://projectmallard.org/1.0/}"
_MALLARD_UNITS = frozenset(f"{_MALLARD}{tag}" for tag in ("p", "title", "subtitle", "desc", "cite"))


def mallard_units(xml_text: str | bytes) -> list[str]:
    """The translatable blocks of a Mallard page (`p`, `title`, `desc`, …) in document order, with inline markup.

    A block nested in another block is part of the outer one; credits in `<info>` are not blocks.
    """
    root = ET.fromstring(xml_text)
    units: list[str] = []

    def walk(element: ET.Element) -> None:
        for child in element:
            if child.tag in _MALLARD_UNITS:
                units.append(clean_text("".join(child.itertext())))
            else:
                walk(child)

    walk(root)
    return units


def mallard_pairs(english_xml: str | bytes, german_xml: str | bytes) -> list[Pair]:
    """Pairs from a Mallard page and its translation: blocks zipped in order; [] when the block counts differ."""
    english, german = mallard_units(english_xml), mallard_units(german_xml)
    if len(english) != len(german):
        return []
    return [(e, g) for e, g in zip(english, german, strict=True) if e and g]


_DDTP_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"„])")


def ddtp_descriptions(text: str, language: str) -> dict[str, list[str]]:
    """{Description-md5: the long description's paragraphs} of an apt `Translation-<language>` list.

    The long description is the indented text after the one-line summary; ` .` lines separate paragraphs.
    Paragraphs with lines indented further (lists, verbatim text) are left out: they are not running text.
    """
    descriptions: dict[str, list[str]] = {}
    for entry in text.split("\n\n"):
        md5, body = None, None
        lines = entry.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("Description-md5: "):
                md5 = line.split(": ", 1)[1].strip()
            elif line.startswith(f"Description-{language}: "):
                body = lines[i + 1 :]
        if md5 is None or body is None:
            continue
        paragraphs, current, verbatim = [], [], False
        for line in [*body, " ."]:
            if line.strip() == ".":
                if current and not verbatim:
                    paragraphs.append(clean_text(" ".join(current)))
                current, verbatim = [], False
            elif line.startswith("  ") or line.lstrip().startswith(("* ", "- ", "+ ", "o ")):
                verbatim = True
            else:
                current.append(line.strip())
        descriptions[md5] = paragraphs
    return descriptions


def ddtp_pairs(english_text: str, german_text: str) -> list[Pair]:
    """Sentence pairs of the package descriptions translated in both lists, matched by `Description-md5`: the
    paragraphs zipped (same count), each split into sentences and zipped where both have the same count."""
    english = ddtp_descriptions(english_text, "en")
    pairs = []
    for md5, german_paragraphs in ddtp_descriptions(german_text, "de").items():
        english_paragraphs = english.get(md5)
        if english_paragraphs is None or len(english_paragraphs) != len(german_paragraphs):
            continue
        for english_paragraph, german_paragraph in zip(english_paragraphs, german_paragraphs, strict=True):
            english_sentences = _DDTP_SENTENCE.split(english_paragraph)
            german_sentences = _DDTP_SENTENCE.split(german_paragraph)
            if len(english_sentences) == len(german_sentences):
                pairs += zip(english_sentences, german_sentences, strict=True)
    return pairs


# ---------------------------------------------------------------------------------------------------------------------
# Reading an extracted package tree
# ---------------------------------------------------------------------------------------------------------------------


@dataclass
class SourceStats:
    """How many pairs one source gave at each stage, and why the others were dropped."""

    extracted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    kept: int = 0  # after the filters and the source's own selection (`sentences_only`)
    unique: int = 0  # after deduplication against this and earlier sources
    used: int = 0  # after the cap
    held_out_overlap: int = 0  # removed from train: a side equals a dev/test side
    everyday_overlap: int = 0  # removed from train: a side equals or nearly equals an everyday dev/test side
    splits: Counter[str] = field(default_factory=Counter)
    english_words: int = 0
    german_words: int = 0


def read_sources(root: Path, authored_dir: Path = AUTHORED_DIR) -> tuple[dict[str, list[Pair]], dict[str, list[str]]]:
    """Raw pairs per source (names of `SOURCES`) from a folder holding the extracted packages, one subfolder each
    (and `ddtp/Translation-{en,de}`, the apt lists, when there), and the project's own authored sentences.

    Returns the pairs and, per source, notes on what was read (files, pages skipped).
    """
    pairs: dict[str, list[Pair]] = {source.name: [] for source in SOURCES}
    notes: dict[str, list[str]] = {source.name: [] for source in SOURCES}

    ding = root / "trans-de-en/usr/share/trans/de-en"
    ding_text = ding.read_text(encoding="utf-8")
    for english, german in ding_pairs(ding_text):
        kind = ding_kind(english, german)
        if kind != "term":
            pairs[f"ding-{kind}s"].append((english, german))
    notes["ding-sentences"].append(f"file `{ding.relative_to(root / 'trans-de-en')}`")
    pairs["ding-lexicon"] = ding_lexicon(ding_text)

    authored = read_authored(authored_dir)
    pairs["authored"] = [row.pair for row in authored]
    notes["authored"].append(f"{len(sorted(Path(authored_dir).glob('*.tsv')))} files in `data/authored`")

    english_help = root / "libreoffice-help-en-us/usr/share/libreoffice/help/en-US"
    german_help = root / "libreoffice-help-de/usr/share/libreoffice/help/de"
    pages = sorted(english_help.rglob("*.html"))
    matched = 0
    for page in pages:
        german_page = german_help / page.relative_to(english_help)
        if german_page.is_file():
            matched += 1
            pairs["libreoffice-help"] += help_page_pairs(page.read_text("utf-8"), german_page.read_text("utf-8"))
    notes["libreoffice-help"].append(f"{matched:,} of {len(pages):,} English pages have a German page")

    catalogs = sorted(
        path
        for package in SOURCE_BY_NAME["ui-catalogs"].packages
        for path in (root / package).rglob("*.mo")
        if path.parent.name == "LC_MESSAGES" and path.parent.parent.name == "de"
    )
    for catalog in catalogs:
        pairs["ui-catalogs"] += catalog_pairs(catalog.read_bytes())
    notes["ui-catalogs"].append("catalogs: " + ", ".join(f"`{path.name}`" for path in catalogs))

    for name in ("gnome-help", "gnome-app-help"):
        pages, aligned = 0, 0
        for package in SOURCE_BY_NAME[name].packages:
            english_docs, german_docs = root / package / "usr/share/help/C", root / package / "usr/share/help/de"
            for page in sorted(english_docs.rglob("*.page")):
                german_page = german_docs / page.relative_to(english_docs)
                pages += 1
                if german_page.is_file():
                    page_pairs = mallard_pairs(page.read_bytes(), german_page.read_bytes())
                    aligned += bool(page_pairs)
                    pairs[name] += page_pairs
        notes[name].append(f"{aligned:,} of {pages:,} pages aligned (same number of blocks in C and de)")

    lists = {language: root / "ddtp" / f"Translation-{language}" for language in ("en", "de")}
    if all(path.is_file() for path in lists.values()):
        pairs["ddtp"] = ddtp_pairs(lists["en"].read_text("utf-8"), lists["de"].read_text("utf-8"))
        notes["ddtp"].append("apt lists `Translation-en` and `Translation-de` of bookworm main")
    return pairs, notes


# ---------------------------------------------------------------------------------------------------------------------
# Filter, deduplicate, cap, split: pure
# ---------------------------------------------------------------------------------------------------------------------


def make_corpus(
    raw: dict[str, list[Pair]],
    seed: int,
    *,
    caps: dict[str, int] | None = None,
    sentences_only: Iterable[str] = SENTENCES_ONLY,
    dev_size: int = DEV_SIZE,
    test_size: int = TEST_SIZE,
    held_out_source: str = "ding-sentences",
    everyday: tuple[list[Pair], list[Pair]] = ([], []),
    repeat: dict[str, int] | None = None,
) -> tuple[dict[str, list[Pair]], dict[str, SourceStats]]:
    """Filter, deduplicate and split the raw pairs of each source (taken in the order of `raw`).

    1. filter each pair (`reject_reason`); of the `sentences_only` sources keep only sentences of 3+ words a side;
    2. deduplicate by `norm_key` of English + German, the first occurrence wins (so put Ding first);
    3. cap a source at `caps[name]` pairs, sampled with the seed;
    4. draw test, then dev, from the `held_out_source` pairs that are `is_held_out_candidate`, no English or
       German side repeated among them;
    5. train is everything else, minus any pair with an English or German side equal to a dev/test side, and
       minus any pair with a side equal or nearly equal (`everyday.overlapping`) to a side of the `everyday`
       (dev, test) pairs, which become the splits `everyday-dev` and `everyday-test`;
    6. a source named in `repeat` appears that many times in train (the default: the authored pairs
       `AUTHORED_REPEAT` times); train is shuffled with the seed.

    Returns the splits and per-source statistics. Deterministic for the same input and seed.
    """
    caps = caps if caps is not None else {"libreoffice-help": LIBREOFFICE_HELP_CAP}
    repeat = repeat if repeat is not None else {"authored": AUTHORED_REPEAT}
    stats = {name: SourceStats() for name in raw}
    seen: set[tuple[str, str]] = set()
    kept: dict[str, list[Pair]] = {}
    for name, pairs in raw.items():
        kept[name] = []
        stats[name].extracted = len(pairs)
        for english, german in pairs:
            reason = reject_reason(english, german, AUTHORED_MAX_WORDS if name == "authored" else MAX_WORDS)
            if reason is None and name in sentences_only and not is_sentence_like(english, german):
                reason = "not a sentence"
            if reason is not None:
                stats[name].rejected[reason] += 1
                continue
            stats[name].kept += 1
            key = norm_key(english), norm_key(german)
            if key not in seen:
                seen.add(key)
                kept[name].append((english, german))
        stats[name].unique = len(kept[name])
        if name in caps and len(kept[name]) > caps[name]:
            chosen = sorted(random.Random(f"{seed}-cap-{name}").sample(range(len(kept[name])), caps[name]))
            kept[name] = [kept[name][i] for i in chosen]
        stats[name].used = len(kept[name])

    candidates = [pair for pair in kept.get(held_out_source, []) if is_held_out_candidate(*pair)]
    random.Random(f"{seed}-held-out").shuffle(candidates)
    held_out: list[Pair] = []
    held_out_keys: set[str] = set()
    for english, german in candidates:
        if len(held_out) == test_size + dev_size:
            break
        keys = {"en:" + norm_key(english), "de:" + norm_key(german)}
        if not keys & held_out_keys:
            held_out.append((english, german))
            held_out_keys |= keys
    if len(held_out) < test_size + dev_size:
        raise ValueError(f"only {len(held_out)} held-out candidates for dev {dev_size} + test {test_size}")
    splits = {"train": [], "dev": held_out[test_size:], "test": held_out[:test_size]}
    splits["everyday-dev"], splits["everyday-test"] = list(everyday[0]), list(everyday[1])
    split_of = {pair: split for split in ("dev", "test") for pair in splits[split]}

    for name, pairs in kept.items():
        near_everyday = overlapping(pairs, [*everyday[0], *everyday[1]])
        for (english, german), near in zip(pairs, near_everyday, strict=True):
            if (english, german) in split_of:
                stats[name].splits[split_of[english, german]] += 1
            elif {"en:" + norm_key(english), "de:" + norm_key(german)} & held_out_keys:
                stats[name].held_out_overlap += 1
            elif near:
                stats[name].everyday_overlap += 1
            else:
                splits["train"] += [(english, german)] * repeat.get(name, 1)
                stats[name].splits["train"] += 1
                stats[name].english_words += words(english)
                stats[name].german_words += words(german)
    random.Random(f"{seed}-train").shuffle(splits["train"])
    return splits, stats


# ---------------------------------------------------------------------------------------------------------------------
# Files: .tsv(.gz) in and out
# ---------------------------------------------------------------------------------------------------------------------


def write_pairs(path: str | Path, pairs: Iterable[Pair]) -> None:
    """Write `english<TAB>german` lines, UTF-8; gzip (mtime 0, no file name: byte-identical) when `.gz`."""
    path = Path(path)
    lines = []
    for english, german in pairs:
        if any(c in side for side in (english, german) for c in "\t\n\r"):
            raise ValueError(f"tab or newline inside a pair: {(english, german)!r}")
        lines.append(f"{english}\t{german}\n")
    data = "".join(lines).encode("utf-8")
    if path.suffix == ".gz":
        buffer = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
            gz.write(data)
        data = buffer.getvalue()
    path.write_bytes(data)


def read_pairs(path: str | Path) -> list[tuple[str, str]]:
    """Read `english<TAB>german` lines from a .tsv or .tsv.gz file."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as file:
        pairs = []
        for number, line in enumerate(file, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            english, tab, german = line.partition("\t")
            if not tab or "\t" in german:
                raise ValueError(f"{path}:{number}: expected one tab, got {line!r}")
            pairs.append((english, german))
    return pairs


def load_corpus(folder: str | Path) -> dict[str, list[tuple[str, str]]]:
    """{"train", "dev", "test"} -> pairs, from `folder/{split}.tsv.gz` (or `.tsv`), and "everyday-dev" and
    "everyday-test" where the folder has them."""
    folder = Path(folder)
    corpus = {}
    for split in (*SPLITS, *EVERYDAY_SPLITS):
        path = folder / f"{split}.tsv.gz"
        if split in SPLITS or path.exists():
            corpus[split] = read_pairs(path if path.exists() else folder / f"{split}.tsv")
    return corpus


# ---------------------------------------------------------------------------------------------------------------------
# Packages: download, extract, versions and licences
# ---------------------------------------------------------------------------------------------------------------------


def _run(command: list[str], hint: str = "", **kwargs) -> str:
    """Run a command; its stdout, or a RuntimeError that shows its stderr."""
    if shutil.which(command[0]) is None:
        raise RuntimeError(f"`{command[0]}` not found: building the corpus needs a Debian system (apt-get, dpkg-deb)")
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed{hint}:\n{result.stderr.strip()}")
    return result.stdout


def download_packages(folder: Path, packages: Iterable[str] = PACKAGES) -> None:
    """`apt-get download` each package into `folder` (run `apt-get update` first on a fresh system)."""
    folder.mkdir(parents=True, exist_ok=True)
    _run(["apt-get", "download", *packages], hint=" (run `apt-get update` first?)", cwd=folder)


def find_debs(folder: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """{package: its .deb file in `folder`} (the last by name when there are several); an error if one is missing."""
    debs = {}
    for package in packages:
        matches = sorted(folder.glob(f"{package}_*.deb"))
        if not matches:
            raise FileNotFoundError(f"no {package}_*.deb in {folder}")
        debs[package] = matches[-1]
    return debs


def copy_ddtp_lists(folder: Path, lists: Path = Path(DDTP_LISTS)) -> None:
    """Write apt's `Translation-en` and `Translation-de` lists of the main archive, decompressed, into `folder`.

    apt fetches them with `apt-get -o Acquire::Languages=en,de update` (lz4-compressed on Debian 12).
    """
    folder.mkdir(parents=True, exist_ok=True)
    for language in ("en", "de"):
        matches = sorted(
            path
            for path in lists.glob(f"*_dists_*_main_i18n_Translation-{language}*")
            if re.search(r"_dists_[a-z]+_main_", path.name)  # the release itself, not -updates or -security
        )
        if not matches:
            raise FileNotFoundError(
                f"no Translation-{language} list in {lists}: run `apt-get -o Acquire::Languages=en,de update` first"
            )
        path = matches[0]
        if path.suffix == ".lz4":
            data = _run(["lz4", "-dc", str(path)]).encode("utf-8")
        elif path.suffix == ".gz":
            data = gzip.decompress(path.read_bytes())
        else:
            data = path.read_bytes()
        (folder / f"Translation-{language}").write_bytes(data)


def deb_version(deb: Path) -> str:
    """The package version recorded in a .deb (`dpkg-deb -f`)."""
    return _run(["dpkg-deb", "-f", str(deb), "Version"]).strip()


def extract_debs(debs: dict[str, Path], folder: Path) -> None:
    """`dpkg-deb -x` each package into `folder/<package>`."""
    for package, deb in debs.items():
        (folder / package).mkdir(parents=True, exist_ok=True)
        _run(["dpkg-deb", "-x", str(deb), str(folder / package)])


# ---------------------------------------------------------------------------------------------------------------------
# Writing the corpus folder
# ---------------------------------------------------------------------------------------------------------------------

COMMAND = "python -m transformer.training.data build --out data/en-de --seed {seed}{exclude}"
COMMON_LICENCES_DIR = Path("/usr/share/common-licenses")
COMMON_LICENCES = ("GPL-2", "GPL-3", "MPL-2.0")  # cited, not included, by the copyright files

NOTICE = """\
# Sources and licences of the en–de corpus

The pairs in `train.tsv.gz`, `dev.tsv.gz` and `test.tsv.gz` are extracted from the Debian packages below, and
`train.tsv.gz` also holds the project's own authored sentences; `everyday-dev.tsv.gz` and `everyday-test.tsv.gz`
are the project's own (MIT).
Each pair keeps the licence of the package it comes from; the files mix the sources (see `../DATA_CARD.md`
for how many pairs each gave), so the corpus as a whole is distributed under all of these terms together.
This folder holds the packages' copyright files (`<package>.copyright`; the CC-BY-SA-3.0 text is in full in
`gnome-user-docs.copyright`) and the licence texts they cite from Debian's `/usr/share/common-licenses/`
(`GPL-2`, `GPL-3`, `MPL-2.0`, `LGPL-2.1`, …).

| source | packages | licence |
|---|---|---|
| Ding English–German dictionary, © Frank Richter, TU Chemnitz (https://dict.tu-chemnitz.de/) | `trans-de-en` | GPL-2+ |
| LibreOffice help, © The Document Foundation and contributors | `libreoffice-help-en-us`, `-de` | MPL-2.0 |
| LibreOffice German UI translation | `libreoffice-l10n-de` | MPL-2.0 |
| GIMP German UI translation (`gimp20*.mo`) | `gimp-data` | GPL-3+ (`Files: *` in its copyright file) |
| Inkscape German UI translation (`inkscape.mo`) | `inkscape` | GNU GPL (as its copyright file states) |
| GNOME user documentation (German translation) | `gnome-user-docs` | CC-BY-SA-3.0 |
| Help of GNOME applications (German translations) | listed in `../DATA_CARD.md` | per package: GPL, LGPL, CC-BY-SA |
| Everyday sentences written for Transformer Explorer (`data/authored`) | — (this repository) | MIT, as the project |

Derived data: the texts were cleaned (Unicode NFC, whitespace, Ding's editorial marks, keyboard accelerators,
markup tags removed), filtered and deduplicated by `transformer/training/data.py`; the sentences themselves are the
translators' own.
"""


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "–"


def data_card(
    splits: dict[str, list[Pair]],
    stats: dict[str, SourceStats],
    notes: dict[str, list[str]],
    versions: dict[str, str],
    seed: int,
) -> str:
    """The DATA_CARD.md text: sources, versions, licences, counts per stage and per split, and how it was built."""
    excluded = [name for name in SOURCE_BY_NAME if name not in stats]
    lines = [
        "# en–de corpus",
        "",
        "English–German sentence and phrase pairs for training the explorer's translation model, built offline",
        "from Debian data packages and the project's own authored sentences by `transformer/training/data.py`. "
        "Lines are `english<TAB>german`, UTF-8, gzip.",
        "",
        "Rebuild on Debian 12 (bookworm), after `apt-get -o Acquire::Languages=en,de update` (the `.deb` files "
        "and the package-description lists are copied to a temporary folder; `--download-dir DIR` keeps them, "
        "`--from-debs DIR` reuses them):",
        "",
        "```",
        COMMAND.format(seed=seed, exclude=" ".join(["", "--exclude", *excluded]) if excluded else ""),
        "```",
        "",
        "The same package versions (below) and seed give byte-identical `.tsv.gz` files; a Debian point release "
        "that updates a package can change the counts.",
        "",
        "## Splits",
        "",
        "| split | pairs | English words | German words | ≤10 words a side |",
        "|---|---|---|---|---|",
    ]
    for split, pairs in splits.items():
        short = sum(max(words(e), words(g)) <= 10 for e, g in pairs)
        lines.append(
            f"| {split} | {len(pairs):,} | {sum(words(e) for e, _ in pairs):,} | "
            f"{sum(words(g) for _, g in pairs):,} | {_percent(short, len(pairs))} |"
        )
    lines += [
        "",
        f"Dev ({len(splits['dev']):,}) and test ({len(splits['test']):,}) are drawn only from Ding's everyday "
        f"sentences (capitalised, ending in . ! ?, {HELD_OUT_WORDS[0]}–{HELD_OUT_WORDS[1]} words a side, no `…`), with "
        "the seed; no English or German side of dev or test appears in train or in the other held-out split "
        "(compared casefolded, punctuation ignored).",
        "",
        f"Everyday dev ({len(splits.get('everyday-dev', [])):,}) and everyday test "
        f"({len(splits.get('everyday-test', [])):,}) are the two halves of `data/everyday/everyday.tsv`, the "
        "project's everyday test set (original sentences of 6–20 words on ten classroom topics, written apart "
        "from the training sentences; see `data/everyday/README.md`), dealt per topic with the seed. No train "
        "pair has a side equal or nearly equal to one of theirs (word-set Jaccard similarity below "
        "0.8, casefolded, punctuation ignored). Train counts each pair of a repeated source as often as it "
        "appears.",
        "",
        "## Sources",
        "",
        "| source | packages (version) | licence | what |",
        "|---|---|---|---|",
    ]
    for name in stats:
        source = SOURCE_BY_NAME[name]
        packages = ", ".join(f"`{p}` {versions.get(p, '?')}" for p in source.packages) or "—"
        if len(source.packages) > 4:
            packages = f"{len(source.packages)} packages (listed below)"
        lines.append(f"| {name} | {packages} | {source.licence} | {source.description} |")
    lines += [
        "",
        "## Counts per source",
        "",
        "extracted: pairs read from the files; kept: after cleaning, filters and the source's selection; "
        "unique: after deduplication (first occurrence wins, sources in this order); used: after the cap; "
        "overlap: removed from train because a side equals a dev/test side; everyday overlap: removed because a "
        "side equals or nearly equals an everyday dev/test side; train: distinct pairs (words counted once).",
        "",
        "| source | extracted | kept | unique | used | overlap | everyday overlap | train | dev | test "
        "| train words en / de |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in stats.items():
        lines.append(
            f"| {name} | {s.extracted:,} | {s.kept:,} | {s.unique:,} | {s.used:,} | {s.held_out_overlap:,} | "
            f"{s.everyday_overlap:,} | {s.splits['train']:,} | {s.splits['dev']:,} | {s.splits['test']:,} | "
            f"{s.english_words:,} / {s.german_words:,} |"
        )
    lines.append(
        f"| **total** | {sum(s.extracted for s in stats.values()):,} | {sum(s.kept for s in stats.values()):,} | "
        f"{sum(s.unique for s in stats.values()):,} | {sum(s.used for s in stats.values()):,} | "
        f"{sum(s.held_out_overlap for s in stats.values()):,} | "
        f"{sum(s.everyday_overlap for s in stats.values()):,} | "
        f"{sum(s.splits['train'] for s in stats.values()):,} | {len(splits['dev']):,} | "
        f"{len(splits['test']):,} | {sum(s.english_words for s in stats.values()):,} / "
        f"{sum(s.german_words for s in stats.values()):,} |"
    )
    lines += ["", "Dropped, per reason:", "", "| source | " + " | ".join(_REASONS) + " |"]
    lines.append("|---" * (len(_REASONS) + 1) + "|")
    for name, s in stats.items():
        lines.append(f"| {name} | " + " | ".join(f"{s.rejected[reason]:,}" for reason in _REASONS) + " |")
    lines += ["", "Read:", ""]
    lines += [f"- {name}: {note}" for name in stats for note in notes.get(name, [])]
    lines += [
        "",
        "## How it was built",
        "",
        "1. `apt-get download` the packages, `dpkg-deb -x` them.",
        "2. Extract pairs:",
        "   - **Ding** (`usr/share/trans/de-en`, lines `DE | DE … :: EN | EN …`): the `|` sub-entries one to one "
        "(lines with unequal counts skipped), the first `;` alternative of each, editorial marks removed "
        "(`{f}`, `[coll.]`, `<abbr.>`, and all `(…)` notes and optional words), word-level slash alternatives "
        "reduced to the first (`come/arrived` → `come`), sub-entries with a spaced ` / ` skipped. Sentences are "
        "sub-entries that start with a capital and end in . ! ? on both sides; phrases are the other sub-entries "
        "with 3+ words a side; shorter ones (headwords, inflected forms) are not used.",
        "   - **LibreOffice help** (`usr/share/libreoffice/help/{en-US,de}/**/*.html`; Debian ships the help as "
        "HTML generated from the .xhp sources): the same page in both languages, paragraphs matched by "
        "`par_id…`/`hd_id…` ids; of the platform/module variants (`switchinline`) only the default is read.",
        "   - **UI catalogs** (`de/LC_MESSAGES/*.mo`, read with Babel): msgid → msgstr, no plural, untranslated "
        "or header entries; markup tags and entities removed, one accelerator mark (`_File`, `~File`, `&File`) "
        "stripped.",
        "   - **GNOME help** (`usr/share/help/{C,de}/*/*.page`, Mallard XML): the text of `p`, `title`, "
        "`subtitle`, `desc`, `cite` blocks in document order, zipped when both pages have the same number.",
        "   - **GNOME application help** (the same, for the Mallard help that the packages of "
        "GNOME applications ship: " + ", ".join(f"`{p}`" for p in GNOME_APPS) + ").",
        "   - **Ding lexicon** (the same file): dictionary entries of 1–3 words a side (not sentences or 3+-word "
        "phrases), cleaned as above, whose every English word has a wordfreq Zipf frequency of at least "
        f"{LEXICON_ZIPF[0]} (about once per million words) and every German word at least {LEXICON_ZIPF[1]}; "
        "one German term per English term, an entry's headword first. It adds the everyday words that the "
        "sentences never contain (sunset → Sonnenuntergang, pharmacy → Apotheke).",
        "   - **Package descriptions** (DDTP: apt's `Translation-en` and `Translation-de` lists of bookworm main): "
        "entries paired by `Description-md5`, long descriptions split into paragraphs (` .` lines; lists and "
        "verbatim text left out), zipped when both have the same number, then into sentences, zipped when both "
        "have the same number.",
        "   - **Authored** (`data/authored/*.tsv`, in this repository): everyday sentences written for the project, "
        "see `data/authored/README.md`.",
        "   `%PRODUCTNAME` is replaced by `LibreOffice` everywhere.",
        "3. Clean: Unicode NFC, `’` → `'`, `...` → `…`, whitespace collapsed, no space before punctuation.",
        f"4. Filter: both sides non-empty, at most {MAX_WORDS} words a side ({AUTHORED_MAX_WORDS} for the authored "
        "sentences), character lengths within "
        "2.5 × shorter + 10, German ≠ English (casefolded, punctuation ignored), the same placeholders on both "
        "sides (`%s`, `%(name)s`, `%1`, `{0}`, `$(ARG1)`: kept where both sides have the same), no markup or code "
        "(underscores, tildes, backticks, backslashes, `|`, `< >`, `[ ]`, URLs, absolute paths, control "
        "characters), letters on both sides. Of help, UI and GNOME text only sentences are kept "
        "(capitalised, ending in . ! ?, 3+ words a side).",
        "5. Deduplicate by casefolded, punctuation-free English + German; sources in the table's order, so Ding wins.",
        f"6. The mix: Ding sentences and phrases in full; the authored sentences {AUTHORED_REPEAT} times (the "
        "everyday register the model is for); LibreOffice "
        f"help capped at {LIBREOFFICE_HELP_CAP:,} pairs sampled with the seed (it would otherwise be the largest "
        "source, in the register of software documentation); the other sources in full.",
        "7. Split: test, then dev, drawn with the seed from the Ding sentences of 3–15 words a side; the everyday "
        "set halved per topic; train is the rest, minus pairs sharing a side with dev/test or nearly sharing one "
        "with the everyday set, shuffled with the seed.",
        "",
        "Measured and not used: the `registry_de.xcd` and autotext files of `libreoffice-l10n-de` (German only; "
        "the English counterparts are in other packages); Ding's rare dictionary terms (below the frequency "
        "floor: mostly technical vocabulary); help and UI strings that are not sentences (labels such as "
        "`Open the file`, about 60k of them); the `.po` files of PyPI packages (more UI text of the same kind); "
        "`gnome-devel-docs` (developer documentation). Debian's translated package descriptions (`ddtp`, about "
        "16,000 sentence pairs after the filters, in the register of software documentation) are extracted, "
        "tested and measured on the dev sets (the en-de model card: 800 steps from v3, Ding dev chrF +0.5, everyday "
        "dev chrF −1.2), so they stay out with `--exclude ddtp`; no licence statement "
        "of the DDTP's own was found: a description belongs to its package's `debian/control` and so to that "
        "package's licence (all in Debian main), and the translations are published by Debian in the same archive.",
        "",
        "Licences: see `licenses/NOTICE.md` and the packages' copyright files in `licenses/`.",
        "",
    ]
    return "\n".join(lines)


_REASONS = (
    "empty side",
    f"more than {MAX_WORDS} words",
    "length ratio",
    "untranslated (de == en)",
    "placeholders differ",
    "markup or code",
    "no letters",
    "not a sentence",
)


def licence_files(extracted: Path, packages: Iterable[str]) -> dict[str, Path]:
    """{file name in licenses/: source}: each package's copyright file and the common licence texts they cite."""
    files = {
        f"{package}.copyright": extracted / package / "usr/share/doc" / package / "copyright" for package in packages
    }
    for name in COMMON_LICENCES:
        files[name] = COMMON_LICENCES_DIR / name
        if not files[name].is_file():
            raise FileNotFoundError(f"{files[name]} is missing (Debian's base-files package ships it)")
    cited = {  # the others the copyright files point to ("see /usr/share/common-licenses/LGPL-2.1.")
        name.rstrip(".")
        for path in list(files.values())
        if path.name == "copyright" and path.is_file()
        for name in re.findall(r"common-licenses/([\w.+-]+)", path.read_text(encoding="utf-8", errors="replace"))
    }
    for name in sorted(cited - set(files)):
        if (COMMON_LICENCES_DIR / name).is_file():
            files[name] = COMMON_LICENCES_DIR / name
    return files


def write_corpus(out: Path, splits: dict[str, list[Pair]], card: str, licences: dict[str, Path]) -> None:
    """Write the splits, DATA_CARD.md, and licenses/ (the `licences` files, see `licence_files`, and NOTICE.md)."""
    out.mkdir(parents=True, exist_ok=True)
    for split, pairs in splits.items():
        write_pairs(out / f"{split}.tsv.gz", pairs)
    (out / "DATA_CARD.md").write_text(card, encoding="utf-8")
    licenses = out / "licenses"
    licenses.mkdir(exist_ok=True)
    for name, path in licences.items():
        shutil.copyfile(path, licenses / name)
    (licenses / "NOTICE.md").write_text(NOTICE, encoding="utf-8")


def build(
    out: Path,
    seed: int,
    download_dir: Path | None = None,
    from_debs: Path | None = None,
    exclude: Iterable[str] = (),
    repeat: dict[str, int] | None = None,
) -> None:
    """Download (or reuse) the packages, extract them, build the corpus (without the `exclude`d sources, each source
    in `repeat` that many times in train) and write it to `out`."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="corpus-") as temporary:
        temporary = Path(temporary)
        if from_debs is None:
            from_debs = download_dir or temporary / "debs"
            print(f"downloading {len(PACKAGES)} packages into {from_debs} ...", flush=True)
            download_packages(from_debs)
        debs = find_debs(from_debs)
        if not (from_debs / "Translation-de").is_file():
            copy_ddtp_lists(from_debs)
        versions = {package: deb_version(deb) for package, deb in debs.items()}
        print(f"extracting {len(versions)} packages ...", flush=True)
        extract_debs(debs, temporary / "x")
        (temporary / "x" / "ddtp").mkdir()
        for language in ("en", "de"):
            shutil.copyfile(from_debs / f"Translation-{language}", temporary / "x" / "ddtp" / f"Translation-{language}")
        raw, notes = read_sources(temporary / "x")
        raw = {name: pairs for name, pairs in raw.items() if name not in set(exclude)}
        print("extracted:", ", ".join(f"{name} {len(pairs):,}" for name, pairs in raw.items()), flush=True)
        dev, test = split_everyday(read_rows(EVERYDAY_FILE), seed)
        splits, stats = make_corpus(
            raw, seed, everyday=([row.pair for row in dev], [row.pair for row in test]), repeat=repeat
        )
        card = data_card(splits, stats, notes, versions, seed)
        write_corpus(out, splits, card, licence_files(temporary / "x", debs))
    print(", ".join(f"{split} {len(pairs):,}" for split, pairs in splits.items()), f"-> {out}")
    print(f"done in {time.perf_counter() - started:.0f} s")


def parse_repeat(settings: list[str] | None) -> dict[str, int] | None:
    """`["authored=1"]` → `{"authored": 1}`; None (the option not given) stays None, the default mix."""
    if settings is None:
        return None
    names = {source.name for source in SOURCES}
    repeat = {}
    for setting in settings:
        name, equals, count = setting.partition("=")
        if not equals or name not in names or not count.isdigit() or int(count) < 1:
            raise ValueError(
                f"--repeat takes SOURCE=N with N ≥ 1 and SOURCE one of {', '.join(sorted(names))}; got {setting!r}"
            )
        repeat[name] = int(count)
    return repeat


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m transformer.training.data", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="download the Debian packages and build the corpus")
    build_parser.add_argument("--out", type=Path, default=Path("data/en-de"), help="output folder")
    build_parser.add_argument("--seed", type=int, default=0, help="seed for the cap and the splits")
    build_parser.add_argument("--download-dir", type=Path, help="where to download the .deb files (default: temp)")
    build_parser.add_argument("--from-debs", type=Path, help="reuse the .deb files in this folder, no download")
    build_parser.add_argument(
        "--exclude", nargs="*", default=[], choices=[s.name for s in SOURCES], help="leave these sources out"
    )
    build_parser.add_argument(
        "--repeat",
        nargs="*",
        default=None,
        metavar="SOURCE=N",
        help=f"how many times each named source appears in train (default: authored={AUTHORED_REPEAT})",
    )
    args = parser.parse_args(argv)
    try:
        repeat = parse_repeat(args.repeat)
    except ValueError as error:
        parser.error(str(error))
    try:
        build(
            args.out,
            args.seed,
            download_dir=args.download_dir,
            from_debs=args.from_debs,
            exclude=args.exclude,
            repeat=repeat,
        )
    except (RuntimeError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
