"""Several app processes behind a load balancer (docs/deployment.md): a user's view is rebuilt from its state alone.

A share link carries the whole state, so a link made on one process opens the very same view on another. Two real
app processes (the session's, `real_app`, and one more), in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.real_app import CHROMIUM, EVENT_TAP_JS, App, settled

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

# What a view is, read from the page: the sentence and its pieces, the output, the message, the open tab, the
# attention family, and the data and titles of the attention heatmap and of the candidates.
VIEW_JS = """() => {
    const text = (selector) => document.querySelector(selector)?.innerText ?? null;
    const plot = (selector) => {
        const gd = document.querySelector(`${selector} .js-plotly-plot`);
        return gd ? JSON.stringify({data: gd.data, title: gd.layout.title}) : null;
    };
    return {
        source: document.querySelector('#source-text textarea').value,
        pieces: text('#source-pieces'),
        output: document.querySelector('#output-text textarea').value,
        status: text('#status'),
        tab: document.querySelector('#views [role=tab][aria-selected=true]')?.innerText ?? null,
        family: document.querySelector('#attention-family input:checked')?.value ?? null,
        heatmap: plot('#attention-plot'),
        candidates: plot('#candidates-plot'),
    };
}"""


# Whether a component shows the timer of an event still pending ("0.1s"), which Gradio takes away a moment after the
# event's answer was read (its statuses are set one component at a time, asynchronously).
TIMER_SHOWN = "() => [...document.querySelectorAll('.progress-text')].some((text) => text.offsetParent !== null)"


def settled_view(page) -> dict:
    """`VIEW_JS` once the page has settled (`settled`: every event it sent answered, the events a restored link's
    values set off among them, and the figures in the window drawn) and shows no pending event's timer."""
    settled(page)
    page.wait_for_function(f"() => !({TIMER_SHOWN})()")
    return page.evaluate(VIEW_JS)


def page_counting_events(browser):
    """A page whose events are counted (`EVENT_TAP_JS`), for `settled`."""
    page = browser.new_page(viewport={"width": 1280, "height": 1200})
    page.add_init_script(EVENT_TAP_JS)
    page.set_default_timeout(30_000)
    return page


@pytest.fixture(scope="module")
def second_app():
    app = App()
    app.start()
    yield app
    app.close()


@pytest.mark.long
def test_a_share_link_made_on_one_process_opens_the_same_view_on_another(real_app, second_app, browser):
    first, second = real_app, second_app
    page = page_counting_events(browser)
    page.goto(first.url)
    page.wait_for_selector("#attention-plot .js-plotly-plot")
    for _ in range(2):
        before = page.locator("#output-text textarea").input_value()
        page.locator("#step-btn").click()
        page.wait_for_function("b => document.querySelector('#output-text textarea').value !== b", arg=before)
    page.locator("#attention-family label", has_text="encoder self-attention").click()
    page.wait_for_function("() => document.querySelector('#attention-plot .gtitle')?.textContent"
                           ".startsWith('encoder')")  # fmt: skip
    made = settled_view(page)
    link = page.locator("#share-link a").first.get_attribute("href")
    assert link.startswith("?state=")

    other = page_counting_events(browser)
    other.goto(second.url + link)
    other.wait_for_function("() => document.querySelector('#attention-plot .gtitle')?.textContent"
                            ".startsWith('encoder')")  # fmt: skip
    opened = settled_view(other)
    assert made["output"] and made["family"] == "encoder"
    assert json.loads(made["heatmap"])["data"]  # a heatmap was drawn, and compared below
    assert opened == made
