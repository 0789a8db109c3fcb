"""Sections 6 and 7 of the benchmark: the real app (`python app.py`, started by `benchmarks.real_app.App`) timed in
Chromium.

`measure_app(quick=...)` returns plain numbers (JSON-serialisable):

* **Start-up** — `ready_s`: seconds from just before `Popen` until `GET /` answers 200 (median of 3 starts, or 1
  in quick mode; every start in `ready_s_each`). `page_load_s`: from `page.goto` until the first heatmap is drawn.
* **Step** — `step_ms_*`: from clicking Step (`#step-btn`) until every figure on the first screen of the
  Attention tab is *drawn* for the new step: the heatmap (`#attention-plot`, the default view: cross-attention,
  layer 0, average of the heads) with the new token's row, the next-token candidates (`#candidates-plot`) and
  every layer × head thumbnail (`#attention-thumbnails`, each image decoded). `step_heatmap_ms_median`: until the
  heatmap alone is drawn (what `step_ms` measured before the thumbnails). On a ten-word sentence (`SENTENCE`)
  with the built-in model `model`; 30 timed steps (3 in quick mode), the translation is reset whenever it
  finishes.
* **Step, Inside a step** — `inside_step_ms_*`: the same, with the Inside a step tab open (its default stage, the
  decoder's masked self-attention of layer 0), until that stage's tensors are shown for the new position (the
  text names it, every image decoded) and the candidates are drawn.
* **Step, Walkthrough** — `walkthrough_step_ms_*`: the same with the Walkthrough tab open, until the part of the tour
  in the window is drawn for the new step (the first section names the new position, every figure in the window
  that changes at every step drawn again, every tensor image decoded); `walkthrough_all_ms_*`: until every one of
  its eleven sections is (the figures further down are drawn once the page is idle, `ui.plot`).
* **Run** — `run_ms_*`: from clicking Run (`#run-btn`) until the whole translation is shown; reset in between.
  10 runs (2 in quick mode). Also `translation` and `n_steps`, the Step clicks from the empty output to the finish.
* **Memory** of the app process from `/proc/<pid>/status`, in MiB: `rss_bare_mb` right after start (no model is
  loaded yet: `ModelRegistry` loads lazily), `rss_ready_mb` once every built-in model (`models_loaded`; the
  measured model alone in quick mode) has been loaded through the page, by picking each once in the model
  dropdown; `rss_after_steps_mb` after `memory_step_clicks` Step clicks in all (100; 12 in quick mode), also
  reported as `rss_after_100_steps_mb` when there were 100 (else null); and `peak_mb`, VmHWM at the end.

How "drawn" is detected. After k steps the cross-attention heatmap has k + 1 query rows (`"0 · <s>"`,
`"1 · ▁Die"`, …), and Gradio's Plot component calls `Plotly.react` on the same `.js-plotly-plot` div for every
new figure. Plotly emits `plotly_afterplot` on that div when it has finished drawing a figure. One
`page.evaluate` reads the current number of rows n, listens to `plotly_afterplot`, takes `performance.now()`,
calls `.click()`, and then checks on every `requestAnimationFrame` whether a draw with n + 1 rows has happened;
the time is taken in that frame callback, i.e. just before the frame with the new heatmap is painted. (The y tick
labels are no signal: Plotly leaves some out when the rows are dense, e.g. at 5–6 rows.) The step that emits
`</s>` adds no row (nothing is predicted after `</s>`, so its row is not shown): it is not timed, and is
recognised by the candidates plot's title "The translation is finished".

How "translation shown" is detected (Run): the output textbox `#output-text` holds exactly the final translation
(found beforehand by stepping through the sentence once), the candidates plot's title says the translation is
finished, and the heatmap has been drawn with the final number of rows.

Where the time goes. An init script wraps `window.fetch` and taps the server-sent-event stream of answers
(`/queue/data`), passing it through unchanged (`benchmarks.real_app.EVENT_TAP_JS`), and reads for each event sent
since the click, on whichever stream its answer came (the page's stream keeper may hold one open across actions):
the size of its messages, their number, Gradio's own `duration` of the handler in each (the model's forward pass and
building the figures; not the JSON encoding), and when Gradio's client read its `process_completed` message. Per
step (and likewise per run): `step_server_fn_ms_median` (the handler), `step_message_ms_median` (click → the answer
read by the page: queue, handler, encoding, network), `step_stream_end_ms_median` (click → the whole stream
received by the network stack, from Resource Timing, where a stream opened after the click and ended),
`step_browser_ms_median` (the answer read → the heatmap drawn: JSON parsing, Svelte updates, Plotly) and
`step_message_bytes_median`. For Run the client reads the stream as fast as it renders the
streamed updates, so `run_message_ms` lags `run_stream_end_ms` when the browser is the bottleneck.

* **Opening a view** — `open_<view>_ms_median` for each tab (`benchmarks.real_app.TABS`): from clicking its tab until
  it is drawn (`OPEN_JS`): the answer of the tab's event read, then the first moment the browser is idle with every
  figure of the tab that is in the window drawn (`ui.plot` draws those further down once the page is idle) and
  every image decoded (`requestIdleCallback`: the frame with the view has been painted, and nothing is left to
  do). Each page (three, each reloaded; in quick mode the page as the steps left it, with no pauses) opens every tab
  twice in the guide's order, after three steps: the first time (`open_first_ms`: gradio builds the tab's components
  then) and again (`open_again_ms`); `open_ms_max` is the slowest median.
* **A slower computer** (`cpu_slowdown`, 4; full mode only): Chromium's CPU slowed that many times (DevTools'
  `Emulation.setCPUThrottlingRate`, as a Chromebook), the server as it is: `slow_step_ms_*`,
  `slow_walkthrough_step_ms_*` and `slow_open_ms_max` (10 steps, 5 in the walkthrough, one round of opening).

The window is 1400×1000 (`VIEWPORT`), a laptop's, as the issue that set the targets measured it.

* **In a class** (`measure_step_in_a_class`, `--class N`): the same Step, timed in one real browser while N simulated
  students use the same server (`benchmarks.classroom`, in a process of its own, thinking 3 s between actions):
  `class_step_ms_*` from the browser, and the class's own Step latencies from its report. Everything shares this
  machine's two cores, as a teacher's laptop serving a class would.

`measure_idle_page(url)` (`--idle`): what a page left open costs the machine while nobody uses it, Chromium's CPU
seconds a second over 20 s. `measure_openings(app)` (`--openings`): what opening a page costs the browser and the
server, as the browser tests open theirs (ten openings in one tab).

Run with `python -m benchmarks.app_bench [--quick] [--json PATH] [--class N] [--idle] [--openings]`.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.real_app import (
    CHROMIUM,
    CHROMIUM_ARGS,
    EVENT_TAP_JS,
    TABS,
    App,
    model_option,
    open_tab,
    settled,
    shown_model,
)
from benchmarks.timing import median_of, summarise

ROOT = Path(__file__).resolve().parent.parent
SENTENCE = "The children play in the park after school every day."  # ten everyday words
VIEWPORT = {"width": 1400, "height": 1000}
CPU_SLOWDOWN = 4  # a Chromebook, as DevTools' throttling presets put it
ACTION_TIMEOUT_MS = 60_000  # for one click's answer; generous, as the machine may be busy
STATUS = "#status [data-testid=markdown]"  # the status message (not the progress shown while an event runs)

# Shared by the snippets below. `watchDraws()` listens to `plotly_afterplot` on the heatmap's div and remembers
# how many rows the figure had when it was last drawn (since the watch began).
_JS_HELPERS = """
const plot = () => document.querySelector('#attention-plot .js-plotly-plot');
const rows = () => { const gd = plot(); return gd && gd.data && gd.data.length ? gd.data[0].y.length : 0; };
const finishedShown = () => [...document.querySelectorAll('#candidates-plot .gtitle')]
    .some(t => t.textContent.includes('finished'));
