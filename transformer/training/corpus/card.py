"""The corpus folder's documents: DATA_CARD.md, a template filled from one dict of measured numbers, and the
sources notice. Both are files next to this module, one per language pair (`DATA_CARD.<pair>.md.j2`,
`NOTICE.<pair>.md`)."""

from __future__ import annotations

from pathlib import Path

import jinja2

from ..everyday import NEAR_DUPLICATE
from .cleaning import CHARACTERS_PER_WORD, HANZI_WIDTH, MAX_WORDS, REASONS, Pair, words
from .ding import LEXICON_ZIPF
from .sources import LanguagePair
from .splitting import HELD_OUT_WORDS, SourceStats

TEMPLATES = Path(__file__).parent
SHORT = 10  # the splits table counts the pairs of at most this many words a side

_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    undefined=jinja2.StrictUndefined,  # a misspelt number is an error, not an empty cell
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_ENVIRONMENT.filters["thousands"] = "{:,}".format
_ENVIRONMENT.filters["percent"] = lambda part, whole: f"{100 * part / whole:.0f}%" if whole else "–"


def split_numbers(pairs: list[Pair]) -> dict:
    """What the card says of one split: its pairs, its words per side, and how many are short."""
    return {
        "pairs": len(pairs),
        "words": [sum(words(pair[side]) for pair in pairs) for side in (0, 1)],
        "short": sum(max(words(first), words(second)) <= SHORT for first, second in pairs),
    }


def measure(
    splits: dict[str, list[Pair]],
    stats: dict[str, SourceStats],
    notes: dict[str, list[str]],
    versions: dict[str, str],
    seed: int,
    excluded: list[str],
) -> dict:
    """Every number and fact of a build that its data card shows, as plain data (JSON-ready)."""
    return {
        "seed": seed,
        "excluded": list(excluded),
        "versions": dict(versions),
        "splits": {split: split_numbers(pairs) for split, pairs in splits.items()},
        "stats": {
            name: {
                "extracted": s.extracted,
                "rejected": dict(s.rejected),
                "kept": s.kept,
                "unique": s.unique,
                "used": s.used,
                "held_out_overlap": s.held_out_overlap,
                "everyday_overlap": s.everyday_overlap,
                **{split: s.splits[split] for split in ("train", "dev", "test")},
                "words": list(s.words),
            }
            for name, s in stats.items()
        },
        "notes": {name: list(notes.get(name, [])) for name in stats},
    }


def data_card(pair: LanguagePair, numbers: dict) -> str:
    """The DATA_CARD.md text: sources, versions, licences, counts per stage and per split, and how it was built."""
    rules = {
        "max_words": MAX_WORDS,
        "held_out_words": HELD_OUT_WORDS,
        "lexicon_zipf": LEXICON_ZIPF,
        "near_duplicate": NEAR_DUPLICATE,
        "reasons": REASONS,
        "short": SHORT,
        "characters_per_word": CHARACTERS_PER_WORD,
        "hanzi_width": HANZI_WIDTH,
    }
    sources = {source.name: source for source in pair.sources}
    return _ENVIRONMENT.get_template(f"DATA_CARD.{pair.name}.md.j2").render(numbers, sources=sources, rules=rules)


def notice(pair: LanguagePair) -> str:
    """licenses/NOTICE.md: the sources, their licences, and how the pairs were derived."""
    return (TEMPLATES / f"NOTICE.{pair.name}.md").read_text(encoding="utf-8")
