"""The Ding dictionary (Debian `trans-de-en`): example sentences, phrases and a lexicon of common terms.

Ding's lines read `DE | DE … :: EN | EN …`: a headword and its sub-entries (inflected forms, phrases, example
sentences), corresponding one to one across the ` :: `. Its example sentences ("Better late than never." /
"Besser spät als nie.") are the everyday register the model is for, and the only source of dev and test.
Three corpus sources come from the one file: `read_sentences`, `read_phrases` and `read_lexicon`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from .cleaning import Pair, clean_text, is_sentence, reject_reason, words

FILE = "usr/share/trans/de-en"  # in the package
LEXICON_ZIPF = (3.0, 1.5)  # every English word at least this common (wordfreq Zipf), every German word likewise

# {f} [coll.] <Abk.> (of sth.), abbreviations /UNO/, and " /added" in "contributed /added"
_MARKS = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|<[^<>]*>|\([^()]*\)|(?<!\S)/[^/\s]+/(?!\S)|(?<=\s)/[^\W\d_][\w'-]*")
_SLASH_ALTERNATIVES = re.compile(r"\b([^\W\d_][\w'-]*)(?:/[^\W\d_][\w'-]*)+")  # come/arrived -> come


def clean_ding_side(text: str) -> str:
    """One Ding sub-entry side: editorial marks removed, then the first `;` alternative, `a/b` -> `a`."""
    for _ in range(2):  # twice, for one level of nesting: "(etw. (Bestimmtes))"
        text = _MARKS.sub(" ", text)
    text = _SLASH_ALTERNATIVES.sub(r"\1", text.split(";")[0])
    return clean_text(text)


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


def _usable(pair: Pair) -> bool:
    """Both sides left after cleaning, and no spaced ` / ` of alternatives ("flat search / apartment search")."""
    return bool(pair[0] and pair[1]) and " / " not in pair[0] + pair[1]


def ding_pairs(entries: Iterable[list[Pair]]) -> Iterator[Pair]:
    """Every usable sub-entry of `ding_entries`, single words included: `ding_kind` tells sentences, phrases and
    single terms apart."""
    for entry in entries:
        yield from filter(_usable, entry)


def ding_kind(english: str, german: str) -> str:
    """'sentence', 'phrase' (3+ words a side) or 'term' (headwords and short entries, not used)."""
    if is_sentence(english, german):
        return "sentence"
    return "phrase" if min(words(english), words(german)) >= 3 else "term"


def ding_lexicon(entries: Iterable[list[Pair]], min_zipf: tuple[float, float] = LEXICON_ZIPF) -> list[Pair]:
    """Dictionary entries as a lexicon: (english, german) of 1–3 words a side, one per English term.

    Terms (`ding_kind` "term") whose every English word has at least `min_zipf[0]` on wordfreq's Zipf scale
    (3 is about once per million words: "sunset", "pharmacy") and every German word at least `min_zipf[1]`,
    so the rare technical vocabulary of a large dictionary stays out. Of several German terms for one English
    term, the one from an entry's headword (its first sub-entry) wins, then the first in the file.
    """
    from wordfreq import zipf_frequency

    def common(side: str, language: str, floor: float) -> bool:
        return all(zipf_frequency(word, language) >= floor for word in side.replace("-", " ").split())

    chosen: dict[str, tuple[bool, Pair]] = {}  # casefolded English -> (from a headword, pair)
    for entry in entries:
        for position, pair in enumerate(entry):
            key = pair[0].casefold()
            if key in chosen and (chosen[key][0] or position > 0):
                continue
            if not _usable(pair) or ding_kind(*pair) != "term":
                continue
            if max(words(pair[0]), words(pair[1])) > 3 or reject_reason(*pair) is not None:
                continue
            if common(pair[0], "en", min_zipf[0]) and common(pair[1], "de", min_zipf[1]):
                chosen[key] = (position == 0, pair)
    return [pair for _, pair in chosen.values()]


# Three sources read the same file: parse it once (cleaning its sub-entries is most of the reading time).
@functools.lru_cache(maxsize=1)
def _entries_of(path: Path) -> tuple[list[Pair], ...]:
    return tuple(ding_entries(path.read_text(encoding="utf-8")))


def _read_kind(package: Path, kind: str) -> list[Pair]:
    return [pair for pair in ding_pairs(_entries_of(package / FILE)) if ding_kind(*pair) == kind]


def read_sentences(root: Path, packages: tuple[str, ...]) -> tuple[list[Pair], list[str]]:
    """The example sentences of the extracted package (capitalised, ending in . ! ? on both sides)."""
    return _read_kind(root / packages[0], "sentence"), [f"file `{FILE}`"]


def read_phrases(root: Path, packages: tuple[str, ...]) -> tuple[list[Pair], list[str]]:
    """The other sub-entries of 3+ words a side."""
    return _read_kind(root / packages[0], "phrase"), []


def read_lexicon(root: Path, packages: tuple[str, ...]) -> tuple[list[Pair], list[str]]:
    """The common terms (`ding_lexicon`)."""
    return ding_lexicon(_entries_of(root / packages[0] / FILE)), []