const output = () => { const t = document.querySelector('#output-text textarea'); return t ? t.value : null; };
const watchDraws = (selector = '#attention-plot', measure = rows) => {
    // the value of `measure` when the plot in `selector` was last drawn, and how many draws there were
    const seen = {gd: null, value: null, draws: 0};
    const onDraw = () => { seen.value = measure(); seen.draws += 1; };
    const initial = document.querySelector(`${selector} .js-plotly-plot`);  // none: never drawn yet (out of view)
    const attach = () => {
        const gd = document.querySelector(`${selector} .js-plotly-plot`);
        if (!gd || gd === seen.gd || !gd.on) return;
        if (seen.gd) seen.gd.removeListener('plotly_afterplot', onDraw);
        if (seen.gd || !initial) onDraw();  // a new div, or the plot's first: drawn already, since the watch began
        seen.gd = gd;
        gd.on('plotly_afterplot', onDraw);
    };
    attach();
    return {
        drawn: (n) => { attach(); return seen.value === n; },
        draws: () => { attach(); return seen.draws; },
        stop: () => { if (seen.gd) seen.gd.removeListener('plotly_afterplot', onDraw); },
    };
};
const thumbnails = () => [...document.querySelectorAll('#attention-thumbnails img')];
const firstThumbnail = () => { const all = thumbnails(); return all.length ? all[0].src : null; };
// every thumbnail is the new step's (the first one gains a row at every step) and decoded
const thumbnailsShown = (before) => { const all = thumbnails();
    return all.length > 0 && all[0].src !== before && all.every(img => img.complete); };
