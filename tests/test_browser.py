"""End to end in headless Chromium (Debian's chromium, driven by Playwright): the real app, the real page.

Screenshots go to test-artifacts/ when asked for (`--screenshots`), and of a failed test's pages always
(`tests.artifacts`). The app runs in its own process, as a user would start it, once for the session. Every test
opens pages of its own, so that the tests pass in any order: to check, give pytest their ids in another order,
e.g. `python -m pytest $(python -m pytest tests/test_browser.py --collect-only -q | grep :: | tac)`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from benchmarks.real_app import (
    CHROMIUM,
    EVENT_TAP_JS,
    SECTIONS,
    TABS,
    VIEWS,
    events_sent,
    model_option,
    open_drawn,
    open_tab,
    settled,
    shown_model,
)
from explorer import ExplorerState
from tests.artifacts import shot
from ui.plot import DRAW_JS
from ui.runtime import MAX_UPLOAD_BYTES

ROOT = Path(__file__).resolve().parent.parent

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError("Chromium is missing: .ci/run installs Debian's chromium package")
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser


# What the page's Content-Security-Policy (ui/web.py) blocked, recorded in the page (`window.refused`).
RECORD_REFUSED = """window.refused = [];
document.addEventListener('securitypolicyviolation',
    (e) => window.refused.push(`${e.violatedDirective}: ${e.blockedURI}`));"""


# How long the page takes to draw five frames (in milliseconds): about 80 in the front tab once it is idle, 2,000 or
# more in a tab behind another.
FIVE_FRAMES_MS = """() => new Promise((done) => {
    const start = performance.now();
    let frames = 0;
    const frame = () => (++frames === 5 ? done(performance.now() - start) : requestAnimationFrame(frame));
    requestAnimationFrame(frame);
})"""


def opened(browser, url: str, width: int = 1400, height: int = 1000, scripts: tuple[str, ...] = ()):
    """A page at `url`, `width`×`height`, its first view drawn and every event its opening set off answered (an
    event sent before that could be answered after a later one, and set its values back: docs/architecture.md,
    "Events that overlap"). The app gives each page a session of its own: nothing a test does there reaches another
    test. What the page's security policy blocks is recorded in `window.refused`, and the events it sends are
    counted (for `settled`); a page that does not open says what became of them. `scripts` run in the page before
    its own. It opens in a tab kept from a test before (`Chromium.tab`, put back after the test or by
    `browser.put_back`): a test that gives its page listeners of its own opens it with `browser.new_page`."""
    tab = browser.tab({"width": width, "height": height}, (RECORD_REFUSED, EVENT_TAP_JS, *scripts))
    tab.set_default_timeout(30_000)
    tab.goto(url)
    try:
        tab.wait_for_selector("#attention-plot .js-plotly-plot")
        settled(tab)
    except playwright.TimeoutError:
        raise AssertionError(f"the page did not open: its events {tab.evaluate('() => window.events')}") from None
    assert tab.evaluate(FIVE_FRAMES_MS) < 1_800  # the tab in front: one behind another draws two frames a second
    return tab


NUMBERS_DE = "?state=" + ExplorerState(model="numbers-de", source="twenty-one").to_link()


@pytest.fixture
def page(browser, app_url):
    """A page of its own for each test, so that none depends on what the tests before it did: 1280×1600, on
    numbers-de (the small model, quick at every step) and its first example, "twenty-one", nothing written yet.
    It opens from a share link; the tests that need the page as a new user first sees it call `opened`."""
    page = opened(browser, app_url + NUMBERS_DE, 1280, 1600)
    page.wait_for_function("() => document.querySelector('#model-select input').value.startsWith('numbers-de ·')")
    yield page
    browser.put_back(page)


def output(page) -> str:
    return page.locator("#output-text textarea").input_value()


def wait_for_output_change(page, before: str) -> str:
    page.wait_for_function("before => document.querySelector('#output-text textarea').value !== before", arg=before)
    return output(page)


def step(page) -> str:
    """Press Step; the output once it has its new token."""
    before = output(page)
    page.locator("#step-btn").click()
    return wait_for_output_change(page, before)


def run_to_the_end(page) -> None:
    page.locator("#run-btn").click()
    page.wait_for_function("() => document.querySelector('#candidates-plot').innerText.includes('finished')")


def test_pick_a_model(browser, app_url):
    tab = opened(browser, app_url, 1280, 1600)  # en-de, as a new user finds it
    tab.locator("#model-select input").click()
    model_option(tab, "numbers-de").click()
    tab.wait_for_function("() => document.querySelector('#source-pieces').innerText.includes('</s>')")
    # issue 13: the English example is no sentence for numbers-de: its own first example replaces it, and why
    tab.wait_for_function("() => document.querySelector('#source-text textarea').value === 'twenty-one'")
    assert "cannot read that sentence" in tab.locator("#source-note").inner_text()  # beside the sentence
    assert "unk" not in tab.locator("#source-pieces").inner_text()
    browser.put_back(tab)


def visible(page, selector: str) -> bool:
    return page.locator(selector).is_visible()


def test_empty_views_say_what_to_do(page):
    """Issue 13: no empty plot box without a word of why; each says what to press."""
    open_tab(page, "Beam search")
    assert "Choose beam" in page.locator("#beam-hint").inner_text()
    assert not visible(page, "#beam-plot")
    open_tab(page, "Walkthrough")  # issue 14: drawn as it opens, never a button away
    page.wait_for_selector("#walkthrough-output-plot .js-plotly-plot")
    open_tab(page, "Trained vs untrained")
    assert "Press the button" in page.locator("#twin-text").inner_text() and not visible(page, "#trained-plot")
    open_tab(page, "Masks and heads")
    assert "press the button" in page.locator("#compare-text").inner_text() and not visible(page, "#compare-plot")


def test_type_a_sentence_and_step(page):
    source = page.locator("#source-text textarea")
    source.fill("ninety-seven")
    source.press("Enter")
    page.wait_for_function("() => document.querySelector('#source-pieces').innerText.includes('ninety')")
    assert output(page) == ""
    page.locator("#step-btn").click()
    first = wait_for_output_change(page, "")
    assert first
    page.wait_for_selector("#candidates-plot .js-plotly-plot")
    assert page.locator("#attention-plot").inner_text().count("query") >= 1  # axis titles say rows are queries
    caption = page.locator("#attention-caption").inner_text()  # and the caption says it in plain words
    assert "Each row is a target piece" in caption and "outlined row" in caption
    assert "ten most likely" in page.locator("#candidates-caption").inner_text()
    shot(page, "step")


PLOT_WIDTH = """selector => {
    const plot = document.querySelector(selector), svg = plot.querySelector('.main-svg');
    return svg ? [svg.getBoundingClientRect().width, plot.getBoundingClientRect().width] : [0, 1];
}"""
PLOT_FILLS = f"selector => {{ const [svg, box] = ({PLOT_WIDTH})(selector); return Math.abs(svg - box) <= 2; }}"


def test_a_plot_redrawn_while_its_tab_is_hidden_fills_its_width_when_shown(page):
    """Issue 13: Step on another tab redraws the heatmap hidden; it came back at Plotly's 700 px."""
    open_tab(page, "Positions")
    rows = "() => document.querySelector('#attention-plot .js-plotly-plot').data[0].y.length"
    before, n_rows = output(page), page.evaluate(rows)
    page.locator("#step-btn").click()
    wait_for_output_change(page, before)
    settled(page)  # the heatmap was redrawn while hidden (at Plotly's default 700 px, before the fix)
    open_tab(page, "Attention")
    page.wait_for_function(PLOT_FILLS, arg="#attention-plot", timeout=5_000)
    page.wait_for_function(f"n => ({rows})() === n + 1", arg=n_rows)  # and it shows the step taken meanwhile


WATCH_DRAWS = """() => {
    window.drawsSeen = {};
    for (const id of ['attention-plot', 'candidates-plot']) {
        const gd = document.querySelector(`#${id} .js-plotly-plot`);
        const seen = window.drawsSeen[id] = {gd, draws: 0, layouts: 0};
        gd.on('plotly_afterplot', () => { seen.draws += 1; });
        gd.on('plotly_relayout', () => { seen.layouts += 1; });
    }
}"""
DRAWS_SEEN = """() => Object.fromEntries(Object.entries(window.drawsSeen).map(([id, seen]) => [id, {
    same: seen.gd === document.querySelector(`#${id} .js-plotly-plot`) && seen.gd.isConnected,
    draws: seen.draws, layouts: seen.layouts}]))"""


def test_a_step_draws_each_figure_once_on_the_div_that_shows_it(page):
    """Issue 35 §5: gradio's Plot drew every new figure from nothing on a new div (after drawing it once more on the
    old one) and laid it out a third time 100 ms later. `ui.plot.Plot` draws the new figure on the same div, once,
    and lays nothing out again while its place keeps its size."""
    step(page)
    settled(page)
    page.evaluate(WATCH_DRAWS)
    step(page)
    page.wait_for_function("() => Object.values(window.drawsSeen).every(seen => seen.draws > 0)")
    settled(page)
    # What must not come has no event to wait for: a second drawing, or gradio's layout 100 ms later, would come by now
    page.wait_for_timeout(300)
    assert page.evaluate(DRAWS_SEEN) == {
        "attention-plot": {"same": True, "draws": 1, "layouts": 0},
        "candidates-plot": {"same": True, "draws": 1, "layouts": 0},
    }


def test_a_plot_in_a_closed_tab_is_drawn_when_it_opens_at_the_width_it_has(page):
    """Issue 35 §5: a figure for a closed tab waits (nobody sees it); opened, it fills its place, not Plotly's
    700 px default."""
    step(page)
    open_tab(page, "Walkthrough")
    page.wait_for_selector("#walkthrough-cross-plot .live-plot[data-drawn='true'] .main-svg")
    settled(page)
    widths = page.evaluate(
        """() => { const gd = document.querySelector('#walkthrough-cross-plot .js-plotly-plot');
        return [gd._fullLayout.width, Math.round(gd.getBoundingClientRect().width)]; }"""
    )
    assert abs(widths[0] - widths[1]) <= 1 and widths[0] != 700, widths


# Two plots in an empty page, one in the window and one 3,000 px below it, with Plotly and the idle callbacks stubbed:
# which divs `ui.plot.DRAW_JS` draws, and when.
PLOT_HARNESS = """<body style="margin: 0">
<div id="near"><div class="live-plot"></div></div><div style="height: 3000px"></div>
<div id="far"><div class="live-plot"></div></div>
<div id="eager"><div class="live-plot" data-eager="true"></div></div></body>"""
PLOT_SETUP = """(script) => {
    window.idle = [];
    window.requestIdleCallback = (callback) => window.idle.push(callback);
    window.runIdle = () => { const due = window.idle.splice(0); due.forEach((callback) => callback()); };
    window.drawnOn = [];
    window.Plotly = {
        react: (div) => { div._fullLayout = {width: div.clientWidth}; window.drawnOn.push(div.parentElement.id); },
        Plots: {resize: () => {}}, purge: () => {},
    };
    window.show = {};
    for (const id of ["near", "far", "eager"]) {
        const props = {value: ""}, watchers = [];
        new Function("element", "props", "watch", script)(
            document.getElementById(id), props, (name, callback) => watchers.push(callback));
        window.show[id] = (value) => { props.value = value; watchers.forEach((callback) => callback()); };
    }
}"""


# Resolves once the page's intersection observers have been called for what has changed so far: a new observer's
# first call comes in the same task as theirs, after them (they were made first).
OBSERVED = """() => new Promise((resolve) => {
    const observer = new IntersectionObserver(() => { observer.disconnect(); resolve(); });
    document.querySelectorAll('.live-plot').forEach((div) => observer.observe(div));
})"""


def test_a_figure_in_the_window_is_drawn_first_and_one_further_down_when_the_page_is_idle_or_scrolled_near(browser):
    """Issue 35 §5: a Step drew all four of the walkthrough's figures before the user saw anything, though three of
    them lie far below the window (on a phone, most figures do). The one in view is drawn at once; the others once
    the page is idle, or as soon as they come near the window; an eager one (the Train tab's replay, which the page's
    scripts move) at once wherever it is."""
    tab = browser.new_page(viewport={"width": 800, "height": 600})
    tab.set_content(PLOT_HARNESS)
    tab.evaluate(PLOT_SETUP, DRAW_JS)
    figure = '{"data": [], "layout": {"height": 200}}'
    tab.evaluate("(figure) => { window.show.near(figure); window.show.far(figure); }", figure)
    tab.evaluate(OBSERVED)  # the observers' first calls
    assert tab.evaluate("window.drawnOn") == ["near"]
    assert tab.evaluate("document.querySelector('#far .live-plot').dataset.drawn") == "false"
    tab.evaluate("window.runIdle()")  # the page is idle: the figure below is drawn
    assert tab.evaluate("window.drawnOn") == ["near", "far"]

    second = figure.replace("200", "210")
    tab.evaluate("(figure) => { window.show.near(figure); window.show.far(figure); }", second)
    tab.evaluate("document.querySelector('#far').scrollIntoView()")  # scrolled to before the page was idle
    tab.wait_for_function("() => window.drawnOn.length === 4")
    tab.evaluate("window.runIdle()")  # nothing left to draw: each figure drawn once
    tab.evaluate(OBSERVED)  # and the observers' calls after the scroll
    assert tab.evaluate("window.drawnOn") == ["near", "far", "near", "far"]
    assert tab.evaluate("document.querySelector('#far .live-plot').dataset.drawn") == "true"
    tab.evaluate("(figure) => window.show.eager(figure)", figure)  # a figure the page's scripts move: at once
    assert tab.evaluate("window.drawnOn").count("eager") == 1
    browser.put_back(tab)


