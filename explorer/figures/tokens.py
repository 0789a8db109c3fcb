"""A sentence's pieces as HTML chips (the word-start mark in grey, each chip's position and id on hover)."""

from __future__ import annotations

import operator
from collections.abc import Sequence

from ..i18n import _
from .base import _check_length, escape_label

_CHIP_STYLE = (
    "display:inline-block;margin:2px 3px;padding:1px 7px;border-radius:6px;border:1px solid #c9d3e3;"
    "background:#eef3fa;font-family:ui-monospace,monospace,'Noto Sans SC';font-size:0.9em;white-space:pre"
)
_SPACE_MARK = '<span class="token-space" style="color:#8a96a8">▁</span>'


def token_chips_html(tokens: Sequence[str], ids: Sequence[int] | None = None) -> str:
    """Sentencepiece pieces as inline chips (`▁`, the word-start marker, in grey); hovering a chip shows its
    position and id. All text is escaped."""
    if ids is not None:
        _check_length(ids, len(tokens), "ids")
    chips = []
    for i, token in enumerate(tokens):
        if ids is None:
            tip = _("position {position}").format(position=i)
        else:
            tip = _("position {position} · id {id}").format(position=i, id=operator.index(ids[i]))
        text = escape_label(token).replace("▁", _SPACE_MARK)
        chips.append(f'<span class="token-chip" title="{escape_label(tip)}" style="{_CHIP_STYLE}">{text}</span>')
    return f'<div class="token-chips" style="line-height:1.9">{"".join(chips)}</div>'