// whether an element is (partly) in the window: what the user sees, and waits for
const inWindow = (element) => { const box = element.getBoundingClientRect();
    return element.getClientRects().length > 0 && box.bottom > 0 && box.top < window.innerHeight; };
const untilFrame = (t0, done, what) => new Promise((resolve, reject) => {
    const poll = () => {
        if (done()) resolve(performance.now() - t0);
        else if (performance.now() - t0 > TIMEOUT_MS) reject(new Error(`timed out waiting for ${what}`));
        else requestAnimationFrame(poll);
    };
    requestAnimationFrame(poll);
});
const answer = async (t0) => {  // the events sent since the click: their timings and sizes, on whichever stream
    const sent = () => window.events.joins.filter(j => j.sentAt >= t0).map(j => window.events.byEvent[j.id]);
    const pause = () => new Promise(resolve => setTimeout(resolve, 10));
    for (let i = 0; i < 100 && !sent().length; i++) await pause();  // a join's event id comes with its answer
    // Resource Timing: when the network stack had received the whole stream, if one opened since the click and ended
    const streamEnd = () => performance.getEntriesByType('resource')
        .filter(e => e.name.includes('/queue/data') && e.startTime >= t0).pop();
    let entry = streamEnd();
    for (let i = 0; i < 20 && !entry; i++) { await pause(); entry = streamEnd(); }
    performance.clearResourceTimings();
    const events = sent();
    if (!events.length) return {message_ms: null, stream_end_ms: null, message_bytes: null, messages: null,
                                server_fn_ms: null};
    const sum = (key) => events.reduce((total, e) => total + e[key], 0);
    const answered = events.every(e => e.completedAt !== null);
    return {
        message_ms: answered ? Math.max(...events.map(e => e.completedAt)) - t0 : null,
        stream_end_ms: entry ? entry.responseEnd - t0 : null,
        message_bytes: sum('bytes'),
        messages: sum('messages'),
        server_fn_ms: 1000 * sum('serverFnS'),
    };
};
""".replace("TIMEOUT_MS", str(ACTION_TIMEOUT_MS))

# Click Step; resolves when the heatmap is drawn with one more row, or (the </s> step) when the finish is shown.
STEP_JS = (
    "async () => {"
    + _JS_HELPERS
    + """
    const before = rows(), thumbnailBefore = firstThumbnail();
    const watch = watchDraws(), candidates = watchDraws('#candidates-plot', () => null);
    try {
        const button = document.querySelector('#step-btn');
        let heatmap = null;
        const t0 = performance.now();
        button.click();
        const ms = await untilFrame(t0, () => {
            if (heatmap === null && watch.drawn(before + 1)) heatmap = performance.now() - t0;
            const all = heatmap !== null && candidates.draws() > 0 && thumbnailsShown(thumbnailBefore);
            return all || finishedShown();
        }, 'the step to be drawn');
        return {ms, heatmap_ms: heatmap, finished: finishedShown() && rows() === before, ...(await answer(t0))};
    } finally { watch.stop(); candidates.stop(); }
}"""
)

# With the Inside a step tab open: click Step; resolves when the stage's figure has been drawn for the new step (its
# text names the new position) or the finish is shown.
INSIDE_STEP_JS = (
    "async () => {"
    + _JS_HELPERS
    + """
    const position = () => Number((/position (\\d+)/.exec(document.querySelector('#inside-text').innerText) || [])[1]);
    const next = position() + 1;
    // the stage's tensors are HTML: drawn once the text names the new position and the panels of that answer are in
    const drawn = () => position() === next && document.querySelector('#inside-plot .tensor') !== null
        && [...document.querySelectorAll('#inside-plot img')].every(img => img.complete);
    const candidates = watchDraws('#candidates-plot', () => null);  // and the candidates above, drawn too
    try {
        const t0 = performance.now();
        document.querySelector('#step-btn').click();
        const ms = await untilFrame(t0, () => (drawn() && candidates.draws() > 0) || finishedShown(),
                                    'the inside view to be drawn');
        return {ms, finished: finishedShown(), ...(await answer(t0))};
    } finally { candidates.stop(); }
}"""
)

# With the Walkthrough tab open: click Step; resolves when every section is drawn for the new step: the tokens
# section names the decoder's new position, every figure of the tour that changes has been drawn again, every
# tensor image is decoded, and the candidates above are drawn (or the finish is shown).
# The tour's figures that change at every step (a row more, new candidates). The scores section's map is the same
# figure while the step reads the same source piece, and an unchanged figure is not drawn again.
WALKTHROUGH_PLOTS = ["#walkthrough-masks-plot", "#walkthrough-cross-plot", "#walkthrough-output-plot"]
WALKTHROUGH_STEP_JS = (
    "async () => {"
    + _JS_HELPERS
    + f"const plots = {json.dumps(WALKTHROUGH_PLOTS)};"
    + """
    const position = () => Number((/the one at position (\\d+) /.exec(
        (document.querySelector('#walkthrough-tokens') || {}).innerText || '') || [])[1]);
    const next = position() + 1;
    const images = () => [...document.querySelectorAll('[id^="walkthrough-"][id$="-tensors"] img')];
    const watches = [...plots.map(id => watchDraws(id, () => null)), watchDraws('#candidates-plot', () => null)];
    const seen = [...plots, '#candidates-plot'].map(id => inWindow(document.querySelector(id)));
    try {
        const t0 = performance.now();
        document.querySelector('#step-btn').click();
        const drawn = (all) => watches.every((w, i) => (!all && !seen[i]) || w.draws() > 0);
        const ms = await untilFrame(t0, () => (position() === next && drawn(false)
            && images().every(img => img.complete)) || finishedShown(), 'the walkthrough in the window to be drawn');
        const all_ms = await untilFrame(t0, () => (position() === next && drawn(true)) || finishedShown(),
                                        'the whole walkthrough to be drawn');
        return {ms, all_ms, finished: finishedShown(), ...(await answer(t0))};
    } finally { watches.forEach(w => w.stop()); }
}"""
)

# Click Run; resolves when the final translation, the finish and the final heatmap are all shown.
RUN_JS = (
    "async ([finalText, finalRows]) => {"
    + _JS_HELPERS
    + """
    const watch = watchDraws();
    try {
        const button = document.querySelector('#run-btn');
        let first = null;
        const t0 = performance.now();
        button.click();
        const ms = await untilFrame(t0, () => {
            if (first === null && output()) first = performance.now() - t0;
            return output() === finalText && finishedShown() && watch.drawn(finalRows);
        }, 'the translation to be shown');
        return {ms, first_token_ms: first, ...(await answer(t0))};
    } finally { watch.stop(); }
}"""
)

# Click Reset; resolves when the page shows the empty translation again (one heatmap row, no output).
RESET_JS = (
    "async () => {"
    + _JS_HELPERS
    + """
    const watch = watchDraws();
    try {
        const t0 = performance.now();
        document.querySelector('#reset-btn').click();
        return await untilFrame(t0, () => watch.drawn(1) && output() === '' && !finishedShown(), 'the reset');
    } finally { watch.stop(); }
}"""
)

ROWS_JS = "() => {" + _JS_HELPERS + "return rows(); }"

# Click the tab whose button is `title`; resolves at the first idle moment after the tab's answer has been read in
# which its panel is shown with every figure drawn and every image decoded (see the module docstring).
OPEN_JS = (
    "async (title) => {"
    + _JS_HELPERS
    + """
    const button = [...document.querySelectorAll('#views [role=tab]')].find(b => b.innerText.trim() === title);
    const panel = () => [...document.querySelectorAll('#views [role=tabpanel]')].find(p => p.offsetParent !== null);
    const drawn = () => {
        const shown = panel();
        return shown !== undefined && [...shown.querySelectorAll('.live-plot')]
                .every(div => !inWindow(div) || div.dataset.drawn === 'true')  // ui/plot.py
            && [...shown.querySelectorAll('img')].every(img => img.complete);
    };
    const t0 = performance.now(), sent = window.events.sent;
    button.click();
    // the tab's event answered, on whichever stream it came (the page's keeper may hold one open since before)
    const answered = () => window.events.sent > sent && window.events.answered >= window.events.sent;
    const ms = await new Promise((resolve, reject) => {
        const check = () => {
            const open = button.getAttribute('aria-selected') === 'true';
            if (answered() && open && drawn()) resolve(performance.now() - t0);
            else if (performance.now() - t0 > TIMEOUT_MS) reject(new Error(`timed out opening ${title}`));
            else requestAnimationFrame(() => requestIdleCallback(check));
        };
        requestAnimationFrame(() => requestIdleCallback(check));
    });
    return {ms, ...(await answer(t0))};
}""".replace("TIMEOUT_MS", str(ACTION_TIMEOUT_MS))
)

# What the visible part of the page shows: the source pieces, the heatmap's and the candidates' data. It changes
# when the page has been rebuilt for another model or sentence. (The share link would do, but Gradio renders a
# tab's contents only once the tab has been opened.)
FINGERPRINT_JS = """() => {
    const figure = (id) => { const gd = document.querySelector(`#${id} .js-plotly-plot`); return gd && gd.data; };
    return JSON.stringify([document.querySelector('#source-pieces').innerHTML, figure('attention-plot'),
                           figure('candidates-plot')]);
}"""


# --------------------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------------------


def _breakdown(name: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the time of the clicks went: handler, answer in the page, browser; and the size of the answer."""
    for r in results:
        r["browser_ms"] = r["ms"] - r["message_ms"] if r.get("message_ms") is not None else None
    return {
        f"{name}_server_fn_ms_median": median_of(results, "server_fn_ms"),
        f"{name}_message_ms_median": median_of(results, "message_ms"),
        f"{name}_stream_end_ms_median": median_of(results, "stream_end_ms"),
        f"{name}_browser_ms_median": median_of(results, "browser_ms"),
        f"{name}_message_bytes_median": median_of(results, "message_bytes", 0),
        f"{name}_answers_read": sum(r.get("message_ms") is not None for r in results),  # of len(results)
    }