CLIPPED_LABELS = """() => {
    const svg = document.querySelector('#candidates-plot .main-svg').getBoundingClientRect();
    const texts = [...document.querySelectorAll('#candidates-plot .ytick text, #candidates-plot .ytitle')];
    return [texts.length, texts.filter(t => t.getBoundingClientRect().left < svg.left).map(t => t.textContent)];
}"""


def test_the_candidates_labels_fit_the_margins_set_for_them(browser, app_url):
    """Issue 35 §5: the candidates' margins are set from their labels (Plotly no longer measures them): every label
    and the axis title lie inside the figure, in the page's layout and in the presentation's larger text."""
    tab = opened(browser, app_url, 1024, 768)
    source = tab.locator("#source-text textarea")
    source.fill("Unfortunately, the international conference was postponed.")
    source.press("Enter")
    tab.wait_for_function("() => document.querySelector('#source-pieces').innerText.includes('conference')")
    tab.locator("#step-btn").click()
    wait_for_output_change(tab, "")
    settled(tab)
    assert tab.evaluate(CLIPPED_LABELS) == [11, []]  # ten candidates and the title, none clipped
    before = events_sent(tab)
    tab.locator("#presentation input").check()
    tab.wait_for_function("() => document.body.classList.contains('presentation')")
    settled(tab, before)  # the figures drawn again in the presentation's text
    assert tab.evaluate(CLIPPED_LABELS) == [11, []]
    browser.put_back(tab)


def test_the_teacher_forced_table_shows_tokens_as_they_are(page):
    """Issue 13: `<s>` in a code span was escaped twice and shown as `&lt;s&gt;`."""
    step(page)
    open_tab(page, "Masks and heads")  # drawn as it opens: the table comes a moment later
    page.wait_for_function("() => document.querySelector('#teacher-forced').innerText.includes('predicts next')")
    table = page.locator("#teacher-forced").inner_text()
    assert "<s>" in table and "&lt;" not in table and "&amp;" not in table


def test_back_and_run_to_the_end(page):
    before = step(page)
    page.locator("#back-btn").click()
    assert wait_for_output_change(page, before) == ""
    run_to_the_end(page)
    assert len(output(page)) > 3
    shot(page, "run")


def test_toggle_the_causal_mask_changes_decoder_attention(page):
    run_to_the_end(page)  # a whole output, whose upper triangle the mask hides
    page.locator("#attention-family").get_by_text("decoder self-attention").click()
    page.wait_for_function("() => document.querySelector('#attention-plot').innerText.includes('decoder self')")
    masked = page.locator("#attention-plot").inner_text()
    assert "NaN" not in masked  # masked cells are grey, with no number
    assert page.locator("#attention-plot .hm").count() == 2  # the grey layer of masked cells, then the weights
    shot(page, "decoder-self-masked")
    open_tab(page, "Masks and heads")
    page.locator("#causal-mask input").uncheck()
    page.wait_for_function("() => document.querySelector('#teacher-forced').innerText.includes('only valid')")
    assert "mostly copies it" in page.locator("#teacher-forced").inner_text()  # the page says what changes
    open_tab(page, "Attention")
    page.wait_for_function(
        "masked => document.querySelector('#attention-plot').innerText !== masked", arg=masked
    )  # the upper triangle is no longer zero
    shot(page, "causal-mask-off")


def test_silence_a_head_and_compare(page):
    step(page)
    open_tab(page, "Masks and heads")
    page.locator("#silenced-heads label").first.click()
    page.locator("#compare-btn").click()
    page.wait_for_function("() => document.querySelector('#compare-text').innerText.includes('1 head silenced')")
    page.wait_for_selector("#compare-plot .js-plotly-plot")
    chart = page.locator("#compare-plot").inner_text()
    assert "Next token after" in chart and "First token" not in chart  # mid-sentence: the next token
    assert "two bars" in page.locator("#compare-caption").inner_text()  # and a caption says what they are
    shot(page, "silenced-head")


def test_positional_encoding_view(page):
    open_tab(page, "Positions")
    page.wait_for_selector("#pe-plot .js-plotly-plot")
    assert "Positional encoding" in page.locator("#pe-plot").inner_text()
    page.wait_for_selector("#pe-curves .js-plotly-plot")
    legend = page.locator("#pe-curves .legend").text_content()
    assert [f"dim {d}" in legend for d in (0, 32, 64, 126)] == [True] * 4  # d_model 128: fastest to slowest
    shot(page, "positions")
    # another model while the tab is open: its encoding, drawn at once (`ui.tabs.positions.REDRAW_IF_OPEN_JS`)
    page.locator("#model-select input").click()
    model_option(page, "en-de").click()
    page.wait_for_function("() => document.querySelector('#pe-curves .legend')?.textContent.includes('dim 254')")


# The tab the share link names (`ExplorerState.to_link`: URL-safe base64 of JSON).
LINK_TAB = """tab => { const href = document.querySelector('#share-link a')?.getAttribute('href') || '';
    const token = href.replace('?state=', '').split('&')[0].replace(/-/g, '+').replace(/_/g, '/');
    try { return JSON.parse(atob(token + '='.repeat((4 - token.length % 4) % 4))).tab === tab; }
    catch (error) { return false; } }"""


# The events the page has sent, in order (`EVENT_TAP_JS`'s joins): each as its handler's name (its API name) and
# what set it off ("load", "click", "select", "then", …).
SENT = """() => window.events.joins.map((join) => {
    const event = window.gradio_config.dependencies[join.fn];
    return [event.api_name, event.targets[0][1]];
})"""


def test_opening_a_link_sends_only_the_events_that_draw_it(page):
    """A share link to numbers-de with no class and no training setup in it (the `page` fixture's): three events,
    the first tab's selection (Gradio's, before or after the others), the address and the view restored. Not the
    class's join (`by_link`), the Train tab's setup (`from_link` and the settings' change after it), nor the
    positional encodings of another model while their tab is closed: each answered nothing, and the four took a
    quarter of the page's main thread as it opened (`python -m benchmarks.app_bench --openings`)."""
    sent = page.evaluate(SENT)
    names = [name for name, _trigger in sent]
    assert len(sent) == 3 and names.index("address") < names.index("restore"), sent
    assert [trigger for name, trigger in sent if name not in ("address", "restore")] == ["select"], sent


def test_a_link_with_a_training_setup_fills_the_train_tab(browser, app_url):
    """The setup a link holds reaches the Train tab's controls as the page opens (the tab's hidden link field changes
    only then: it starts empty, as a link without a setup leaves it)."""
    state = ExplorerState(model="numbers-de", source="twenty-one", training='{"task":"copy","seed":7}')
    tab = opened(browser, app_url + "?state=" + state.to_link())
    open_tab(tab, "Train")
    tab.wait_for_function("() => document.querySelector('#train-seed input')?.value === '7'")
    assert tab.locator("#train-task input").input_value().lower().startswith("copy")
    browser.put_back(tab)


def test_a_shared_link_restores_the_view(page, browser, app_url):
    """The link, copied with its button, opens the same model, output and tab (issue 13: the tab was lost)."""
    step(page)
    step(page)
    open_tab(page, "Positions")
    page.wait_for_function(LINK_TAB, arg="experiments")  # the link follows the open tab, as its event is answered
    link = page.locator("#share-link a").get_attribute("href")
    assert link.startswith("?state=")
    assert ExplorerState.from_link(link.removeprefix("?state=").split("&")[0]).tab == "experiments"
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.locator("#copy-link").click()
    page.wait_for_function("() => document.querySelector('#copy-link').innerText === 'Link copied'")
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied.startswith(app_url) and copied.endswith(page.locator("#share-link a").get_attribute("href"))
    # Issue 22: on a classroom server (http://192.168.…) the browser has no clipboard API: it still copies, and says so
    page.evaluate("() => navigator.clipboard.writeText('')")
    page.wait_for_function("() => document.querySelector('#copy-link').innerText === 'Copy link'", timeout=5_000)
    clipboard = page.evaluate("() => { const api = navigator.clipboard; Object.defineProperty(navigator, 'clipboard', "
                              "{value: undefined, configurable: true}); return api !== undefined; }")  # fmt: skip
    page.locator("#copy-link").click()
    page.wait_for_function("() => document.querySelector('#copy-link').innerText === 'Link copied'")
    page.evaluate("() => { delete navigator.clipboard; }")  # the API again, to read what was copied
    assert clipboard and page.evaluate("() => navigator.clipboard.readText()") == copied
    expected = output(page)
    other = browser.tab({"width": 1280, "height": 1600}, (RECORD_REFUSED, EVENT_TAP_JS))  # as `opened` opens it
    other.goto(copied)
    other.wait_for_function(
        "expected => (document.querySelector('#output-text textarea') || {}).value === expected", arg=expected
    )
    other.wait_for_function("() => document.querySelector('#model-select input').value.startsWith('numbers-de ·')")
    assert shown_model(other) == "numbers-de"
    assert other.get_by_role("tab", name="Experiments").get_attribute("aria-selected") == "true"
    other.wait_for_selector("#pe-plot .js-plotly-plot")
    shot(other, "restored-link")
    browser.put_back(other)


def test_trained_vs_untrained_and_walkthrough(page):
    open_tab(page, "Trained vs untrained")
    page.locator("#twin-btn").click()
    page.wait_for_selector("#untrained-plot .js-plotly-plot")
    assert "Untrained" in page.locator("#untrained-plot").inner_text()
    text = page.locator("#twin-text").inner_text()
    assert "Trained:" in text and "Untrained twin:" in text  # both translations
    assert "Each row is" in page.locator("#twin-caption").inner_text()
    full = page.locator("#twin-btn").bounding_box()["width"]
    for plot in ("#trained-plot", "#untrained-plot"):  # one above the other, each at full width
        assert page.locator(plot).bounding_box()["width"] > 0.95 * full
    shot(page, "trained-vs-untrained")
    open_tab(page, "Walkthrough")
    for key in ("scores", "masks", "cross", "output"):  # every section's figure drawn as the tab opens
        page.wait_for_selector(f"#walkthrough-{key}-plot .js-plotly-plot .main-svg")
    for key in ("embedding", "scores", "heads", "add_norm", "ffn", "stacks", "layers"):
        page.wait_for_selector(f"#walkthrough-{key}-tensors .tensor")
    # issue 14: it follows the step (never stale): Back takes a row off the masks section's figure, and the text
    rows = "() => document.querySelector('#walkthrough-masks-plot .js-plotly-plot')?._fullData.at(-1).y.length"
    tokens = "() => document.querySelector('#walkthrough-tokens')?.innerText"  # (a moment away while redrawn)
    before = step(page)  # a step to go back from
    settled(page)  # and the masks section's figure, further down, drawn for it too (once the page is idle)
    page.wait_for_selector("#walkthrough-masks-plot .live-plot[data-drawn='true'] .main-svg", state="attached")
    n_rows, text = page.evaluate(rows), page.evaluate(tokens)
    page.locator("#back-btn").click()
    wait_for_output_change(page, before)
    page.wait_for_function(f"n => ({rows})() === n - 1", arg=n_rows)
    page.wait_for_function(f"t => ({tokens})() !== t", arg=text)
    before = output(page)
    page.locator("#step-btn").click()
    wait_for_output_change(page, before)
    page.wait_for_function(f"t => ({tokens})() === t", arg=text)
    settled(page)
    shot(page, "walkthrough")
    # each section opens its stage: the scores section, at the source piece and head it talks about
    said = page.locator("#walkthrough-scores").inner_text()
    head, piece = re.search(r"head (\d+), the query of “([^”]+)”", said).groups()
    page.locator("#walkthrough-scores-link").click()
    page.wait_for_function("() => document.querySelector('#inside-text')?.innerText.startsWith('Self-attention')")
    assert page.locator("#inside-stage input:checked").get_attribute("value") == "encoder.self_attention"
    shown = page.locator("#inside-text").inner_text()
    assert f"(“{piece}”), head {head} of" in shown
    top = "() => document.querySelector('#views').getBoundingClientRect().top / innerHeight"
    page.wait_for_function(f"() => ({top})() >= -0.01 && ({top})() < 0.5")  # scrolled back up to the stage


def test_clicking_an_example_translates_it(page):
    source = page.locator("#source-text textarea")  # another sentence first, so that the example changes it
    source.fill("ninety-seven")
    source.press("Enter")
    page.wait_for_function("() => document.querySelector('#source-pieces').innerText.includes('ninety')")
    page.locator("#examples-box").get_by_text("Examples: sentences to try").click()  # folded (issue 22)
    page.locator("#examples button").first.click()
    page.wait_for_function("() => document.querySelector('#source-text textarea').value === 'twenty-one'")
    page.wait_for_function("() => document.querySelector('#source-pieces').innerText.includes('twenty')")


def test_an_unreachable_hub_model_gives_a_message_and_the_app_keeps_working(page):
    choose = page.locator("#model-select input")
    choose.click()
    model_option(page, "Helsinki-NLP/opus-mt-en-de").click()
    page.wait_for_function("() => document.querySelector('#model-message').innerText.includes('cannot download')")
    assert "opus-mt-en-de" in page.locator("#model-message").inner_text()  # beside the picker (issue 22)
    page.wait_for_function("() => document.querySelector('#model-select input').value.startsWith('numbers-de ·')")
    assert step(page)  # the model it had still answers


