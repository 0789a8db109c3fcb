"""The page's typeface, served by the app itself (never fetched from the internet): Noto Sans.

Gradio's Soft theme draws its text in Montserrat, whose "z" has a bar and whose "E" looks like "Ɛ" ("ƶu Hause",
"Ɛxcuse"): odd in a German lesson. Noto Sans is plain and legible, covers every Latin script (German included), and
has a sister typeface for Chinese, Noto Sans SC, the first of the CJK fonts that follow it in the stack. The page
serves that one too, so that Chinese never shows as boxes on a machine without a Chinese font (a reader's own copy is
used first). The files are @fontsource/noto-sans 5.3.0 and @fontsource/noto-sans-sc 5.3.0 (SIL Open Font License
1.1, `assets/fonts/OFL.txt`, `assets/fonts/noto-sans-sc/OFL.txt`): Noto Sans in two subsets, Noto Sans SC (regular
weight; the browser thickens it for bold) in 97 slices of about 27 KB, each downloaded by the browser only when the
page shows a character of it.
"""

from __future__ import annotations

import json
from pathlib import Path

from explorer.figures.base import FONT_STACK as STACK  # the figures' too

FOLDER = Path(__file__).resolve().parent.parent / "assets" / "fonts"
FAMILY = STACK[0]
CHINESE = "Noto Sans SC"  # in the stack after FAMILY
CHINESE_FOLDER = FOLDER / "noto-sans-sc"
WEIGHTS = (400, 600, 700)
SUBSETS = {  # the characters each file holds (as @fontsource's CSS gives them)
    "latin": "U+0000-00FF,U+0131,U+0152-0153,U+02BB-02BC,U+02C6,U+02DA,U+02DC,U+0304,U+0308,U+0329,U+2000-206F,"
    "U+20AC,U+2122,U+2191,U+2193,U+2212,U+2215,U+FEFF,U+FFFD",
    "latin-ext": "U+0100-02BA,U+02BD-02C5,U+02C7-02CC,U+02CE-02D7,U+02DD-02FF,U+0304,U+0308,U+0329,U+1D00-1DBF,"
    "U+1E00-1E9F,U+1EF2-1EFF,U+2020,U+20A0-20AB,U+20AD-20C0,U+2113,U+2C60-2C7F,U+A720-A7FF",
}


def face(family: str, weight: int, path: Path, characters: str, local: tuple[str, ...] = ()) -> str:
    """One @font-face rule: a served file (a reader's own copy of the font first, where `local` names it), by an
    address relative to the page (it works behind a proxy that serves the app under a path of its own)."""
    sources = [f"local('{name}')" for name in local] + [f"url('gradio_api/file={path.as_posix()}') format('woff2')"]
    return (
        f"@font-face {{ font-family: '{family}'; font-style: normal; font-weight: {weight}; font-display: swap; "
        f"src: {', '.join(sources)}; unicode-range: {characters}; }}"
    )


def font_faces() -> str:
    """The @font-face rules of the served files. The folder must be one of gradio's static paths (`app.py`)."""
    rules = [
        face(FAMILY, weight, FOLDER / f"noto-sans-{subset}-{weight}-normal.woff2", characters)
        for weight in WEIGHTS
        for subset, characters in SUBSETS.items()
    ]
    ranges = json.loads((CHINESE_FOLDER / "ranges.json").read_text(encoding="utf-8"))["ranges"]
    rules += [
        face(
            CHINESE,
            400,
            CHINESE_FOLDER / f"noto-sans-sc-{n}-400-normal.woff2",
            characters,
            (CHINESE, "NotoSansSC-Regular"),
        )
        for n, characters in ranges.items()
    ]
    return "\n".join(rules)
