"""Cleaning and filters: text in, text (or the reason a pair is dropped) out. Pure, and the same for every source.

A pair is `(english, german)` in the en-de corpus: the two sides in the order of the language pair's name.
Chinese is written without spaces: where a side holds Chinese characters, its length in words and in print is
estimated from them (`words`, `span`), so that one set of limits serves both scripts.
"""

from __future__ import annotations

import re
import unicodedata

Pair = tuple[str, str]  # the two sides, in the order of the language pair's name ("en-de": english, german)

MAX_WORDS = 20  # per side, for every pair whose source does not set its own limit
HANZI = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")  # CJK unified ideographs
CHARACTERS_PER_WORD = 1.6  # Chinese words are mostly one or two characters
HANZI_WIDTH = 4  # one Chinese character says about as much as four letters of English

_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,!?;:])")
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
_CHINESE_GAP = re.compile(
    rf"(?<=[{HANZI.pattern[1:-1]}，。！？、；：）])\s+(?=[{HANZI.pattern[1:-1]}，。！？、；：（])"
)
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))  # soft hyphen, zero-width
_SENTENCE_END = re.compile(r"[.!?。！？][\"'»«“”‘)）]*$")

# Why a pair is dropped, in the order of the data card's table; `reject_reason` returns one of the first seven.
REASONS = (
    "empty side",
    f"more than {MAX_WORDS} words",
    "length ratio",
    "untranslated (de == en)",
    "placeholders differ",
    "markup or code",
    "no letters",
    "not a sentence",
)


def clean_text(text: str) -> str:
    """Unicode NFC, `’` -> `'`, `...` -> `…`, no soft hyphens or zero-width characters, whitespace runs -> one
    space, no space before punctuation, none between Chinese characters (a line break inside Chinese text)."""
    text = unicodedata.normalize("NFC", text).translate(_INVISIBLE).replace("\u2019", "'").replace("...", "…")
    text = _CHINESE_GAP.sub("", " ".join(text.split()))
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)


def clean_product(text: str) -> str:
    """`%PRODUCTNAME` is LibreOffice's name macro, not a runtime value: write the name, then `clean_text`."""
    return clean_text(text.replace("%PRODUCTNAME", "LibreOffice"))


def placeholders(text: str) -> list[str]:
    """The printf/format/LibreOffice placeholders in `text` (`%s`, `%(name)s`, `%1`, `{0}`, `$(ARG1)`), sorted."""
    return sorted(match.group(0) for match in _PLACEHOLDER.finditer(text))


def words(text: str) -> int:
    """Number of words: whitespace-separated ones, and one for each 1.6 Chinese characters (Chinese has no spaces)."""
    hanzi = len(HANZI.findall(text))
    if not hanzi:
        return len(text.split())
    others = [word for word in HANZI.sub(" ", text).split() if any(c.isalnum() for c in word)]
    return max(1, round(hanzi / CHARACTERS_PER_WORD)) + len(others)


def span(text: str) -> int:
    """The length of a text in letters, a Chinese character counting as `HANZI_WIDTH`: what length ratios compare."""
    return len(text) + (HANZI_WIDTH - 1) * len(HANZI.findall(text))


def norm_key(text: str) -> str:
    """The form two texts are compared in for dedup and held-out overlap: casefolded, punctuation dropped."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def is_sentence(english: str, german: str) -> bool:
    """Both sides start with a capital letter (or a Chinese character) and end in `.`, `!` or `?` (or `。`, `！`,
    `？`; closing quotes allowed)."""
    return all(
        (side[:1].isupper() or HANZI.match(side) is not None) and _SENTENCE_END.search(side) is not None
        for side in (english, german)
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
    short, long = sorted((span(english), span(german)))
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
