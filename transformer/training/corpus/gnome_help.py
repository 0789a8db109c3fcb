"""GNOME help (Mallard pages): the English original (`C`) and a translation, blocks zipped in document order.

`gnome-user-docs` holds the desktop's help; the packages in `APPLICATIONS` ship their own help the same way,
under `usr/share/help/{C,<language>}/<app>/*.page`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from .cleaning import Pair, clean_text

APPLICATIONS = (  # GNOME applications whose packages ship Mallard help in German (usr/share/help/{C,de}/<app>)
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


def mallard_pairs(english_xml: str | bytes, translated_xml: str | bytes) -> list[Pair]:
    """Pairs from a Mallard page and its translation: blocks zipped in order; [] when the block counts differ."""
    english, translated = mallard_units(english_xml), mallard_units(translated_xml)
    if len(english) != len(translated):
        return []
    return [(e, t) for e, t in zip(english, translated, strict=True) if e and t]


def read(root: Path, packages: tuple[str, ...], *, language: str) -> tuple[list[Pair], list[str]]:
    """The pairs of every English page of the packages' help that has a page in `language`."""
    pairs: list[Pair] = []
    pages, aligned = 0, 0
    for package in packages:
        help_folder = root / package / "usr/share/help"
        english_docs, translated_docs = help_folder / "C", help_folder / language
        for page in sorted(english_docs.rglob("*.page")):
            translated_page = translated_docs / page.relative_to(english_docs)
            pages += 1
            if translated_page.is_file():
                page_pairs = mallard_pairs(page.read_bytes(), translated_page.read_bytes())
                aligned += bool(page_pairs)
                pairs += page_pairs
    return pairs, [f"{aligned:,} of {pages:,} pages aligned (same number of blocks in C and {language})"]