def test_a_typed_word_is_forced_piece_by_piece(page):
    """Issue 13: a word that is no single token was refused; now it is split and forced, and the page says how."""
    typed = page.locator("#force-text textarea")
    typed.fill("einundzwanzig")
    typed.press("Enter")
    page.wait_for_function("() => document.querySelector('#output-text textarea').value === 'einundzwanzig'")
    # the status is drawn with the output, but not always in the same frame on a busy machine
    page.wait_for_function("() => document.querySelector('#status').innerText.includes('forced one after another')")


def test_every_figure_has_plotlys_download_button(page):
    open_tab(page, "Attention")
    page.locator("#attention-plot .js-plotly-plot").hover()
    assert page.locator("#attention-plot .modebar-btn[data-title*='Download']").count() == 1


ROWS = (  # the weights' heatmaps of the attention figure (not the grey layers of masked cells)
    "() => document.querySelector('#attention-plot .js-plotly-plot').data.filter(t => t.type === 'heatmap' && "
    "t.coloraxis)"
)


def thumbnail(page, layer: int, head: int):
    return page.locator(f"#attention-thumbnails button[data-layer='{layer}'][data-head='{head}']")


def test_every_layer_and_head_at_a_glance_and_one_opens_large(page):
    """Issue 13: every layer × head of the family as thumbnails, updated at each step; a click opens one large."""
    layers = int(page.locator("#attention-layer input[type=range]").get_attribute("max")) + 1
    assert page.locator("#attention-thumbnails button.thumb").count() == layers * 4  # the built-in models: 4 heads
    image = "() => document.querySelector(\"#attention-thumbnails button[data-layer='1'] img\").src"
    before_image = page.evaluate(image)
    page.locator("#step-btn").click()
    wait_for_output_change(page, "")
    page.wait_for_function(f"before => ({image})() !== before", arg=before_image)  # they follow the step
    thumbnail(page, 1, 2).click()
    page.wait_for_function("() => document.querySelector('#head input').value === 'head 2'")
    page.wait_for_function(
        "() => document.querySelector('#attention-plot .gtitle').textContent.endsWith('layer 1, head 2')"
    )
    assert page.locator("#attention-layer input[type=number]").input_value() == "1"
    page.wait_for_function(
        "() => document.querySelector(\"#attention-thumbnails button[data-layer='1'][data-head='2']\")"
        ".classList.contains('selected')"
    )
    assert page.locator("#attention-thumbnails button.selected").count() == 1
    shot(page, "thumbnails")


def test_the_three_families_of_a_layer_side_by_side_step_together(browser, app_url):
    # Opened on layer 1 by its link: typing a layer is tested with the alignment lines (the layer the user picks)
    layer_1 = ExplorerState(model="numbers-de", source="twenty-one", layer=1).to_link()
    page = opened(browser, app_url + "?state=" + layer_1, 1280, 1600)
    page.wait_for_function("() => document.querySelector('#attention-plot .gtitle').textContent.includes('layer 1')")
    page.locator("#attention-view").get_by_text("three families side by side").click()
    # the rows read in the evaluation that finds three heatmaps (read after it, they were once read mid-drawing)
    rows = page.wait_for_function(f"() => {{ const r = ({ROWS})(); return r.length === 3 && r.map(t => t.y.length); }}")
    source_rows, target_rows, cross_rows = rows.json_value()
    assert cross_rows == target_rows  # cross-attention: one row per target piece, like decoder self-attention
    assert page.locator("#attention-plot").inner_text().count("(layer 1)") == 3
    assert "three places" in page.locator("#attention-caption").inner_text()
    before = output(page)
    page.locator("#step-btn").click()
    wait_for_output_change(page, before)
    page.wait_for_function(
        f"n => {{ const r = ({ROWS})().map(t => t.y.length); return r[1] === n + 1 && r[2] === n + 1; }}",
        arg=target_rows,
    )
    assert page.evaluate(f"() => ({ROWS})()[0].y.length") == source_rows  # the encoder's rows stay
    shot(page, "three-families")
    browser.put_back(page)


def test_cross_attention_as_alignment_lines(page):
    step(page)
    page.locator("#attention-view").get_by_text("alignment lines").click()
    lines = "() => document.querySelector('#attention-plot .js-plotly-plot').data.filter(t => t.mode === 'lines')"
    page.wait_for_function(f"() => ({lines})().length > 0")
    assert "(choosing now)" in page.locator("#attention-plot").inner_text()  # the step choosing now, shifted by one
    assert "The shift by one" in page.locator("#attention-caption").inner_text()
    shot(page, "alignment")
    page.locator("#attention-view").get_by_text("one family").click()
    page.wait_for_function(f"() => ({ROWS})().length === 1")


STAGE_HEADINGS = {  # what the text of each stage starts with
    "Encoder · Input embedding + positions": "Source embedding",
    "Encoder · Self-attention": "Self-attention",
    "Encoder · Feed forward": "Position-wise feed-forward",
    "Decoder · Output embedding + positions": "Target embedding",
    "Decoder · Masked self-attention": "Masked self-attention",
    "Decoder · Cross-attention": "Cross-attention",
    "Decoder · Feed forward": "Position-wise feed-forward",
    "The stacks: residual stream": "The stacks",
    "Linear + softmax": "Linear + softmax",
    "What each layer would say": "What each layer would say",
}
INSIDE_BARS = """() => {  // the labels and values of the last row of bars of the Inside a step view
    const bars = [...[...document.querySelectorAll('#inside-plot .bars')].pop().querySelectorAll('.bar')];
    return [bars.map(b => b.dataset.label), bars.map(b => Number(b.dataset.value))];
}"""
BARS = """selector => {  // the labels and values of the last bar trace of a figure (as plotly decoded them)
    const gd = document.querySelector(selector + ' .js-plotly-plot');
    const bars = gd._fullData.filter(t => t.type === 'bar').pop();
    const across = bars.orientation === 'h';
    return [Array.from(across ? bars.y : bars.x), Array.from(across ? bars.x : bars.y)];
}"""


def test_inside_a_step_walks_every_stage_and_ends_at_the_candidates(page):
    """Issue 14: every stage of the architecture, with its tensors; the output's probabilities are the chart's."""
    open_tab(page, "Inside a step")
    page.wait_for_selector("#inside-plot .tensor")
    page.wait_for_selector("#inside-diagram .js-plotly-plot")
    add_norms = page.locator("#inside-stage label").filter(has_text="Add & Norm")
    assert add_norms.count() == 5  # two in each encoder layer, three in each decoder layer
    for i in range(add_norms.count()):
        add_norms.nth(i).click()
        page.wait_for_function("() => document.querySelector('#inside-text').innerText.includes('Residual connection')")
    for label, heading in STAGE_HEADINGS.items():
        page.locator("#inside-stage label").filter(has_text=label).first.click()
        page.wait_for_function("h => document.querySelector('#inside-text').innerText.startsWith(h)", arg=heading)
        page.wait_for_selector("#inside-plot .tensor")
        if "attention" in heading:  # the shapes in the tutorials' notation
            assert "(d_k,)" in page.locator("#inside-plot").inner_text()
    shot(page, "inside-layers")
    page.locator("#inside-stage label").filter(has_text="Linear + softmax").click()
    page.wait_for_function("() => document.querySelector('#inside-text').innerText.startsWith('Linear + softmax')")
    settled(page)
    labels, values = page.evaluate(INSIDE_BARS)
    chart_labels, chart_values = page.evaluate(BARS, "#candidates-plot")
    assert labels == [label.split(" · ", 1)[1] for label in chart_labels]
    assert max(abs(a - b) for a, b in zip(values, chart_values, strict=True)) < 1e-4
    shot(page, "inside-output")
    # it follows the decoding: Step moves the stage to the next position, Back to the one before
    page.locator("#inside-stage label").filter(has_text="Masked self-attention").click()
    page.wait_for_function("() => document.querySelector('#inside-text').innerText.startsWith('Masked')")
    assert re.search(r"position (\d+)", page.locator("#inside-text").inner_text())[1] == "0"  # nothing written yet
    for button, position in (("#step-btn", 1), ("#back-btn", 0), ("#step-btn", 1)):
        page.locator(button).click()
        page.wait_for_function("p => document.querySelector('#inside-text').innerText.includes(`position ${p} `)",
                               arg=position)  # fmt: skip


ON_SCREEN = """ids => ids.map(id => {
    const r = document.querySelector(id).getBoundingClientRect();
    return [id, r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth && r.height > 0];
})"""


def test_the_presentation_layout_holds_a_step_on_one_1024x768_screen(browser, app_url):
    """Issue 13: with the switch on, the sentence, the buttons, the output and the heatmap are visible without
    scrolling at 1024×768, in large type, the settings folded away; a shared link remembers the layout."""
    small = opened(browser, app_url, 1024, 768)
    size = "() => parseFloat(getComputedStyle(document.querySelector('#output-text textarea')).fontSize)"
    normal_size = small.evaluate(size)
    assert small.locator("#strategy").is_visible()
    small.locator("#presentation input").check()
    small.wait_for_function("() => document.body.classList.contains('presentation')")
    small.locator("#step-btn").click()
    wait_for_output_change(small, "")
    font = "() => parseFloat(document.querySelector('#attention-plot .xtick text').style.fontSize)"
    small.wait_for_function(f"() => ({font})() >= 16")  # the figures are drawn again, in large type
    elements = ["#source-text", "#step-btn", "#back-btn", "#run-btn", "#reset-btn", "#output-text",
                "#attention-plot .main-svg"]  # fmt: skip
    assert all(shown for _, shown in small.evaluate(ON_SCREEN, elements)), small.evaluate(ON_SCREEN, elements)
    assert small.evaluate("() => scrollY") == 0
    assert small.evaluate(size) >= 19 > normal_size
    assert not small.locator("#strategy").is_visible()  # the decoding settings are folded away
    shot(small, "presentation-1024")
    assert small.locator("#copy-link").is_visible()  # the teacher can hand out the link in this layout too
    link = small.locator("#share-link a").get_attribute("href")
    small.goto(app_url + link)
    small.wait_for_function("() => document.body.classList.contains('presentation')")
    assert small.locator("#presentation input").is_checked()
    browser.put_back(small)


def test_the_model_picker_says_what_each_model_is(page):
    page.locator("#model-select input").click()
    option = model_option(page, "en-de").inner_text()
    assert "parameters" in option and "chrF" in option
    page.keyboard.press("Escape")
    page.locator("#model-about-box").get_by_text("About this model").click()
    about = page.locator("#model-about").inner_text()
    assert "Source." in about and "Size." in about and "Quality." in about and "parameters" in about
    assert "Runs on the CPU." in about or "Runs on a GPU: " in about  # where the app put its models


INJECTION = (
    "<img src=x onerror=\"window.__pwned='img'\"> <script>window.__pwned='script'</script> "
    "[link](javascript:window.__pwned='link') <b>bold</b> $\\href{javascript:alert(1)}{x}$ **stars**"
)


def test_markup_typed_by_a_user_is_shown_as_text_and_never_runs(page):
    """Issue 6: text that looks like HTML, script, Markdown or LaTeX stays text in every view."""
    open_tab(page, "Attention")
    choose = page.locator("#model-select input")
    choose.click()
    model_option(page, "en-de").click()
    page.wait_for_function("() => document.querySelector('#model-select input').value.startsWith('en-de ·')")
    # The model's change ends with an event that applies every setting as it was when it left: a sentence sent before
    # its answer came could be set back (docs/architecture.md: events that overlap)
    settled(page)
    source = page.locator("#source-text textarea")
    source.fill(INJECTION)
    source.press("Enter")
    page.wait_for_function("() => document.querySelector('#source-pieces').innerText.includes('script')")
    rows = "() => document.querySelector('#attention-plot .js-plotly-plot').data[0].y.length"
    page.locator("#step-btn").click()
    page.wait_for_function(f"() => ({rows})() === 2")  # the first step is drawn
    force = page.locator("#force-text textarea, #force-text input").first
    force.fill("<img src=x onerror=\"window.__pwned='force'\">")
    force.press("Enter")
    page.wait_for_function("() => document.querySelector('#status').innerText.length > 0")
    page.locator("#run-btn").click()
    page.wait_for_function("() => document.querySelector('#candidates-plot').innerText.includes('finished')")
    page.locator("#strategy").get_by_text("beam", exact=True).click()  # the beam tree labels nodes with pieces
    page.locator("#reset-btn").click()
    # Reset and Step may run at the same time in the quick queue; Step only once the reset has been applied
    page.wait_for_function("() => document.querySelector('#output-text textarea').value === ''")
    page.locator("#step-btn").click()
    open_tab(page, "Beam search")
    page.wait_for_selector("#beam-plot .js-plotly-plot")
    page.locator("#beam-plot .js-plotly-plot").hover()  # hover text too
    page.wait_for_selector("#share-link a")
    open_tab(page, "Attention")
    # the source pieces label the x axis
    page.locator("#attention-family").get_by_text("cross-attention", exact=True).click()
    page.wait_for_function("() => document.querySelector('#attention-plot').innerText.includes('script')")

    assert page.evaluate("() => window.__pwned") is None  # nothing ran
    app = "gradio-app"
    assert page.locator(f"{app} img[src='x'], {app} script:not([src]):has-text('__pwned')").count() == 0
    assert page.locator(f"{app} a[href^='javascript']").count() == 0
    chips = page.locator("#source-pieces").inner_text()
    assert "script" in chips and "<unk>" in chips  # shown as text (en-de has no piece for "<": it shows <unk>)
    ticks = page.evaluate(
        "() => [...document.querySelectorAll('#attention-plot .xtick text')].map(t => t.textContent).join(' ')"
    )
    assert "<unk>" in ticks or "script" in ticks  # the axis labels carry the pieces as text
    shot(page, "injection")


