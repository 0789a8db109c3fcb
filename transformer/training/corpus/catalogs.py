"""User-interface message catalogs (compiled gettext `.mo` files): msgid -> msgstr.

LibreOffice, GIMP and Inkscape ship their translations as catalogs; a string is a menu item, a label or a
message, so most are not sentences, and the ones that are carry keyboard accelerators, markup and placeholders.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

from babel.messages.mofile import read_mo

from .cleaning import Pair, clean_product

_ACCELERATOR = re.compile(r"[_~](?=\w)|(?<!\w)&(?=\w)")  # _File, ~File, &File
_MARKUP_TAG = re.compile(r"</?[a-z][a-z0-9]*(\s[^<>]*)?/?>")  # <b>, </small>, <span foo="x">


def strip_accelerators(text: str) -> str:
    """Remove a keyboard accelerator mark (`_File`, `~File`, `&File` -> `File`); a string with several is left as is."""
    return _ACCELERATOR.sub("", text) if len(_ACCELERATOR.findall(text)) == 1 else text


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


def read(root: Path, packages: tuple[str, ...], *, language: str) -> tuple[list[Pair], list[str]]:
    """The pairs of every `<language>/LC_MESSAGES/*.mo` catalog in the packages, by path."""
    catalogs = sorted(
        path
        for package in packages
        for path in (root / package).rglob("*.mo")
        if path.parent.name == "LC_MESSAGES" and path.parent.parent.name == language
    )
    pairs = [pair for catalog in catalogs for pair in catalog_pairs(catalog.read_bytes())]
    return pairs, ["catalogs: " + ", ".join(f"`{path.name}`" for path in catalogs)]