def builtin_models() -> list[str]:
    """The built-in models, as `ModelRegistry` finds them: the checkpoint and twin folders of `checkpoints/`."""
    from explorer import ModelRegistry

    return ModelRegistry(ROOT / "checkpoints").builtin


# --------------------------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------------------------


def _until_rebuilt(page, before: str, what: str) -> None:
    """Wait until the page shows something else than `before` (a fingerprint), or a new message; fail when a
    message came and the page was not rebuilt (a note that comes with the new page, such as a sentence replaced
    for a model that cannot read it, is no failure)."""
    message = page.locator(STATUS).inner_text().strip()
    page.wait_for_function(
        f"""([before, message]) => {{
            const now = document.querySelector('{STATUS}').innerText.trim();
            return ({FINGERPRINT_JS})() !== before || (now !== '' && now !== message);
        }}""",
        arg=[before, message],
        timeout=ACTION_TIMEOUT_MS,
    )
    if page.evaluate(FINGERPRINT_JS) == before:
        raise RuntimeError(f"{what}: {page.locator(STATUS).inner_text().strip()}")


def _pick_model(page, name: str) -> None:
    """Choose a model in the dropdown; wait until the page has been rebuilt with it (so it is loaded)."""
    before = page.evaluate(FINGERPRINT_JS)
    page.locator("#model-select input").click()
    model_option(page, name).click()
    _until_rebuilt(page, before, f"loading {name}")