HEATMAP_ROWS = "() => document.querySelector('#attention-plot .js-plotly-plot').data[0].y.length"
LONG_SENTENCE = (
    "The children played in the garden all afternoon while their parents cooked dinner, and when the sun went "
    "down everyone sat together at the big table to eat and talk about the long day."
)


# Run, then Stop as soon as the Run's first partial answer reaches the page (`EVENT_TAP_JS`), before Gradio draws it:
# waiting until the output had changed left a busy browser, drawing, too late for a Run of half a second.
RUN_THEN_STOP = """() => {
    window.events.onPartial = () => {
        window.events.onPartial = null;
        document.querySelector('#stop-btn').click();
    };
    document.querySelector('#run-btn').click();
}"""


def test_stop_stops_and_leaves_the_page_true(browser, app_url):
    """Issue 22: positional encodings off, 128 tokens, Run then Stop. The message said "Running…" for ever, the
    views stayed at the step before Run, and Back made the output longer: the server had decoded on. Now the page
    shows the step where the server halted, every view drawn for it, and Back takes one token away."""
    tab = opened(browser, app_url)
    source = tab.locator("#source-text textarea")
    source.fill(LONG_SENTENCE)
    source.press("Enter")
    tab.wait_for_function("() => document.querySelector('#source-pieces').innerText.includes('afternoon')")
    open_tab(tab, "Positions")
    tab.locator("#positions-toggle input").uncheck()
    limit = tab.locator("#decoding-settings input[type=number]").first
    limit.fill("128")
    limit.press("Enter")
    settled(tab)
    open_tab(tab, "Attention")
    for _ in range(5):  # a busy machine may finish the Run (half a second) before the Stop reaches it: again
        tab.locator("#reset-btn").click()
        tab.wait_for_function(f"() => ({HEATMAP_ROWS})() === 1")
        tab.evaluate(RUN_THEN_STOP)
        # Either the Stop halted the Run ("Stopped after"), or the Run had ended first: then the Stop's "Nothing is
        # running" and the Run's own last message may reach the page in either order. Wait until it has settled.
        tab.wait_for_function("() => !document.querySelector('#status').innerText.startsWith('Running')")
        settled(tab)
        if tab.locator("#status").inner_text().startswith("Stopped after"):
            break
    stopped, status = output(tab), tab.locator("#status").inner_text()
    assert status.startswith("Stopped after"), status
    tokens = int(re.match(r"Stopped after (\d+) tokens?", status)[1])
    settled(tab)  # every event answered: nothing comes after the Run's last message
    assert output(tab) == stopped and tab.locator("#status").inner_text() == status
    assert tab.evaluate(HEATMAP_ROWS) == tokens + 1  # the start token and every output token
    assert tab.locator("#force-choice label").count() >= 2  # the candidates for the token after
    tab.locator("#back-btn").click()
    tab.wait_for_function(f"n => ({HEATMAP_ROWS})() === n", arg=tokens)
    assert stopped.startswith(output(tab)) and "Stopped" not in tab.locator("#status").inner_text()
    tab.locator("#stop-btn").click()  # nothing running: it says so, and the output stays
    tab.wait_for_function("() => document.querySelector('#status').innerText.startsWith('Nothing is running')")
    tab.locator("#run-btn").click()  # Run, Stop, and Run again at once: the second Run goes on to the end
    tab.locator("#stop-btn").click()
    tab.locator("#run-btn").click()
    tab.wait_for_function("() => document.querySelector('#status').innerText.includes('length limit of 127 tokens')")
    assert "reads at most 128 positions" in tab.locator("#status").inner_text()  # not the 128 asked for: why
    shot(tab, "stopped")
    browser.put_back(tab)


def note(tab, selector: str = "#source-note") -> str:
    """The message's text, once no event is in progress there (gradio writes "processing" over an event's outputs)."""
    tab.wait_for_function("s => !document.querySelector(s).innerText.includes('processing |')", arg=selector)
    return tab.locator(selector).inner_text()


def test_nothing_changes_silently(browser, app_url):
    """Issue 22: the pieces stayed those of the last sentence sent, a Hub model picked offline went back to en-de
    with its message below the fold, and bad input was changed or ignored without a word."""
    tab = opened(browser, app_url, 1024, 768)
    source = tab.locator("#source-text textarea")
    pieces = "() => document.querySelector('#source-pieces').innerText"
    source.fill("Good morning, teacher.")
    tab.locator("#introduction").click()  # the box is left: the pieces follow it, as after Enter
    tab.wait_for_function(f"() => ({pieces})().includes('teach')")
    assert note(tab) == "" and output(tab) == ""
    source.fill("我爱学习 😀")  # Chinese and an emoji in en-de: <unk>, said so
    source.press("Enter")
    tab.wait_for_function("() => document.querySelector('#source-note').innerText.includes('does not know')")
    assert "“我爱学习”" in note(tab) and "“😀”" in note(tab) and "cannot contain them" in note(tab)
    source.fill("")  # an empty box: the old pieces and views go, and the message says what to do
    source.press("Enter")
    tab.wait_for_function(f"() => ({pieces})() === ''")
    assert "The sentence box is empty" in tab.locator("#status").inner_text() and note(tab) == ""
    pasted = "The cat sleeps. " * 200  # 3,200 characters, 800 pieces: cut after a word, said so
    source.fill(pasted)
    source.press("Enter")
    tab.wait_for_function("() => document.querySelector('#source-note').innerText.includes('3,200 characters')")
    assert "en-de at most 128 pieces" in note(tab)
    assert len(source.input_value()) <= 500 and pasted.startswith(source.input_value() + " ")
    tab.locator("#model-select input").click()  # a Hub model offline: the message beside the picker, on screen
    option = model_option(tab, "Helsinki-NLP/opus-mt-en-fr")
    assert "needs the internet" in option.inner_text()
    option.click()
    tab.wait_for_function("() => document.querySelector('#model-message').innerText.includes('cannot download')")
    message = tab.locator("#model-message").bounding_box()
    picker = tab.locator("#model-select").bounding_box()
    assert 0 <= message["y"] - (picker["y"] + picker["height"]) < 60 and message["y"] + message["height"] < 768
    assert shown_model(tab) == "en-de"
    open_tab(tab, "Positions")  # dimensions that cannot be drawn are named
    dims = tab.locator("#dims textarea, #dims input").first
    dims.fill("abc, 999")
    dims.press("Enter")
    tab.wait_for_function("() => document.querySelector('#dims-note').innerText.includes('Left out')")
    assert "“abc” is not a whole number; 999 is not between 0 and 255" in note(tab, "#dims-note")
    shot(tab, "notes-1024")
    browser.put_back(tab)


ALIGNMENT_SENTENCE = (
    "We compared the prices in three different shops before we bought the washing machine, and then we drove home "
    "through the old town, where my grandmother was waiting for us with coffee and a large apple cake that she had "
    "baked in the morning for the whole family."
)  # en-de: 69 source pieces, 37 output pieces
TICK_LABELS = """axis => [...document.querySelectorAll(`#attention-plot g.${axis}tick text`)]
    .map(text => text.getBoundingClientRect()).filter(box => box.width > 0)
    .map(box => [box.left, box.top, box.right, box.bottom])"""


def overlaps(boxes: list[list[float]]) -> list[tuple[int, int]]:
    """The pairs of boxes (left, top, right, bottom) that overlap by more than half a pixel."""
    return [
        (i, j)
        for i, a in enumerate(boxes)
        for j, b in enumerate(boxes[i + 1 :], i + 1)
        if min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5
    ]


def test_alignment_lines_open_on_the_most_peaked_layer_and_labels_do_not_overlap(browser, app_url):
    """Issue 22: the alignment lines opened on layer 0, the muddiest, while the caption said middle layers align
    best; and with a long output the pieces' names along the bottom ran into each other."""
    tab = opened(browser, app_url)  # en-de, its first example, nothing written yet
    layer = tab.locator("#attention-layer input[type=number]")
    caption = "() => document.querySelector('#attention-caption').innerText"
    title = "() => document.querySelector('#attention-plot .gtitle').textContent"
    assert layer.input_value() == "0"
    tab.locator("#attention-view").get_by_text("alignment lines").click()
    tab.wait_for_function(f"() => ({caption})().includes(' is shown')")
    assert layer.input_value() == "2"  # the layer control follows
    shown = tab.evaluate(caption)
    assert re.search(r"Layer 2 is shown: its cross-attention is the most peaked for this sentence \(mean top weight "
                     r"0\.\d\d; layer 0: 0\.\d\d, layer 1: 0\.\d\d\)", shown)  # fmt: skip
    assert "Middle layers often align most clearly" not in shown
    tab.wait_for_function(f"() => ({title})().includes('layer 2 (the most peaked)')")
    shot(tab, "alignment-peaked")

    layer.fill("0")  # a layer the user picks stays, step after step, and says which one would be clearer
    layer.press("Enter")
    tab.wait_for_function(f"() => ({caption})().includes('Layer 0 is shown; the most peaked for this sentence is')")
    tab.locator("#step-btn").click()
    wait_for_output_change(tab, "")
    tab.wait_for_function(f"() => ({caption})().includes('over the pieces so far')")
    assert layer.input_value() == "0" and "Layer 0 is shown;" in tab.evaluate(caption)
    first = tab.locator("#source-text textarea").input_value()  # a shared link names its layer, and opens on it
    link = "?state=" + ExplorerState(model="en-de", source=first, view="alignment", layer=0, choices=(None,)).to_link()

    source = tab.locator("#source-text textarea")  # a long sentence, translated to the end
    source.fill(ALIGNMENT_SENTENCE)
    source.press("Enter")
    tab.wait_for_function("() => document.querySelector('#source-pieces').innerText.includes('coffee')")
    tab.locator("#run-btn").click()
    last = "() => document.querySelector('#attention-plot .js-plotly-plot').layout.xaxis.ticktext.at(-1)"
    tab.wait_for_function(f"() => ({last})() === '&lt;/s&gt;'", timeout=60_000)  # the newest piece keeps its name
    settled(tab)  # plotly turns the labels once they are laid out
    bottom, top = tab.evaluate(TICK_LABELS, "x"), tab.evaluate(TICK_LABELS, "x2")
    assert len(bottom) >= 12 and len(top) >= 23  # of 37 and 69 pieces: at least one in three named
    assert overlaps(bottom) == [] and overlaps(top) == []
    heading = tab.locator("#attention-plot .gtitle").bounding_box()  # nor does the title run into the top row
    heading = [heading["x"], heading["y"], heading["x"] + heading["width"], heading["y"] + heading["height"]]
    assert overlaps([heading, *top]) == []
    figure = tab.locator("#attention-plot .main-svg").first.bounding_box()
    for box in bottom + top:  # inside the figure, not cut off at its edges
        assert figure["x"] - 1 <= box[0] and box[2] <= figure["x"] + figure["width"] + 1
        assert figure["y"] - 1 <= box[1] and box[3] <= figure["y"] + figure["height"] + 1
    lines = tab.locator("#attention-plot .nsewdrag").first.bounding_box()
    assert lines["height"] >= 250  # the labels took room of their own, not the lines'
    shot(tab, "alignment-long")
    tab.locator("#presentation input").check()  # and in the projector's larger type
    tab.wait_for_function(f"() => ({title})().startsWith('Alignment, layer 0')")
    settled(tab)
    bottom, top = tab.evaluate(TICK_LABELS, "x"), tab.evaluate(TICK_LABELS, "x2")
    heading = tab.locator("#attention-plot .gtitle").bounding_box()
    heading = [heading["x"], heading["y"], heading["x"] + heading["width"], heading["y"] + heading["height"]]
    assert len(bottom) >= 8 and overlaps(bottom) == [] and overlaps([heading, *top]) == []
    shot(tab, "alignment-long-presentation")

    tab.goto(app_url + link)
    tab.wait_for_function("() => (document.querySelector('#attention-caption') || {innerText: ''}).innerText"
                          ".includes('Layer 0 is shown;')")  # fmt: skip
    assert layer.input_value() == "0"
    browser.put_back(tab)


OVERFLOWING = """() => [...document.querySelectorAll('.contain *')]
    .filter(e => e.offsetParent && !e.closest('.visually-hidden, .sr-only') && e.scrollWidth > e.clientWidth + 1
                 && !['visible', 'clip'].includes(getComputedStyle(e).overflowX))
    .map(e => `${e.id || e.className} ${e.scrollWidth} > ${e.clientWidth}`)"""
HIDDEN_LINES = """ids => ids.filter(id => { const box = document.querySelector(id + ' textarea');
                                     return box.scrollHeight > box.clientHeight + 1; })"""
THREE_LINES = (
    "The children played in the garden all afternoon while their parents cooked dinner, and when the sun went down "
    "everyone sat together at the big table to eat."
)


def test_the_first_screen_holds_step_and_a_figure(browser, app_url):
    """Issue 22: at 1024×768 Step was at y = 897 and the heatmap at 1,791 (at 1400×1000, 1,450): the views now sit
    beside the sentence and the decoding, the examples folded, the decoding settings after the step. The page opens
    on the projector's screen, then the window grows to a laptop's."""
    tab = opened(browser, app_url, 1024, 768)
    first_screen = ["#source-text", "#step-btn", "#run-btn", "#back-btn",
                    "#attention-plot .main-svg"]  # fmt: skip
    for width, height in ((1024, 768), (1400, 1000)):
        tab.set_viewport_size({"width": width, "height": height})
        tab.wait_for_function(PLOT_FILLS, arg="#attention-plot")  # Plotly has followed the window
        shown = tab.evaluate(ON_SCREEN, first_screen)
        assert all(on for _, on in shown), (width, shown)
        assert tab.evaluate(OVERFLOWING) == [], width
        shot(tab, f"first-screen-{width}")
    browser.put_back(tab)


