"""The page's own style sheet (assets/style.css): rules the browser can apply without redoing the whole page."""

from __future__ import annotations

import re
from pathlib import Path

STYLE = (Path(__file__).resolve().parent.parent / "assets" / "style.css").read_text(encoding="utf-8")


def has_selectors(css: str) -> list[tuple[str, str]]:
    """Every `:has(…)` of `css`: the compound selector it is attached to, and its argument."""
    found = []
    for match in re.finditer(r"([^\s,{}>+~]*):has\(", css):
        depth, start = 1, match.end()
        end = start
        while depth:
            depth += {"(": 1, ")": -1}.get(css[end], 0)
            end += 1
        found.append((match.group(1), css[start : end - 1].strip()))
    return found


def costly(subject: str, argument: str) -> bool:
    """Whether a `:has()` makes the browser check it again at almost any change of the page: one on a column (the
    page's layout), one whose argument holds a `:not()` (it matches nearly every element), and one whose argument
    reaches any descendant through an element type (`#switch input:checked`)."""
    descendant_of_a_type = re.search(r"\s[a-z]", argument.lstrip("> ")) is not None
    return ".column" in subject or ":not(" in argument or descendant_of_a_type


def test_no_has_selector_makes_every_change_restyle_the_page():
    """Issue 35 §5: `.column:has(> #views):not(:has(#presentation input:checked))` made Chromium work out the styles
    of the whole page again at every change of a figure: 70 recalculations and 150 to 250 ms of every Step."""
    selectors = has_selectors(STYLE)
    assert selectors, "the check would pass on nothing"
    assert [(s, a) for s, a in selectors if costly(s, a)] == []


def test_the_check_finds_the_selectors_that_slowed_the_page():
    old = ".column:has(> #views):not(:has(#presentation input:checked)) > * { grid-column: 1; }"
    assert [costly(s, a) for s, a in has_selectors(old)] == [True, True]
    assert not any(costly(s, a) for s, a in has_selectors("body.presentation #page > .row:has(#source-text) {}"))