def _set_sentence(page, sentence: str) -> None:
    """Type the sentence and press Enter; wait until the page has been rebuilt for it, and every event answered."""
    before = page.evaluate(FINGERPRINT_JS)
    source = page.locator("#source-text textarea")
    source.fill(sentence)
    source.press("Enter")
    _until_rebuilt(page, before, f"the sentence {sentence!r}")
    settled(page)


def _measure_page(app: App, page, *, model: str, steps: int, runs: int, memory_steps: int) -> dict[str, Any]:
    """Everything measured in the browser, on a started app; see the module docstring."""
    page.add_init_script(EVENT_TAP_JS)
    start = time.perf_counter()
    page.goto(app.url)
    page.wait_for_selector("#attention-plot .js-plotly-plot", timeout=ACTION_TIMEOUT_MS)
    page_load_s = time.perf_counter() - start
    settled(page)  # the opening's events answered before the first action (docs/architecture.md, "Events that overlap")

    models = builtin_models() if steps >= 10 else [model]  # quick mode: the measured model alone
    for name in [*(m for m in models if m != model), model]:  # every built-in model once, the measured one last
        if shown_model(page) != name:
            _pick_model(page, name)
    ready_memory = app.memory_mb()

    _set_sentence(page, SENTENCE)
    step_clicks = 0

    def step() -> dict[str, Any]:
        nonlocal step_clicks
        step_clicks += 1
        return page.evaluate(STEP_JS)

    # Once through the sentence, untimed (a warm-up): the final translation and the number of steps.
    n_steps = 1
    while not step()["finished"]:
        n_steps += 1
    translation = page.locator("#output-text textarea").input_value()
    final_rows = page.evaluate(ROWS_JS)
    page.evaluate(RESET_JS)

    timed: list[dict[str, Any]] = []
    while len(timed) < steps:
        result = step()
        if result["finished"]:  # the </s> step: not timed (see the module docstring)
            page.evaluate(RESET_JS)
        else:
            timed.append(result)

    inside_results = _tab_steps(page, steps, "Inside a step", INSIDE_OPENED, INSIDE_STEP_JS)
    walkthrough_results = _tab_steps(page, steps, "Walkthrough", WALKTHROUGH_OPENED, WALKTHROUGH_STEP_JS)

    run_results = []
    for _ in range(runs):
        page.evaluate(RESET_JS)
        run_results.append(page.evaluate(RUN_JS, [translation, final_rows]))
    page.evaluate(RESET_JS)

    while step_clicks < memory_steps:
        if step()["finished"]:
            page.evaluate(RESET_JS)
    after_memory = app.memory_mb()
    opened = _open_views(page, rounds=1, quick=True) if steps < 10 else _open_views(page, rounds=3)
    slowed = _slowed(page, CPU_SLOWDOWN, steps=10) if steps >= 10 else {}  # a minute more: not in quick mode

    return {
        "page_load_s": round(page_load_s, 2),
        "translation": translation,
        "n_steps": n_steps,
        **summarise("step_ms", [r["ms"] for r in timed]),
        "step_heatmap_ms_median": median_of(timed, "heatmap_ms"),
        **_breakdown("step", timed),
        **summarise("run_ms", [r["ms"] for r in run_results]),
        **_breakdown("run", run_results),
        **summarise("inside_step_ms", [r["ms"] for r in inside_results]),
        **_breakdown("inside_step", inside_results),
        **summarise("walkthrough_step_ms", [r["ms"] for r in walkthrough_results]),
        **summarise("walkthrough_all_ms", [r["all_ms"] for r in walkthrough_results]),
        **_breakdown("walkthrough_step", walkthrough_results),
        "run_first_token_ms_median": median_of(run_results, "first_token_ms"),
        "run_messages": median_of(run_results, "messages", 0),
        "models_loaded": models,
        "rss_ready_mb": ready_memory["VmRSS"],
        "memory_step_clicks": step_clicks,
        "rss_after_steps_mb": after_memory["VmRSS"],
        "rss_after_100_steps_mb": after_memory["VmRSS"] if step_clicks == 100 else None,
        **opened,
        **slowed,
    }