def test_the_projector_layout_holds_a_whole_step_at_1024x768(browser, app_url):
    """Issue 22: with a 3-line sentence the sentence box showed 1.5 of its lines and the output box too after Run,
    the Layer control was 2 px wider than its column, Plotly's toolbar covered the figures' titles, and the
    candidates lay below the screen."""
    tab = opened(browser, app_url, 1024, 768)
    tab.locator("#presentation input").check()
    tab.wait_for_function("() => document.body.classList.contains('presentation')")
    source = tab.locator("#source-text textarea")
    source.fill(THREE_LINES)
    source.press("Enter")
    tab.wait_for_function("() => document.querySelector('#source-pieces').innerText.includes('afternoon')")
    tab.locator("#run-btn").click()
    tab.wait_for_function("() => document.querySelector('#candidates-plot').innerText.includes('finished')")
    settled(tab)
    tab.evaluate("() => scrollTo(0, 0)")
    step = ["#source-text", "#step-btn", "#run-btn", "#back-btn", "#reset-btn", "#stop-btn", "#output-text",
            "#attention-plot .main-svg", "#candidates-plot .main-svg"]  # fmt: skip
    assert all(shown for _, shown in tab.evaluate(ON_SCREEN, step)), tab.evaluate(ON_SCREEN, step)
    assert tab.evaluate(HIDDEN_LINES, ["#source-text", "#output-text"]) == []
    assert tab.evaluate(OVERFLOWING) == []
    for plot in ("#attention-plot", "#candidates-plot"):  # the title lies below the toolbar's row
        tab.locator(plot + " .main-svg").first.hover()
        toolbar = tab.locator(plot + " .modebar").bounding_box()
        title = tab.locator(plot + " .gtitle").bounding_box()
        assert title["y"] >= toolbar["y"] + toolbar["height"] - 1, (plot, title, toolbar)
    shot(tab, "projector-1024")
    browser.put_back(tab)


def test_the_text_is_set_in_the_typeface_the_app_serves(browser, app_url):
    """Issue 22: the theme's Montserrat drew "z" with a bar and "E" like "Ɛ" ("ƶu Hause"). Noto Sans, served by
    the app (no internet), with Chinese fonts after it."""
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})  # a tab of its own: its own listener
    loaded = []
    tab.on("response", lambda r: loaded.append((r.status, r.url)) if r.url.endswith(".woff2") else None)
    tab.goto(app_url)
    tab.wait_for_selector("#attention-plot .js-plotly-plot")
    tab.evaluate("() => document.fonts.ready")
    family = tab.evaluate("() => getComputedStyle(document.querySelector('#source-text textarea')).fontFamily")
    assert family.startswith('"Noto Sans", "Noto Sans SC"')
    assert tab.evaluate("() => document.fonts.check('16px \"Noto Sans\"')")
    assert (200, f"{app_url}gradio_api/file={ROOT}/assets/fonts/noto-sans-latin-400-normal.woff2") in loaded
    assert "Noto Sans" in tab.evaluate(
        "() => getComputedStyle(document.querySelector('#attention-plot .gtitle')).fontFamily"
    )
    browser.put_back(tab)


TAB_TITLES = "[...document.querySelectorAll('#views [role=tab]')].map(tab => tab.innerText)"


# The first words the page showed on its Step button and its first tab, read at every frame until both are there.
FIRST_WORDS_JS = """
window.firstWords = {};
const readFirstWords = () => {
    const shown = {step: document.querySelector('#step-btn'), tab: document.querySelector('#views [role=tab]')};
    for (const [name, element] of Object.entries(shown)) {
        if (element && element.innerText.trim() && !(name in window.firstWords)) {
            window.firstWords[name] = element.innerText.trim();
        }
    }
    if (Object.keys(window.firstWords).length < 2) requestAnimationFrame(readFirstWords);
};
requestAnimationFrame(readFirstWords);
"""


def test_the_page_opens_in_chinese_and_switches_back_without_a_reload(browser, app_url):
    """Issue 25: `?lang=zh` opens the page in Chinese (gradio's own language too), from the first frame the Step button
    is in, in this English browser (`ui.browser_internals.PAGE_LANGUAGE_JS`: two seconds of English before it), set
    in a Chinese typeface that the app serves; the switch goes back to English in place and writes the language into
    the address."""
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
    tab.add_init_script(FIRST_WORDS_JS)
    loaded = []
    tab.on("response", lambda r: loaded.append((r.status, r.url)) if "noto-sans-sc" in r.url else None)
    tab.goto(app_url + "?lang=zh")
    tab.wait_for_selector("#attention-plot .js-plotly-plot")
    tab.wait_for_function("() => document.querySelector('#presentation').innerText.includes('演示布局')")
    assert tab.locator("#language input:checked").get_attribute("value") == "zh"
    assert "一个词元一个词元" in tab.locator("#introduction").inner_text()
    tab.evaluate("() => document.fonts.ready")
    assert tab.evaluate("() => document.fonts.check('16px \"Noto Sans SC\"', '演示布局')")
    assert loaded and all(status == 200 for status, _ in loaded), loaded  # only the slices the page's text needs
    assert len(loaded) < 20
    assert tab.locator("#step-btn").inner_text() == "下一步" and tab.locator("#source-text textarea").input_value()
    assert tab.evaluate("() => window.firstWords") == {"step": "下一步", "tab": "注意力"}
    tab.wait_for_function(f"() => {TAB_TITLES}.includes('单步详解')")
    assert step(tab)  # a Chinese page steps like an English one
    tab.get_by_label("English").check()
    tab.wait_for_function("() => document.querySelector('#presentation').innerText.includes('Presentation layout')")
    assert tab.locator("#step-btn").inner_text() == "Step"
    tab.wait_for_function(f"() => {TAB_TITLES}.includes('Inside a step')")  # every tab's title, not the open one's
    assert tab.evaluate("() => new URL(location.href).searchParams.get('lang')") == "en"
    shot(tab, "chinese-page")
    browser.put_back(tab)


# What may stay Latin on the Chinese page: names, the formulas of the paper, the footer of gradio, and the pieces
# of the English translation (read from the page itself, `english_left`).
LATIN_ON_A_CHINESE_PAGE = set(
    [
        "Transformer",
        "Explorer",
        "English",
        "Hugging",
        "Face",
        "Hub",
        "opus-mt",
        "SentencePiece",
        "API",
        "Gradio",
        "zh-en",
        "numbers-de",
        "en-de",
        "softmax",
        "scores",
        "weights",
        "head",
        "output",
        "Concat",
        "MultiHead",
        "memory",
        "LayerNorm",
        "FFN",
        "ReLU",
        "relu",
        "Add",
        "Norm",
        "Sublayer",
        "sublayer",
        "logit",
        "lens",
        "pos",
        "model",
        "layers",
        "pad",
        "sin",
        "cos",
        "out",
        "chrF",
        "BLEU",
        "HSK",
        "CC-CEDICT",
        "LibreOffice",
        "GNOME",
        "Ding",
        "OPUS-MT",
        "Marian",
        "Helsinki-NLP",
        "pre-norm",
        "post-norm",
        "Captum",  # the Why? tab: the library, and the authors of the methods it cites
        "Sundararajan",
        "Taly",
        "Yan",
        "DecoderLens",
        "Langedijk",
    ]
)
WORDS_OF_THE_PAGE = """() => {  // the text of the page, and the words of the English pieces and output it shows
    let text = document.querySelector('gradio-app').innerText;
    for (const code of document.querySelectorAll('gradio-app code, gradio-app pre, gradio-app .katex')) {
        text = text.replace(code.innerText, ' ');  // a formula, the link's state token
    }
    const output = document.querySelector('#output-text textarea').value;
    const pieces = [...text.matchAll(/▁([A-Za-z'’-]+)/g)].map(m => m[1]);
    return [text, [...output.matchAll(/[A-Za-z'’-]+/g)].map(m => m[0]).concat(pieces)];
}"""


def english_left(tab) -> list[str]:
    """The English words on the page that are neither a name, a formula nor a piece of the translation, each with
    the text around it. Read once no event runs: Gradio's own progress line ("processing | 0.2/0.1s") is gone."""
    tab.wait_for_function("() => !document.querySelector('gradio-app').innerText.includes('processing |')")
    text, translated = tab.evaluate(WORDS_OF_THE_PAGE)
    allowed = LATIN_ON_A_CHINESE_PAGE | set(translated)
    return [
        text[max(0, found.start() - 30) : found.end() + 30].replace("\n", " ")
        for found in re.finditer(r"(?<![A-Za-z▁_])[A-Za-z][A-Za-z'’-]{2,}", text)
        if found[0] not in allowed and not found[0].startswith(("d_", "W_"))
    ]


def test_the_why_tab_explains_the_step_and_a_click_on_the_census_opens_that_head_silenced(browser, app_url):
    """Issue 39: the contributions beside the attention, a contrast with another candidate, the census asked for,
    and a click on a cell of its encoder grid: the Attention tab opens on that head, which is silenced."""
    state = ExplorerState(model="numbers-de", source="three hundred and forty-two", choices=(None,))
    tab = opened(browser, app_url + "?state=" + state.to_link(), 1024, 768)
    open_tab(tab, "Why?")
    tab.wait_for_selector("#contributions-plot .js-plotly-plot")
    assert "from the source sentence" in tab.locator("#contributions-text").inner_text()
    tab.locator("#why-versus input").click()
    tab.get_by_role("option").nth(1).click()  # the first candidate other than the token itself
    tab.wait_for_function("() => document.querySelector('#contributions-plot .gtitle').textContent.startsWith('Why')")
    tab.locator("#census-btn").click()
    tab.wait_for_selector("#census-plot .js-plotly-plot")
    grid = tab.locator("#census-plot .xy .nsewdrag").bounding_box()  # the encoder's: 2 layers × 4 heads
    tab.mouse.click(grid["x"] + grid["width"] * 3 / 8, grid["y"] + grid["height"] * 3 / 4)  # layer 1, head 1
    tab.wait_for_function(
        "() => document.querySelector('#views [role=tab][aria-selected=true]').innerText === 'Attention'"
    )
    tab.wait_for_function("() => document.querySelector('#attention-family input[value=encoder]').checked")
    # silenced: the page says so beside the output, whichever view is open (ui/switches.py)
    tab.wait_for_function("() => /1 head silenced/.test(document.querySelector('#switched-off').innerText)")
    open_tab(tab, "Masks and heads")
    checked = tab.locator("#silenced-heads label:has(input:checked)")
    assert checked.count() == 1 and "layer 1 · head 1" in checked.inner_text()


def test_the_chinese_page_shows_no_english_text_through_a_whole_step(browser, app_url):
    """Issue 25: `?lang=zh`, a few Steps of the Chinese model, then every view: no English label, caption, message,
    figure title or walkthrough text is left (a string the code shows unmarked, or marked and not translated)."""
    tab = opened(browser, app_url + "?lang=zh")
    tab.wait_for_function("() => document.querySelector('#step-btn').innerText === '下一步'")
    assert re.search("[\u4e00-\u9fff]", tab.locator("#source-text textarea").input_value())  # the Chinese model
    for _step in range(3):
        step(tab)
    left = {"first view": english_left(tab)}
    for view in VIEWS:  # one page: picking tabs one after another loses none (issue 35)
        open_drawn(tab, view)  # drawn as it opens
        left[view] = english_left(tab)
        if view == "Inside a step":  # the number under the pointer, written in the browser
            tab.locator("#inside-plot img[data-values]").first.hover()
            tip = tab.locator("#inside-plot .tensor-tip").inner_text()
            assert re.search(r"第 \d+ 维: ", tip), tip
    shot(tab, "chinese-views")
    browser.put_back(tab)
    english = [f"{view}: …{words}…" for view, found in left.items() for words in found]
    assert english == [], "\n".join(english)


# The tab bar as a user sees it: each tab's title, whether it is the chosen one, and the row it is on.
TAB_BAR = """() => [...document.querySelectorAll('#views .tab-container:not(.visually-hidden) [role=tab]')]
    .filter(tab => tab.offsetParent).map(tab => [tab.innerText, tab.getAttribute('aria-selected') === 'true',
                                                 Math.round(tab.getBoundingClientRect().top)])"""


def the_tab_bar_shows(tab, chosen: str, language: str) -> None:
    """The six tabs, each once, on one row, with nothing in a menu, and `chosen` (an English title) chosen."""
    from explorer.i18n import _, speaking

    with speaking(language):
        titles = [_(name) for name in TABS]
        chosen = _(chosen)
    tab.wait_for_function(f"chosen => ({TAB_BAR})().some(([title, on]) => on && title === chosen)", arg=chosen)
    bar = tab.evaluate(TAB_BAR)
    assert [title for title, _on, _top in bar] == titles, bar  # each once, in order: none lost, none twice
    assert [title for title, on, _top in bar if on] == [chosen], bar
    assert len({top for *_, top in bar}) == 1, bar  # one row
    assert tab.locator("#views button[aria-label='More tabs']:visible").count() == 0  # and no menu


HOLDING = {view: tab for view, (tab, _section) in SECTIONS.items()}  # the tab that shows each section


