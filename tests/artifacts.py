"""What the browser tests leave in `test-artifacts/` for a person to look at: a screenshot of each view a test looks
at when asked (`python -m pytest --screenshots`; 0.3 s of the machine's CPU each, 40 in a run), and of every page a
failed browser test left open, always (`failed`)."""

from __future__ import annotations

import re
from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
KEEP = {"views": False}  # set from `--screenshots` (`conftest.pytest_configure`)


def shot(page, name: str, *, full_page: bool = True) -> None:
    """A screenshot of `page` as `name`.png, when the run was asked for them."""
    if KEEP["views"]:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


def failed(pages: list, test: str) -> list[Path]:
    """A screenshot of each of `pages` (those a failed test left open) as `failed-<test>-<n>.png`; a page that can no
    longer be drawn is passed over."""
    ARTIFACTS.mkdir(exist_ok=True)
    stem = re.sub(r"[^\w.-]+", "_", test).strip("_")
    kept = []
    for n, page in enumerate(pages):
        path = ARTIFACTS / f"failed-{stem}-{n}.png"
        try:
            if page.is_closed() or not page.url.startswith("http"):
                continue
            page.screenshot(path=str(path), full_page=True, timeout=10_000)
        except Exception:  # a page that crashed or hangs: its test's own error says more
            continue
        kept.append(path)
    return kept