def _open_views(page, rounds: int, quick: bool = False) -> dict[str, Any]:
    """Open every tab twice per round, in the guide's order, on a page reloaded for each round (so that the first
    opening is a first one); the times by view, first and again (see the module docstring). `quick`: on the page as
    it is, with no pause between the openings (the machinery run, not the figures)."""
    first: dict[str, list[float]] = {tab: [] for tab in TABS}
    again: dict[str, list[float]] = {tab: [] for tab in TABS}
    for _round in range(rounds):
        if not quick:
            page.reload()
            page.wait_for_selector("#attention-plot .js-plotly-plot", timeout=ACTION_TIMEOUT_MS)
            settled(page)  # the opening's events answered before the first action
            _set_sentence(page, SENTENCE)
            for _step in range(3):
                page.evaluate(STEP_JS)
        for times in (first, again):
            for tab in (*TABS[1:], TABS[0]):  # the Attention tab is open already: it comes last
                times[tab].append(page.evaluate(OPEN_JS, tab)["ms"])
                if not quick:
                    page.wait_for_timeout(300)  # the tab's own late work out of the next one's way
    result: dict[str, Any] = {}
    for tab in TABS:
        key = tab.lower().replace(" ", "_")
        result[f"open_first_{key}_ms_median"] = round(statistics.median(first[tab]), 1)
        result[f"open_again_{key}_ms_median"] = round(statistics.median(again[tab]), 1)
    result["open_ms_max"] = max(value for key, value in result.items() if key.startswith("open_"))
    return result