@pytest.mark.long
@pytest.mark.parametrize(("language", "presentation"), [("en", True), ("zh", False)])
def test_the_teachers_guide_from_start_to_end(browser, app_url, language, presentation):
    """Issue 35: docs/teachers-guide.md followed as written, on the projector's 1024×768, in English (in the
    presentation layout, as the guide says) and in Chinese: every view one click away whatever was opened before,
    each tab once in the bar and the chosen one chosen (a tab picked from gradio's menu showed twice, and Share
    vanished); then at 1400×1000, every tab once more, in the reverse order."""
    from explorer.i18n import _, ngettext, speaking

    def said(text: str) -> str:
        with speaking(language):
            return _(text)

    def view(name: str) -> None:
        open_tab(tab, name)
        the_tab_bar_shows(tab, HOLDING.get(name, name), language)

    tab = opened(browser, app_url + f"?lang={language}", 1024, 768)
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"])
    tab.wait_for_function("s => document.querySelector('#step-btn').innerText === s", arg=said("Step"))
    the_tab_bar_shows(tab, "Attention", language)
    # Before the class: the projector's layout, the sentence, Reset, then Copy link
    if presentation:
        tab.locator("#presentation input").check()
        tab.wait_for_function("() => document.body.classList.contains('presentation')")
    tab.locator("#reset-btn").click()
    tab.locator("#copy-link").click()
    tab.wait_for_function("s => document.querySelector('#copy-link').innerText === s", arg=said("Link copied"))
    assert "?state=" in tab.evaluate("() => navigator.clipboard.readText()")
    # 0–12 min: the pieces; Step, the candidates, Back, then Run to the end
    assert "</s>" in tab.locator("#source-pieces").inner_text()
    first = step(tab)
    tab.wait_for_selector("#candidates-plot .js-plotly-plot")
    tab.locator("#back-btn").click()
    wait_for_output_change(tab, first)
    tab.locator("#run-btn").click()
    done = said("The translation is finished")
    tab.wait_for_function("t => document.querySelector('#candidates-plot').innerText.includes(t)", arg=done)
    # 12–20: Attention, cross-attention as alignment lines, then one family again
    view("Attention")
    tab.locator("#attention-view").get_by_text(said("alignment lines"), exact=True).click()
    tab.locator("#attention-view").get_by_text(said("one family"), exact=True).click()
    # 20–28: Inside a step, then the Walkthrough, whose buttons open a stage in Inside a step
    view("Inside a step")
    tab.wait_for_selector("#inside-plot .tensor")
    view("Walkthrough")
    tab.locator("#walkthrough-scores-link").click()
    the_tab_bar_shows(tab, "Inside a step", language)
    # 28–33: Masks and heads: the causal mask off and on again; a head silenced and compared, then heard again
    # Each change waits for the server's word that it was applied (the line of what is switched off, beside the
    # output), as a teacher sees it: a change's answer carries every control as it was when the change was sent, so
    # a head ticked before the mask's answer came was unticked by it (on a busy machine: two pytest-xdist workers).
    view("Masks and heads")
    tab.wait_for_function("() => document.querySelector('#teacher-forced').innerText.trim() !== ''")
    forced = tab.locator("#teacher-forced").inner_text()
    tab.locator("#causal-mask input").uncheck()
    tab.wait_for_selector("#switched-off:visible")
    tab.wait_for_function("t => document.querySelector('#teacher-forced').innerText !== t", arg=forced)
    tab.locator("#causal-mask input").check()
    tab.wait_for_selector("#switched-off", state="hidden")
    tab.locator("#silenced-heads label").first.click()
    with speaking(language):
        one = ngettext("{n} head silenced", "{n} heads silenced", 1).format(n=1)
    tab.wait_for_function("t => document.querySelector('#switched-off-text')?.innerText.includes(t)", arg=one)
    tab.locator("#compare-btn").click()
    tab.wait_for_selector("#compare-plot .js-plotly-plot")
    # 33–37: Positions, and the source words shuffled; the head is still silenced, and the page says so there too,
    # with the button that hears it again
    view("Positions")
    tab.wait_for_selector("#switched-off:visible")
    assert one in tab.locator("#switched-off-text").inner_text()
    tab.locator("#switch-on").click()
    tab.wait_for_selector("#switched-off", state="hidden")
    assert tab.locator("#silenced-heads input:checked").count() == 0
    tab.wait_for_selector("#pe-plot .js-plotly-plot")
    tab.locator("#shuffle-btn").click()
    tab.wait_for_function("() => document.querySelector('#shuffle-text').innerText.trim() !== ''")
    # 37–40: Trained vs untrained
    view("Trained vs untrained")
    tab.locator("#twin-btn").click()
    tab.wait_for_selector("#untrained-plot .js-plotly-plot")
    rows = "() => document.querySelector('#untrained-plot .js-plotly-plot').data.at(-1).y.length"
    n_rows = tab.evaluate(rows)
    tab.locator("#back-btn").click()  # the end token first: the output shows no change, the message line says it
    tab.wait_for_function("() => document.querySelector('#status').innerText.includes('</s>')")
    before = output(tab)
    tab.locator("#back-btn").click()
    wait_for_output_change(tab, before)
    tab.wait_for_function(f"n => ({rows})() < n", arg=n_rows)  # the twins follow the step (they stayed as they were)
    # 40–43: Beam search: the strategy (folded away on the projector) set to beam, and the tree
    view("Beam search")
    if presentation:
        tab.locator("#decoding-settings").get_by_text(said("Decoding settings")).click()
    tab.locator("#strategy").get_by_text(said("beam"), exact=True).click()
    tab.locator("#step-btn").click()
    tab.wait_for_selector("#beam-plot .js-plotly-plot")
    # 43–45: Share (Copy link, in sight on every view), and the Train tab as homework
    assert tab.locator("#copy-link").is_visible()
    view("Train")
    tab.wait_for_selector("#train-start")
    shot(tab, f"guide-{language}-1024")
    tab.set_viewport_size({"width": 1400, "height": 1000})
    for name in reversed(TABS):
        view(name)
    # The whole lesson under the page's security policy (ui/web.py), and nothing it needed blocked
    assert tab.evaluate("() => window.refused") == []
    browser.put_back(tab)


DIAGRAM_LABEL_AT = """text => {  // the middle of the first label of the diagram that reads `text` (its lines joined)
    const label = [...document.querySelectorAll('#inside-diagram .annotation-text')].find(t => t.textContent === text);
    const box = label.getBoundingClientRect();
    return [box.left + box.width / 2, box.top + box.height / 2];
}"""
DIAGRAM_FILLED = """() => document.querySelector('#inside-diagram .js-plotly-plot').layout.shapes
    .filter(shape => shape.fillcolor === '#f58518').map(shape => shape.name)"""
LABELS_OUTSIDE_BLOCKS = """() => {  // the block labels of the diagram wider or taller than the block they stand in
    const plot = document.querySelector('#inside-diagram .js-plotly-plot');
    const blocks = [...plot.querySelectorAll('.shapelayer path')].map(path => path.getBoundingClientRect());
    const inside = (box, x, y) => box.left <= x && x <= box.right && box.top <= y && y <= box.bottom;
    return [...plot.querySelectorAll('.annotation-text')].flatMap(text => {
        const box = text.getBoundingClientRect(), x = box.left + box.width / 2, y = box.top + box.height / 2;
        const around = blocks.filter(block => inside(block, x, y))  // the block, not its stack's frame
            .sort((a, b) => a.width * a.height - b.width * b.height)[0];
        const fits = !around || (box.width <= around.width && box.height <= around.height);
        return fits ? [] : [`${text.textContent}: ${Math.round(box.width)}×${Math.round(box.height)} in `
                            + `${Math.round(around.width)}×${Math.round(around.height)}`];
    });
}"""
SCREEN_TOPS = """ids => Object.fromEntries(ids.map(id => [id,
    Math.round(document.querySelector(id).getBoundingClientRect().top)]))"""
CURSOR = "selector => getComputedStyle(document.querySelector(selector)).cursor"


def open_inside(tab) -> None:
    """Open the Inside a step tab (from the tab bar's menu where it does not fit the bar), its figures drawn."""
    open_tab(tab, "Inside a step")
    tab.wait_for_selector("#inside-diagram .js-plotly-plot")
    tab.wait_for_selector("#inside-plot .tensor")


def test_inside_a_step_blocks_are_clickable_and_fit_a_projector(browser, app_url):
    """Issue 22: clicking a block of the diagram did nothing; the stage list said "Encoder · Add & Norm" twice and
    "Decoder · Add & Norm" three times; and at 1024×768 in the presentation layout the diagram was 1,000 px tall,
    the stage list started at y = 1,166 and the stage's text at 2,020 (its numbers, the tensors, at 2,286)."""
    tab = opened(browser, app_url)
    open_inside(tab)
    labels = tab.locator("#inside-stage label").all_inner_texts()
    assert len(labels) == 15 and len(set(labels)) == len(labels), labels  # no two alike
    assert "Decoder · Add & Norm after cross-attention" in labels
    tab.locator("#inside-diagram").scroll_into_view_if_needed()
    x, y = tab.evaluate(DIAGRAM_LABEL_AT, "Feed forward")  # the encoder's (its blocks come first)
    tab.mouse.move(x, y)
    assert tab.evaluate(CURSOR, "#inside-diagram .nsewdrag") == "pointer"  # a block says it can be clicked
    tab.mouse.click(x, y)  # chooses the stage, as the list does
    tab.wait_for_function("() => document.querySelector('#inside-text').innerText.startsWith('Position-wise')")
    assert "encoder layer 0" in tab.locator("#inside-text").inner_text()
    assert tab.locator("#inside-stage input:checked").get_attribute("value") == "encoder.ffn"
    tab.wait_for_function(f"() => ({DIAGRAM_FILLED})().join() === 'encoder.ffn'")  # the block is filled now
    x, y = tab.evaluate(DIAGRAM_LABEL_AT, "Add & Normafter cross-attention")  # the label's two lines
    tab.mouse.click(x, y)
    tab.wait_for_function("() => document.querySelector('#inside-text').innerText"
                          ".startsWith('Residual connection and LayerNorm after the cross-attention')")  # fmt: skip
    assert tab.locator("#inside-stage input:checked").get_attribute("value") == "decoder.cross_attention_add_norm"
    shot(tab, "inside-clicked")
    browser.put_back(tab)

    small = opened(browser, app_url, 1024, 768)
    small.locator("#presentation input").check()
    small.wait_for_function("() => document.body.classList.contains('presentation')")
    small.locator("#step-btn").click()
    wait_for_output_change(small, "")
    open_inside(small)
    small.wait_for_function("() => document.querySelector('#inside-diagram .js-plotly-plot').layout.height < 600")
    settled(small)  # the tab's content laid out in its columns
    # What is measured: the tops of the diagram, the stage list, the stage's text and its numbers (the tensors) on
    # the screen, after the page is scrolled to the tab bar (it starts at the top of the page here: no scroll).
    small.evaluate("() => window.scrollTo(0, document.querySelector('#views').getBoundingClientRect().top + scrollY)")
    parts = ["#inside-diagram", "#inside-stage", "#inside-text", "#inside-plot"]
    tops = small.evaluate(SCREEN_TOPS, parts)
    assert all(0 <= top < 768 for top in tops.values()), tops
    diagram, numbers = small.locator("#inside-diagram").bounding_box(), small.locator("#inside-plot").bounding_box()
    assert diagram["x"] + diagram["width"] <= numbers["x"]  # side by side
    assert small.evaluate(LABELS_OUTSIDE_BLOCKS) == []  # the smaller diagram's labels still fit their blocks
    shot(small, "inside-1024")
    x, y = small.evaluate(DIAGRAM_LABEL_AT, "Linear + softmax")
    small.mouse.click(x, y)
    small.wait_for_function("() => document.querySelector('#inside-text').innerText.startsWith('Linear + softmax')")
    browser.put_back(small)


REPLAY = "() => document.querySelector('#train-replay .js-plotly-plot')"
REPLAY_STEP = f"() => ({REPLAY})().layout.sliders[0].active"
REPLAY_CAPTION = f"() => ({REPLAY})().layout.annotations[0].text"
# the map shown, as numbers (plotly keeps it as base64 until the first update, then as arrays)
REPLAY_Z = f"() => JSON.stringify(Array.from(({REPLAY})()._fullData[0].z, (r) => Array.from(r, (v) => v.toFixed(3))))"
MODEL_SHOWN = "document.querySelector('#model-select input').value"
TRAINED_MODEL_SHOWN = f"() => {MODEL_SHOWN}.startsWith('reverse · 2 layers')"


