"""The accessibility audit: axe-core (4.12, from the `axe-playwright-python` package) over every view of the real app,
in both languages, at 1400 px and at a phone's 390 px, after a Step.

`python -m benchmarks.accessibility` writes docs/accessibility.md: what remains, by rule and impact. The browser test
(`tests/test_browser.py`) runs the same audit and fails on any critical or serious violation.
"""

from __future__ import annotations

import argparse
import collections
from dataclasses import dataclass
from pathlib import Path

from benchmarks.real_app import CHROMIUM, CHROMIUM_ARGS, EVENT_TAP_JS, TABS, App, events_sent, settled

ROOT = Path(__file__).resolve().parent.parent
# WCAG 2.0, 2.1 and 2.2 at levels A and AA: the rules the project holds itself to; axe's best practices go in the
# report as advice.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
BLOCKING = ("critical", "serious")
WIDTHS = {"desktop": (1400, 1000), "phone": (390, 844)}
LANGUAGES = ("en", "zh")


@dataclass(frozen=True)
class Finding:
    """One rule's violation on one view: where, how bad, and on how many elements."""

    language: str
    width: str
    view: str
    rule: str
    impact: str
    help: str
    elements: int
    wcag: bool  # a WCAG A/AA rule (else one of axe's best practices)


def audit(page, language: str, width: str, skipped: tuple[str, ...] = ()) -> list[Finding]:
    """Every view of `page` (open, after a Step), audited: each tab is opened by its place in the bar. `skipped`:
    rules not run (`audit_as_shown`)."""
    found = []
    for index, view in enumerate(TABS):
        tab = page.locator("#views [role=tab]").nth(index)
        before = -1 if tab.get_attribute("aria-selected") == "true" else events_sent(page)
        tab.click()
        settled(page, before)  # drawn as it opens: its event answered (when it was not open), its figures drawn
        found += audit_as_shown(page, language, width, view, skipped)
    return found


def audit_as_shown(page, language: str, width: str, view: str, skipped: tuple[str, ...] = ()) -> list[Finding]:
    """`page` as it is now, audited once (`view` names what it shows), by every rule axe-core runs by default but
    those `skipped`. axe-core goes into the page once (its 0.5 MB of script parsed once, where `Axe.run` sends it
    again for every audit), and only the violations come back."""
    from axe_playwright_python.sync_playwright import Axe

    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(Axe().axe_script)
    options = {"resultTypes": ["violations"], "rules": {rule: {"enabled": False} for rule in skipped}}
    violations = page.evaluate("(options) => axe.run(document, options).then((results) => results.violations)", options)
    return [
        Finding(
            language,
            width,
            view,
            violation["id"],
            violation["impact"] or "minor",
            violation["help"],
            len(violation["nodes"]),
            bool(set(violation["tags"]) & set(WCAG_TAGS)),
        )
        for violation in violations
    ]


def blocking(findings: list[Finding]) -> list[Finding]:
    """The WCAG violations a test fails on: critical or serious."""
    return [f for f in findings if f.wcag and f.impact in BLOCKING]


def opened(browser, url: str, language: str, width: str):
    """A page of the app at `width`, in `language`, one Step taken."""
    w, h = WIDTHS[width]
    page = browser.new_page(viewport={"width": w, "height": h})
    page.add_init_script(EVENT_TAP_JS)  # for `settled`
    page.set_default_timeout(60_000)
    page.goto(f"{url}?lang={language}")
    page.wait_for_selector("#attention-plot .js-plotly-plot")
    settled(page)  # the events of the page's opening answered, before the Step
    page.locator("#step-btn").click()
    page.wait_for_function("() => document.querySelector('#output-text textarea').value !== ''")
    return page


def report(findings: list[Finding]) -> str:
    """docs/accessibility.md: the audit's method and what remains, by rule."""
    rules: dict[str, list[Finding]] = collections.defaultdict(list)
    for finding in findings:
        rules[finding.rule].append(finding)
    lines = [
        "# Accessibility report",
        "",
        "axe-core 4.12 (`axe-playwright-python`) over every view of the app after one Step, in English and in",
        "简体中文, at 1400×1000 and at a phone's 390×844: `python -m benchmarks.accessibility` writes this page, and",
        "`tests/test_browser.py` fails on any critical or serious violation of WCAG 2.2 A/AA.",
        "",
        f"Audited: {len(TABS)} views × {len(LANGUAGES)} languages × {len(WIDTHS)} widths.",
        f"Critical or serious WCAG violations: **{len(blocking(findings))}**.",
        "",
    ]
    if not rules:
        return "\n".join([*lines, "Nothing else was found, at any level.", ""])
    lines += ["What remains, at lower levels or among axe's best practices:", ""]
    lines += ["| rule | impact | WCAG A/AA | where | what it asks |", "|---|---|---|---|---|"]
    for rule, found in sorted(rules.items()):
        where = sorted({f"{f.view} ({f.language}, {f.width})" for f in found})
        shown = ", ".join(where[:4]) + (f" and {len(where) - 4} more" if len(where) > 4 else "")
        first = found[0]
        lines.append(f"| `{rule}` | {first.impact} | {'yes' if first.wcag else 'no'} | {shown} | {first.help} |")
    return "\n".join([*lines, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "accessibility.md")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    app, findings = App(), []
    app.start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for language in LANGUAGES:
                for width in WIDTHS:
                    page = opened(browser, app.url, language, width)
                    findings += audit(page, language, width)
                    page.close()
            browser.close()
    finally:
        app.close()
    args.out.write_text(report(findings), encoding="utf-8")
    print(f"{args.out}: {len(findings)} findings, {len(blocking(findings))} blocking")


if __name__ == "__main__":
    main()