def _slowed(page, slowdown: int, steps: int) -> dict[str, Any]:
    """Step, step with the walkthrough open and open every view with Chromium's CPU slowed `slowdown` times."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": slowdown})
    try:
        opened = _open_views(page, rounds=1)
        timed: list[dict[str, Any]] = []
        while len(timed) < steps:
            result = page.evaluate(STEP_JS)
            if result["finished"]:
                page.evaluate(RESET_JS)
            else:
                timed.append(result)
        walkthrough = _tab_steps(page, max(1, steps // 2), "Walkthrough", WALKTHROUGH_OPENED, WALKTHROUGH_STEP_JS)
    finally:
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
        cdp.detach()
    return {
        "cpu_slowdown": slowdown,
        **summarise("slow_step_ms", [r["ms"] for r in timed]),
        **summarise("slow_walkthrough_step_ms", [r["ms"] for r in walkthrough]),
        **summarise("slow_walkthrough_all_ms", [r["all_ms"] for r in walkthrough]),
        "slow_open_ms_max": opened["open_ms_max"],
        **{f"slow_{key}": value for key, value in opened.items() if key != "open_ms_max"},
    }


INSIDE_OPENED = "() => /position 0 /.test(document.querySelector('#inside-text').innerText)"
WALKTHROUGH_OPENED = "() => /the one at position 0 /.test(document.querySelector('#walkthrough-tokens')?.innerText)"


def _tab_steps(page, steps: int, tab: str, opened: str, step_js: str) -> list[dict[str, Any]]:
    """Step with the tab `tab` open (`opened`: its view is drawn for the empty translation), timed by `step_js`:
    `steps` timed steps, reset whenever the translation finishes; then back to the Attention tab."""

    def reopen() -> None:
        open_tab(page, "Attention")
        page.evaluate(RESET_JS)
        open_tab(page, tab)
        page.wait_for_function(opened, timeout=ACTION_TIMEOUT_MS)
        page.wait_for_timeout(500)

    reopen()
    timed: list[dict[str, Any]] = []
    while len(timed) < steps:
        result = page.evaluate(step_js)
        if result["finished"]:
            reopen()
        else:
            timed.append(result)
    open_tab(page, "Attention")
    page.wait_for_timeout(500)
    return timed


def measure_app(*, quick: bool, repeats: int | None = None, model: str = "en-de", app: App | None = None) -> dict:
    """Start the real app and measure start-up, Step, Run and memory; see the module docstring.

    Args:
        quick: 1 start, the measured model alone loaded, 3 timed steps, 2 runs, 12 Step clicks before the memory
            is read, one round of opening the views on the page as it is, and no slowed CPU (about 20 seconds on an
            idle machine), instead of 3 starts, every built-in model, 30 steps, 10 runs, 100 clicks, three rounds on
            pages reloaded and the slowed CPU.
        repeats: how many runs to time, and in full mode how many starts, instead of the numbers above.
        model: the built-in model to step and run.
        app: in quick mode, an app already started to measure instead (the tests' session app, `tests/test_bench.py`):
            its last start is the start-up time, and its memory is what the users before left.
    """
    from playwright.sync_api import sync_playwright  # only the benchmark needs playwright

    if model not in builtin_models():
        raise ValueError(f"{model!r} is not a built-in model ({', '.join(builtin_models())})")
    starts = 1 if quick else (repeats or 3)
    runs = repeats or (2 if quick else 10)
    steps, memory_steps = (3, 12) if quick else (30, 100)

    if app is not None and (not quick or app.ready_s is None):
        raise ValueError("only the quick mode takes an app, already started: a full run starts its own")
    result: dict[str, Any] = {"quick": quick, "model": model, "sentence": SENTENCE}
    own_app = app is None
    app = App() if own_app else app
    try:
        ready = [app.start()] if own_app else [app.ready_s]
        for _again in range(starts - 1):  # a full run's starts after the first
            app.stop()
            ready.append(app.start())
        result.update(
            ready_s=round(statistics.median(ready), 2),
            ready_s_each=[round(r, 2) for r in ready],
            rss_bare_mb=app.memory_mb()["VmRSS"],
        )
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport=VIEWPORT)
                page.set_default_timeout(ACTION_TIMEOUT_MS)
                result.update(_measure_page(app, page, model=model, steps=steps, runs=runs, memory_steps=memory_steps))
            finally:
                browser.close()
        result["peak_mb"] = app.memory_mb()["VmHWM"]
    except Exception as error:
        raise RuntimeError(f"the benchmark failed: {error}\n--- the app's output ---\n{app.log_tail()}") from error
    finally:
        if own_app:
            app.close()
    return result


CLASS_WARMUP_S = 15  # `benchmarks.classroom` times 30 actions of one student alone, then the idle server, first


def measure_step_in_a_class(students: int = 30, seconds: float = 120, model: str = "en-de") -> dict[str, Any]:
    """One browser's Step while `students` simulated students use the same server for `seconds` (see the module
    docstring): the browser steps through `SENTENCE` again and again, from the class's start to its end."""
    import subprocess

    from playwright.sync_api import sync_playwright

    app = App()
    app.start()
    report = Path(app.log.name).with_suffix(".class.json")
    command = [sys.executable, "-m", "benchmarks.classroom", "--url", app.url, "--pid", str(app.process.pid),
               "--students", str(students), "--seconds", str(seconds), "--calibrate", "30"]  # fmt: skip
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(ACTION_TIMEOUT_MS)
            page.add_init_script(EVENT_TAP_JS)
            page.goto(app.url)
            page.wait_for_selector("#attention-plot .js-plotly-plot")
            settled(page)  # the opening's events answered before the first action
            if shown_model(page) != model:
                _pick_model(page, model)
            _set_sentence(page, SENTENCE)
            with report.open("w") as out:
                students_run = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.DEVNULL)
            timed: list[dict[str, Any]] = []
            class_starts = time.monotonic() + CLASS_WARMUP_S  # the class's own calibration, then its idle reading
            while students_run.poll() is None:
                result = page.evaluate(STEP_JS)
                if result["finished"]:
                    page.evaluate(RESET_JS)
                elif time.monotonic() > class_starts:
                    timed.append(result)
                page.wait_for_timeout(500)  # a reader's pause between two Steps
            browser.close()
        the_class = json.loads(report.read_text())
    finally:
        app.close()
        report.unlink(missing_ok=True)
    step = the_class["actions"].get("step", {})
    return {
        "students": students,
        "seconds": seconds,
        **summarise("class_step_ms", [r["ms"] for r in timed]),
        **_breakdown("class_step", timed),
        "class_errors": the_class["errors"],
        "class_students_step": step,
    }