@pytest.mark.long
def test_train_watch_the_attention_form_scrub_explore_download_and_load(browser, app_url, tmp_path):
    """Issue 24: Train the default reverse task; the curves come, the probe's attention changes as it learns; Pause;
    the slider scrubs back to step 0 in the browser; explore the model with Step; download it, and load the file
    back."""
    tab = opened(browser, app_url)
    open_tab(tab, "Train")
    tab.locator("#train-start").click()
    tab.wait_for_selector("#train-curves .js-plotly-plot")
    tab.wait_for_selector("#train-replay .js-plotly-plot")
    first = tab.evaluate(REPLAY_Z)
    tab.wait_for_function(f"first => ({REPLAY_Z})() !== first", arg=first, timeout=30_000)  # a new look at the probe
    tab.wait_for_function(  # learned a little: past the early snapshots
        "() => /step (\\d{3,})/.test(document.querySelector('#train-numbers').innerText)", timeout=60_000
    )
    shot(tab, "train-training")
    tab.locator("#train-pause").click()
    tab.wait_for_function("() => document.querySelector('#train-numbers').innerText.includes('Paused')")
    tab.wait_for_function("() => !document.querySelector('#train-explore').disabled")
    numbers = tab.locator("#train-numbers").inner_text()
    assert re.search(r"held-out exact match [\d.]+%", numbers) and "tokens/s" in numbers
    last = tab.evaluate(REPLAY_Z)
    assert tab.evaluate(REPLAY_STEP) > 0 and not tab.evaluate(REPLAY_CAPTION).startswith("step 0 ")
    tab.evaluate("() => window.replayTo(0)")  # the slider's first place: in the browser alone
    assert tab.evaluate(REPLAY_STEP) == 0 and tab.evaluate(REPLAY_CAPTION).startswith("step 0 ")
    assert tab.evaluate(REPLAY_Z) != last
    tab.locator("#train-play").click()  # Play walks the snapshots to the last
    tab.wait_for_function(f"() => ({REPLAY_STEP})() > 2")
    tab.wait_for_function("() => document.querySelector('#train-play').innerText === 'Play the replay'", timeout=30_000)
    assert tab.evaluate(REPLAY_Z) == last
    shot(tab, "train-paused")
    with tab.expect_download() as download:
        tab.locator("#train-download").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name.startswith("reverse-2x4x64-step") and saved.suffix == ".safetensors"
    tab.locator("#train-explore").click()
    tab.wait_for_function(TRAINED_MODEL_SHOWN)
    assert tab.get_by_role("tab", name="Attention").get_attribute("aria-selected") == "true"
    assert "a model of yours" in tab.locator("#status").inner_text()
    assert step(tab) != ""
    shot(tab, "train-explored")
    browser.put_back(tab)

    fresh = opened(browser, app_url, 1024, 768)  # another user, who has only the file
    open_tab(fresh, "Train")
    fresh.locator("#train-upload").locator("xpath=..").locator("input[type=file]").set_input_files(str(saved))
    fresh.wait_for_function(TRAINED_MODEL_SHOWN)
    assert step(fresh) != ""
    open_tab(fresh, "Train")
    bad = tmp_path / "not-a-model.safetensors"
    bad.write_bytes(b"not a model at all")
    fresh.locator("#train-upload").locator("xpath=..").locator("input[type=file]").set_input_files(str(bad))
    fresh.wait_for_function("() => document.querySelector('#train-message').innerText.includes('cannot be loaded')")
    assert "not a safetensors file" in fresh.locator("#train-message").inner_text()
    shot(fresh, "train-1024")
    # Issue 35: a .pt (which gradio itself refused, leaving the last file's message) is answered in words, in sight
    # at 1400×1000, and only its message is shown
    fresh.set_viewport_size({"width": 1400, "height": 1000})
    pickled = tmp_path / "model.pt"
    pickled.write_bytes(b"\x80\x04not a model either")
    fresh.locator("#train-upload").locator("xpath=..").locator("input[type=file]").set_input_files(str(pickled))
    fresh.wait_for_function("() => document.querySelector('#train-message').innerText.includes('model.pt')")
    said = fresh.locator("#train-message").inner_text()
    assert "cannot be loaded" in said and "not-a-model" not in said
    fresh.wait_for_function("() => { const box = document.querySelector('#train-message').getBoundingClientRect();"
                            " return box.top >= 0 && box.bottom <= innerHeight; }")  # fmt: skip
    browser.put_back(fresh)


def test_replay_how_numbers_de_learned_and_explore_it_half_trained(browser, app_url):
    """Issue 24: the shipped numbers-de model's training, recorded when it was trained, replays in the Train tab:
    its curves, the probe from noise (step 0) to the shipped model, and a snapshot kept to explore. At 1024×768
    the four buttons of a run share one row."""
    tab = opened(browser, app_url, 1024, 768)
    open_tab(tab, "Train")
    tops = [tab.locator(f"#train-{name}").bounding_box()["y"] for name in ("start", "pause", "resume", "reset")]
    assert max(tops) - min(tops) < 2, tops
    tab.locator("#train-replay-numbers-de").click()
    tab.wait_for_selector("#train-replay .js-plotly-plot")
    tab.wait_for_selector("#train-curves .js-plotly-plot")
    assert "The training of numbers-de, replayed" in tab.locator("#train-numbers").inner_text()
    steps = tab.evaluate(f"() => ({REPLAY})().layout.sliders[0].steps.length")
    assert steps >= 20 and tab.evaluate(REPLAY_STEP) == steps - 1  # it opens on the shipped model
    shipped = tab.evaluate(REPLAY_Z)
    assert tab.evaluate(REPLAY_CAPTION).endswith("right")  # the shipped model translates the probe right
    tab.evaluate("() => window.replayTo(0)")
    assert tab.evaluate(REPLAY_CAPTION).startswith("step 0 ") and tab.evaluate(REPLAY_Z) != shipped
    assert tab.locator("#train-download").is_disabled()  # the shipped model's files are in the repository
    shot(tab, "train-replay-numbers-de")
    tab.locator("#train-explore").click()
    tab.wait_for_function(f"() => /^numbers-de · step \\d+ · trained/.test({MODEL_SHOWN})")
    assert "a model of yours" in tab.locator("#status").inner_text()
    assert step(tab) != ""
    browser.put_back(tab)


# The server's `close_stream` reaches the page late, as on a machine too busy to read it at once: not before the page
# has read the answer to the next event it sends (Gradio's client reads it with `response.json()`), or 3 s at most. The
# messages before it in the same chunk come at once.
CLOSE_LATE_JS = """
const heldCloses = [];
const releaseCloses = () => { while (heldCloses.length) heldCloses.shift()(); };
const fetchBeforeDelay = window.fetch;
window.fetch = async (...args) => {
    const response = await fetchBeforeDelay(...args);
    const address = String((args[0] && args[0].url) || args[0]);
    if (address.includes('/queue/join')) {
        const json = response.json.bind(response);  // the client goes on from it in microtasks, before the timer
        response.json = async () => { const body = await json(); setTimeout(releaseCloses, 0); return body; };
        return response;
    }
    if (!address.includes('/queue/data?') || !response.body) return response;
    const reader = response.body.getReader(), decoder = new TextDecoder(), encoder = new TextEncoder();
    const body = new ReadableStream({
        async pull(controller) {
            const chunk = await reader.read();
            if (chunk.done) return controller.close();
            const text = decoder.decode(chunk.value, {stream: true}), at = text.indexOf('"close_stream"');
            const cut = at < 0 ? text.length : text.lastIndexOf('data:', at);
            if (cut > 0) controller.enqueue(encoder.encode(text.slice(0, cut)));
            if (cut === text.length) return;
            await new Promise((resolve) => { heldCloses.push(resolve); setTimeout(resolve, 3000); });
            controller.enqueue(encoder.encode(text.slice(cut)));
        },
        cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, {status: response.status, headers: response.headers});
};"""


def test_gradio_alone_never_reads_an_answer_to_an_event_sent_as_the_stream_closes(browser, app_url):
    """The page's opening chains its events, each sent as the one before is answered: with the server's end of the
    stream read late (`CLOSE_LATE_JS`), and without the page's keeper (`ui.browser_internals.STREAM_KEEPER_JS`), one
    of them is never answered. This checks that Gradio's client still does this, so that the keeper goes when Gradio
    mends it."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    for script in (EVENT_TAP_JS, CLOSE_LATE_JS, "window.streamKeeper = {off: true};"):
        page.add_init_script(script)
    page.goto(app_url + NUMBERS_DE)
    page.wait_for_function("() => window.events.sent > 0")
    page.wait_for_timeout(9_000)  # three times as long as a close is held at most: an answer missing then is for good
    assert page.evaluate("() => window.events.answered < window.events.sent"), "Gradio mended it: drop the keeper"


def test_an_event_sent_as_the_stream_closes_is_answered(browser, app_url):
    """The same page with its keeper (`ui.browser_internals.STREAM_KEEPER_JS`) opens whole, and a Step pressed just
    after the page's last answer, while the server's end of the stream is still on its way, is answered, on a stream
    the keeper opened again."""
    page = opened(browser, app_url + NUMBERS_DE, 1280, 1000, scripts=(CLOSE_LATE_JS,))
    step(page)  # answered; the server ends the stream, and the page reads that after the next event's join
    reopened = page.evaluate("() => window.streamKeeper.reopened")
    before = output(page)
    page.locator("#step-btn").click()  # sent, and its join answered, before the page reads the close
    wait_for_output_change(page, before)
    assert page.evaluate("() => window.streamKeeper.reopened") > reopened


# Counts the animation frames the page asks for, by the Gradio script that asks ("statustracker", "index"; "other"),
# from the moment a test sets `window.framesCounted`: `window.framesAsked`.
FRAMES_ASKED_JS = """
window.framesAsked = {};
const askAsBefore = window.requestAnimationFrame.bind(window);
window.requestAnimationFrame = (callback) => {
    if (window.framesCounted) {
        const caller = (new Error().stack || '').split('\\n')[2] || '';
        const script = (caller.match(/assets\\/([\\w.]+?)-[\\w-]+\\.js/) || [null, 'other'])[1];
        window.framesAsked[script] = (window.framesAsked[script] || 0) + 1;
    }
    return askAsBefore(callback);
};
"""


def test_an_idle_page_asks_for_no_frame_for_the_timer_of_its_loading(browser, app_url):
    """Gradio's status tracker of the page's own loading, taken out of the page while pending, asked for an animation
    frame 60 times a second for as long as the page stayed open; the server sends the tracker's script mended
    (`ui.browser_internals.IDLE_TIMER`). Over a second and a half of an idle page: not one (without the mend, 92)."""
    page = opened(browser, app_url + NUMBERS_DE, 1280, 1000, scripts=(FRAMES_ASKED_JS,))
    page.evaluate("() => { window.framesCounted = true; }")
    page.wait_for_timeout(1500)  # what must not happen: a wait, not an event
    asked = page.evaluate("() => window.framesAsked")
    assert asked.get("statustracker", 0) == 0, asked


# Gradio's node lookup as it is (`before`) and as mended (`after`), each in a scope of its own, over trees as Gradio's
# are (ids unique but for `repeated`, which two nodes share: the first in the walk's order is found), behind proxies as
# Svelte's: the same node for every id, and null for one not there, as the trees change under them: new children
# where a tab is built, nodes moved or dropped, a new root.
SAME_NODES_JS = """([before, after]) => {
    const original = new Function(`${before}; return Z;`)(), mended = new Function(`${after}; return Z;`)();
    let next = 0;
    const node = (depth) => ({id: next++, children: depth ? [node(depth - 1), node(depth - 1), node(depth - 1)] : []});
    const proxies = new WeakMap();  // one proxy for each object, as Svelte's
    const proxied = (tree) => proxies.get(tree) || proxies.set(tree, new Proxy(tree, {get: (t, key) =>
        typeof t[key] === "object" && t[key] !== null ? proxied(t[key]) : t[key]})).get(tree);
    const differ = [];
    const compare = (root, when) => {
        for (const id of [...Array.from({length: next + 3}, (_, i) => i), "repeated"]) {
            if (original(root, id) !== mended(root, id)) differ.push([when, id]);
        }
    };
    const raw = node(4);
    raw.children[1].children[0].id = raw.children[2].id = "repeated";
    compare(raw, "first");
    compare(raw, "again");
    raw.children[0].children = [node(2), node(1)];
    compare(raw, "a subtree rebuilt");
    raw.children.push(raw.children.shift());
    compare(raw, "children reordered");
    raw.children[1].children.pop();
    compare(raw, "a node dropped");
    raw.children = raw.children.slice(1);
    compare(raw, "the root's children replaced");
    compare(node(3), "a new tree");
    const root = proxied(node(4));
    compare(root, "behind proxies");
    root.children[2].children = [node(1)];
    compare(root, "behind proxies, changed");
    return {differ, nodes: next};
}"""


# Gradio's `find_attached_events` as it is (`before`) and as mended (`after`), as methods of a stand-in for its layout,
# over events whose targets name components once, twice (the first counts) or with no event name, and over a second
# list of events (a page loaded anew): the events each node is given, by each.
ATTACHED_EVENTS_JS = """([before, after]) => {
    const layout = (method) => new Function(`return new (class { ${method} })();`)();
    const original = layout(before), mended = layout(after);
    const names = ["click", "change", "input", null, "select"];
    const dependencies = (seed) => Array.from({length: 40}, (_, i) => {
        const a = (i * 7 + seed) % 30, b = (i * 11 + 3 + seed) % 30, name = (k) => names[(i + k) % names.length];
        const targets = [[[a, name(0)], [a, name(1)]], [[a, name(0)], [b, name(2)]], [[b, name(3)]]][i % 3];
        return {targets};
    });
    const given = (by, events) => JSON.stringify(Array.from({length: 33}, (_, id) =>
        by.find_attached_events({id, props: {shared_props: {}}}, events).props.shared_props.attached_events));
    const first = dependencies(0), second = dependencies(1);
    const once = given(original, first), again = given(original, second);
    const twice = given(mended, first) === once && given(mended, first) === once;  // learnt, then read
    return {first: twice, second: given(mended, second) === again, lists_differ: once !== again,
            events: JSON.parse(once).flat().length};
}"""


def test_the_mended_attached_events_are_gradios_own(browser):
    """`ui.browser_internals.ATTACHED_EVENTS`: each node is given the same events, in the same order, by Gradio's
    `find_attached_events` and the mended one (which goes through the events once for each list of them)."""
    from ui.browser_internals import ATTACHED_EVENTS

    page = browser.new_page()
    found = page.evaluate(ATTACHED_EVENTS_JS, [ATTACHED_EVENTS.before, ATTACHED_EVENTS.after])
    assert found == {"first": True, "second": True, "lists_differ": True, "events": found["events"]}
    assert found["events"] > 40


def test_the_mended_node_lookup_finds_the_node_gradios_own_finds(browser):
    """`ui.browser_internals.NODE_LOOKUP`: Gradio's lookup of a node by id and the mended one (which learns where each
    id lies and checks it at each call) find the same node in the same tree, before and after the tree changes."""
    from ui.browser_internals import NODE_LOOKUP

    page = browser.new_page()
    found = page.evaluate(SAME_NODES_JS, [NODE_LOOKUP.before, NODE_LOOKUP.after])
    assert found["nodes"] > 100 and found["differ"] == []


def test_a_users_mistake_is_a_message_never_a_traceback_in_the_servers_log(page, real_app):
    """Issue 35: an empty box, or 2,000 characters pasted, through the page and through the API: each is a message to
    the user, and the server's log holds at most a line for it, never a traceback."""
    from gradio_client import Client

    before = len(real_app.log_tail(10**7))
    box = page.locator("#source-text textarea")
    said = {"#status": "The sentence box is empty", "#source-note": "The text is too long (2,000 characters)"}
    for text, (where, message) in zip(("", "word " * 400), said.items(), strict=True):
        # the events the link's values set off at load, and the box's own, answered first: a late one redraws the
        # page for the sentence it was sent with (a user cannot type and step within the page's first moments)
        settled(page)
        box.fill(text)
        settled(page)
        page.locator("#step-btn").click()
        page.wait_for_function("([s, m]) => document.querySelector(s).innerText.includes(m)", arg=[where, message])
    client = Client(real_app.url, verbose=False)
    for text in ("", "x" * 2000):
        with pytest.raises(Exception, match="sentence"):
            client.predict(text, "numbers-de", api_name="/translate")
    page.wait_for_timeout(500)
    written = real_app.log_tail(10**7)[before:]
    assert "Traceback" not in written, written
    assert written.count("\n") <= 2, written  # a line for each refused API call


def test_an_upload_larger_than_a_model_file_is_refused_at_the_door(real_app):
    """Issue 36 §2: an anonymous 300 MB upload to gradio's upload route was taken in whole and kept for an hour. The
    model file's own limit (16 MB) applies there: a larger upload is refused (413) as it arrives."""
    import httpx

    upload = real_app.url + "gradio_api/upload"
    refused = httpx.post(upload, files={"files": ("big.safetensors", b"\0" * (MAX_UPLOAD_BYTES + 1))}, timeout=60)
    assert refused.status_code == 413, refused.text
    taken = httpx.post(upload, files={"files": ("small.safetensors", b"\0" * 1000)}, timeout=60)
    assert taken.status_code == 200 and len(taken.json()) == 1  # the path of the file kept


# Markdown and HTML that would write in the app's voice: an image fetched from anywhere, live links, formatting.
FORGED = "![x](http://127.0.0.1:9/beacon.png) [Log in here](http://evil.example/) www.evil.example **bold** <b>b</b>"
NOTHING_FORGED = """([s, text]) => { const e = document.querySelector(s);
    return e !== null && e.innerText.includes(text)
        && e.querySelectorAll('img, a, b, strong, em, code').length === 0; }"""


def test_text_from_a_link_or_a_user_is_shown_as_text(browser, app_url):
    """Issue 36 §3: a link whose model held Markdown made the status line load an image from another server and show
    a live "Log in here" link; text typed into the force box or the dimensions box did the same in their notes. Each
    is shown as the text it is, with no image, link or formatting, and no image is asked for."""
    import base64
    import json

    fetched = []
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
    tab.on("request", lambda request: fetched.append(request.url) if "beacon" in request.url else None)
    forged_link = base64.urlsafe_b64encode(json.dumps({"model": FORGED}).encode()).decode().rstrip("=")
    tab.goto(app_url + "?state=" + forged_link)
    tab.wait_for_function("() => document.querySelector('#status')?.innerText.includes('[Log in here]')")
    assert tab.evaluate(NOTHING_FORGED, ["#status", "www.evil.example **bold**"]), tab.locator("#status").inner_html()
    tab.wait_for_selector("#attention-plot .js-plotly-plot")  # the page as after a fresh load
    force = tab.locator("#force-text textarea, #force-text input").first
    force.fill(FORGED)
    force.press("Enter")
    tab.wait_for_function(NOTHING_FORGED, arg=["#status", "[Log in here](http://evil.example/)"])
    open_tab(tab, "Positions")
    dims = tab.locator("#dims textarea, #dims input").first
    dims.fill("![x](http://e/beacon.png) 1")  # the note names each word it leaves out (up to 20 characters of it)
    dims.press("Enter")
    tab.wait_for_function(NOTHING_FORGED, arg=["#dims-note", "![x](http://e/beac"])
    assert fetched == []  # no image was asked for
    browser.put_back(tab)


# The devices a class brings (issue 35 §3): a phone in portrait, a tablet in portrait, a Chromebook; touch on each.
DEVICES = {
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
    "tablet": {"viewport": {"width": 768, "height": 1024}, "is_mobile": True, "has_touch": True},
    "chromebook": {"viewport": {"width": 1366, "height": 768}, "is_mobile": False, "has_touch": True},
}
# What a finger or a pointer targets, under 24 × 24 px (WCAG 2.2, 2.5.8): not a radio or checkbox inside its label
# (the label is the target), not a link inside a sentence (exempt), not Plotly's toolbar (hidden on touch).
SMALL_TARGETS = """() => [...document.querySelectorAll('button, input, select, textarea, a, [role=tab], summary')]
    .filter(e => e.offsetParent && !e.closest('.modebar'))
    .filter(e => !(['radio', 'checkbox'].includes(e.type) && e.closest('label')))
    .filter(e => !(e.tagName === 'A' && e.closest('p') && e.closest('p').innerText.trim() !== e.innerText.trim()))
    .filter(e => { const r = e.getBoundingClientRect(); return r.width < 24 || r.height < 24; })
    .map(e => (e.id || e.getAttribute('aria-label') || e.innerText || e.tagName).slice(0, 40))"""
IN_VIEW_SIDEWAYS = """selector => { const r = document.querySelector(selector).getBoundingClientRect();
    return r.width > 0 && r.left >= 0 && r.right <= innerWidth; }"""


@pytest.mark.parametrize("device", DEVICES)
def test_a_phone_a_tablet_and_a_chromebook_take_a_step_without_zooming(browser, app_url, device):
    """Issue 35 §3: at each size, with touch: no sideways scrolling of the page; the sentence, Step, the output, the
    candidates and the attention figure within the screen's width, the heatmap wide enough to read (on a phone it
    scrolls inside its own frame); every target at least 24 × 24 px; on a tablet, the Train tab's controls too."""
    context = browser.new_context(**DEVICES[device])
    tab = context.new_page()
    tab.add_init_script(EVENT_TAP_JS)
    tab.set_default_timeout(30_000)
    tab.goto(app_url + NUMBERS_DE)
    tab.wait_for_selector("#attention-plot .js-plotly-plot")
    tab.locator("#step-btn").tap()
    wait_for_output_change(tab, "")
    settled(tab)
    assert tab.evaluate("() => document.documentElement.scrollWidth <= innerWidth")  # no sideways page
    for selector in ("#source-text", "#step-btn", "#output-text", "#candidates-plot", "#attention-plot"):
        assert tab.evaluate(IN_VIEW_SIDEWAYS, selector), selector
    heatmap = tab.locator("#attention-plot .main-svg").first.bounding_box()["width"]
    assert heatmap >= 300, heatmap  # labels and cells a reader can read
    assert tab.evaluate(SMALL_TARGETS) == []
    steps = [tab.locator(f"#{name}-btn").bounding_box() for name in ("step", "run", "back", "reset", "stop")]
    assert len({round(box["y"]) for box in steps}) == 1  # the five buttons on one row
    link = tab.locator("#share-link").bounding_box()  # on a phone it was a column one word wide, 123 px high
    assert link["height"] <= 40, link  # one line
    shot(tab, f"device-{device}")
    if device == "tablet":  # the Train tab, on a tablet
        open_tab(tab, "Train")
        tab.wait_for_selector("#train-start")
        assert tab.evaluate(IN_VIEW_SIDEWAYS, "#train-start") and tab.evaluate(SMALL_TARGETS) == []
        assert tab.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    context.close()


def test_the_accessibility_audit_finds_what_it_is_shown_and_runs_again_on_the_same_page(browser):
    """The audit can fail: a button without a name, an image without a text and grey on grey are three blocking
    violations, found again when the page is audited a second time (axe-core went into it once); a rule skipped is
    not run."""
    from benchmarks import accessibility

    page = browser.new_page()
    page.set_content(
        '<html lang="en"><title>t</title><main><button></button><img src="data:,">'
        '<p style="color: #777; background: #888">grey on grey</p></main></html>'
    )
    for _audit in range(2):
        found = accessibility.audit_as_shown(page, "en", "desktop", "a page with three faults")
        assert {f.rule for f in accessibility.blocking(found)} == {"button-name", "image-alt", "color-contrast"}, found
    found = accessibility.audit_as_shown(page, "en", "desktop", "the same", skipped=("color-contrast",))
    assert {f.rule for f in accessibility.blocking(found)} == {"button-name", "image-alt"}, found


@pytest.mark.long
@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_view_passes_the_accessibility_audit(browser, app_url, language):
    """Issue 35 §4: axe-core over every view after a Step, in both languages, at 1400 and at 390 px wide (the window
    narrowed to a phone's): no critical or serious violation of WCAG 2.2 A/AA (Soft's indigo was 3.6:1 as label
    text and 4.46:1 under white text, the hints and the footer 2.5:1, the thumbnails a grid without rows).
    docs/accessibility.md lists what remains. The colours' contrast is checked on the English page: the Chinese one
    has the same colours and type sizes (the page sets none by language), and the rule takes half an audit's time."""
    from benchmarks import accessibility

    skipped = ("color-contrast",) if language == "zh" else ()
    page = accessibility.opened(browser, app_url, language, "desktop")
    findings = accessibility.audit(page, language, "desktop", skipped)
    width, height = accessibility.WIDTHS["phone"]
    page.set_viewport_size({"width": width, "height": height})
    findings += accessibility.audit(page, language, "phone", skipped)
    browser.put_back(page)
    assert accessibility.blocking(findings) == []


FOCUSED = """() => { const e = document.activeElement; const style = getComputedStyle(e);
    return [e.id || e.getAttribute("aria-label") || e.tagName + "." + e.className + ":" + e.innerText.slice(0, 30),
            style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2 || style.boxShadow !== 'none']; }"""


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_keyboard_alone_takes_a_step_with_the_focus_in_sight_and_keys_that_wait_for_typing(
    browser, app_url, language
):
    """Issue 35 §4: from a fresh page, Tab reaches Step through controls that each show where the focus is, and
    Enter presses it; S, B and R take a step, go back and run, listed under the buttons in the page's language; a
    letter typed in a text box stays in the box."""
    from explorer.i18n import _, speaking

    tab = opened(browser, app_url + NUMBERS_DE + f"&lang={language}", 1024, 768)
    tab.wait_for_function("() => document.querySelector('#model-select input').value.startsWith('numbers-de ·')")
    with speaking(language):
        hint = _("Keys: **S** Step · **B** Back · **R** Run (not while typing in a box)").replace("**", "")
    # the page's language is set as it loads (`ui.i18n.SET_LOCALE_JS`), maybe after the model: its words, then
    tab.wait_for_function("h => document.querySelector('#step-keys').innerText.trim() === h", arg=hint)
    tab.locator("body").click(position={"x": 2, "y": 2})
    reached, unseen = [], []
    for _press in range(60):  # the controls before Step, in the order of the page
        tab.keyboard.press("Tab")
        name, ringed = tab.evaluate(FOCUSED)
        reached.append(name)
        if not ringed and not name.startswith("BODY"):  # leaving gradio's dropdown drops the focus once (6.31)
            unseen.append(name)
        if name == "step-btn":
            break
    assert reached[-1] == "step-btn", reached
    assert "number input for Max output tokens" not in reached, reached  # the settings come after the step
    assert unseen == [], (unseen, reached)  # every control shows the focus
    # what the focus set off on its way answered first (a box left applies its text): a late answer would show the
    # page it was sent with over the step's (docs/architecture.md, "Events that overlap")
    settled(tab)
    tab.keyboard.press("Enter")
    first = wait_for_output_change(tab, "")
    tab.locator("#output-text").click()  # the focus away from the buttons: the letters alone
    tab.keyboard.press("s")
    second = wait_for_output_change(tab, first)
    tab.keyboard.press("b")
    assert wait_for_output_change(tab, second) == first
    source = tab.locator("#source-text textarea")
    source.click()
    source.press("End")
    tab.keyboard.press("s")  # typed, not a step
    tab.wait_for_timeout(800)
    assert output(tab) == first and source.input_value().endswith("s")
    tab.locator("#output-text").click()
    tab.keyboard.press("r")
    tab.wait_for_function("() => document.querySelector('#candidates-plot').innerText.trim() !== ''")
    tab.wait_for_function("o => document.querySelector('#output-text textarea').value !== o", arg=first)
    browser.put_back(tab)


def test_the_app_sends_its_security_headers_and_refuses_a_large_request_body(real_app):
    """Issue 36 §2, §3: the headers of ui/web.py on the page, and a 50 MB sentence refused before it is read (each
    such request stayed in the server's memory)."""
    import httpx

    from ui import web

    page = httpx.get(real_app.url, timeout=30)
    for name, value in web.SECURITY_HEADERS.items():
        assert page.headers[name] == value
    fifty_mb = (b"x" * 1024 for _ in range(50 * 1024))
    refused = httpx.post(real_app.url + "gradio_api/queue/join", content=fifty_mb, timeout=60)
    assert refused.status_code == 413