def _browser_cpu_s() -> float:
    """The CPU seconds (user and system) of every Chromium process this process started, and of their children, read
    from /proc (0 where there is none to read)."""
    parents, cpu = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            chromium = "chrom" in os.readlink(stat.parent / "exe")
        except OSError:  # the process ended as it was read
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        cpu[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if chromium else 0.0

    def ours(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    return sum(seconds for pid, seconds in cpu.items() if seconds and ours(pid))


def measure_idle_page(url: str, seconds: float = 20.0, settle_s: float = 3.0) -> dict[str, float]:
    """What a page of the app left open costs the machine while nobody uses it: Chromium's CPU seconds a second
    (`idle_page_cpu_s_per_s`, every process of its own, read from /proc), over `seconds` from `settle_s` after its
    opening was answered and drawn; and what the opening cost it (`opening_cpu_s`, a first page: nothing cached)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.add_init_script(EVENT_TAP_JS)
            before_opening = _browser_cpu_s()
            page.goto(url)
            page.wait_for_selector("#attention-plot .js-plotly-plot", timeout=ACTION_TIMEOUT_MS)
            settled(page)
            opening = _browser_cpu_s() - before_opening
            page.wait_for_timeout(settle_s * 1000)
            before, start = _browser_cpu_s(), time.perf_counter()
            page.wait_for_timeout(seconds * 1000)
            idle = (_browser_cpu_s() - before) / (time.perf_counter() - start)
            return {"idle_page_cpu_s_per_s": round(idle, 4), "idle_s": seconds, "opening_cpu_s": round(opening, 2)}
        finally:
            browser.close()


def measure_openings(app: App, openings: int = 10, warm_up: int = 2) -> dict[str, Any]:
    """What opening a page costs, as the browser tests open theirs: a share link to numbers-de at 1280×1600, again
    and again in one tab of a profile on disk (its scripts compiled once, from V8's code cache after). Medians over
    `openings` after `warm_up`: the page's main thread (`opening_main_thread_s`, Chromium's own count of its tasks),
    Chromium's CPU and the app's (`opening_chromium_cpu_s`, `opening_app_cpu_s`, from /proc), the seconds until it
    is drawn and its events answered (`opening_drawn_s`), and the events it sent (`opening_events`)."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from explorer import ExplorerState

    url = app.url + "?state=" + ExplorerState(model="numbers-de", source="twenty-one").to_link()
    app_pid = app.process.pid if app.process is not None else None
    ticks = os.sysconf("SC_CLK_TCK")

    def app_cpu_s() -> float:
        fields = Path(f"/proc/{app_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    rows: dict[str, list[float]] = {"main": [], "chromium": [], "app": [], "drawn": [], "events": []}
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 1600}
        )
        try:
            page = context.new_page()
            page.add_init_script(EVENT_TAP_JS)
            devtools = context.new_cdp_session(page)
            devtools.send("Performance.enable")

            def main_thread_s() -> float:
                metrics = devtools.send("Performance.getMetrics")["metrics"]
                return next(metric["value"] for metric in metrics if metric["name"] == "TaskDuration")

            for i in range(warm_up + openings):
                page.goto("about:blank")
                page.wait_for_timeout(300)  # the page before it gone
                main, chromium, server, start = main_thread_s(), _browser_cpu_s(), app_cpu_s(), time.perf_counter()
                page.goto(url)
                page.wait_for_selector("#attention-plot .js-plotly-plot", timeout=ACTION_TIMEOUT_MS)
                settled(page)
                drawn = time.perf_counter() - start
                page.wait_for_timeout(200)  # what the last answer set off, done
                if i >= warm_up:
                    rows["main"].append(main_thread_s() - main)
                    rows["chromium"].append(_browser_cpu_s() - chromium)
                    rows["app"].append(app_cpu_s() - server)
                    rows["drawn"].append(drawn)
                    rows["events"].append(page.evaluate("() => window.events.sent"))
        finally:
            context.close()
    median = {name: statistics.median(values) for name, values in rows.items()}
    return {
        "openings": openings,
        "opening_main_thread_s": round(median["main"], 3),
        "opening_chromium_cpu_s": round(median["chromium"], 2),
        "opening_app_cpu_s": round(median["app"], 2),
        "opening_drawn_s": round(median["drawn"], 2),
        "opening_events": int(median["events"]),
    }


if __name__ == "__main__":
    if "--openings" in sys.argv:
        app = App()
        app.start()
        try:
            print(json.dumps(measure_openings(app), indent=2))
        finally:
            app.close()
        raise SystemExit
    if "--idle" in sys.argv:
        app = App()
        app.start()
        try:
            print(json.dumps(measure_idle_page(app.url), indent=2))
        finally:
            app.close()
        raise SystemExit
    if "--class" in sys.argv:
        students = int(sys.argv[sys.argv.index("--class") + 1])
        print(json.dumps(measure_step_in_a_class(students), indent=2, ensure_ascii=False))
        raise SystemExit
    numbers = json.dumps(measure_app(quick="--quick" in sys.argv), indent=2, ensure_ascii=False)
    if "--json" in sys.argv:
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(numbers + "\n")
    print(numbers)
