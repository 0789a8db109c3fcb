"""Start the real app and drive its page: used by the app benchmark (`app_bench`), the classroom benchmark
(`classroom`, without a browser) and the browser tests.

`App` runs `python app.py` in its own process, as a teacher starts it; Chromium is Debian's (`CHROMIUM`, launched
with `CHROMIUM_ARGS`), driven by Playwright; the page helpers find what a user finds: a view's tab, a model in the
picker.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Chromium as root in a container needs --no-sandbox; the rest keeps it off the network and from updating itself.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
READY_TIMEOUT_S = 90


def free_port() -> int:
    """A TCP port that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class App:
    """`python app.py` in its own process, as a teacher starts it, on a free port and without the network; its output
    goes to a log file (a pipe nobody reads would block a chatty app), read by `log_tail` when something fails."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process: subprocess.Popen | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="app-", suffix=".log", delete=False)  # noqa: SIM115

    def start(self) -> float:
        """Start the app; the seconds from just before `Popen` until `GET /` answers 200."""
        env = {**os.environ, "GRADIO_SERVER_PORT": str(self.port), "HF_HUB_OFFLINE": "1"}
        env["GRADIO_ANALYTICS_ENABLED"] = "False"
        env.setdefault("EXPLORER_CLASS_DB", str(Path(self.log.name).with_suffix(".classes.db")))  # its own classes
        start = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT
        )
        while time.perf_counter() - start < READY_TIMEOUT_S:
            try:
                with urllib.request.urlopen(self.url, timeout=1) as answer:
                    if answer.status == 200:
                        return time.perf_counter() - start
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError("the app exited") from None
            time.sleep(0.05)
        raise RuntimeError(f"the app did not answer within {READY_TIMEOUT_S} s")

    def memory_mb(self) -> dict[str, float]:
        """VmRSS and VmHWM (the peak resident set) of the app process, in MiB."""
        assert self.process is not None
        fields = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = round(int(value.split()[0]) / 1024, 1)  # the kernel writes kB
        return fields

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the app's output so far."""
        return Path(self.log.name).read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        """Stop the app (it may be started again on the same port); the log stays."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def close(self) -> None:
        """Stop the app and remove its log."""
        self.stop()
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)
        for suffix in (".classes.db", ".classes.db-wal", ".classes.db-shm"):
            Path(self.log.name).with_suffix(suffix).unlink(missing_ok=True)


# Every view, in the order of the teacher's guide (docs/teachers-guide.md), by its English title.
VIEWS = (
    "Attention",
    "Inside a step",
    "Contributions",
    "Walkthrough",
    "Masks and heads",
    "Positions",
    "Trained vs untrained",
    "Beam search",
    "Train",
)
# The tabs of the views' bar, in order (ui/tabs), by their English titles.
TABS = ("Attention", "Inside a step", "Why?", "Walkthrough", "Experiments", "Beam search", "Train")
# The views that are sections of a tab (`ui.tabs.experiments`): their tab, and the section's element.
SECTIONS = {
    "Masks and heads": ("Experiments", "#masks-section"),
    "Positions": ("Experiments", "#positions-section"),
    "Trained vs untrained": ("Experiments", "#twins-section"),
    "Contributions": ("Why?", "#contributions-section"),
    "Census of the heads": ("Why?", "#census-section"),
    "What each encoder layer already knows": ("Why?", "#lens-section"),
}


def open_tab(page, name: str) -> None:
    """Open the view `name`, given by its English title whatever the page's language: click its tab in the tab bar
    (every tab is in sight: they wrap rather than hide in a menu), and for a section of a tab, bring it into view."""
    section = SECTIONS.get(name, (name, None))[1]
    page.get_by_role("tab", name=tab_title(page, name), exact=True).click()
    if section:
        page.locator(section).scroll_into_view_if_needed()


def tab_title(page, name: str) -> str:
    """The title, in the page's language, of the tab that shows the view `name` (an English title)."""
    from explorer.i18n import _, speaking

    language = page.evaluate("() => document.documentElement.lang || 'en'").split("-")[0]
    with speaking(language if language == "zh" else "en"):
        return _(SECTIONS.get(name, (name, None))[0])


def model_option(page, name: str):
    """The model dropdown's option for the model `name` (its label is the name, then " · " and what it is)."""
    escaped = re.escape(name).replace("/", r"\/")  # playwright writes the pattern as /…/
    return page.get_by_role("option", name=re.compile(rf"^{escaped}( · |$)"))


def shown_model(page) -> str:
    """The name of the model the dropdown shows."""
    return page.locator("#model-select input").input_value().split(" · ")[0]


# Runs in the page before gradio's own scripts (`page.add_init_script`): counts the events the page sent to the server
# (`window.events.sent`: one POST to /queue/join each) and those answered (`window.events.answered`: one
# `process_completed` message each, read from the event streams as they pass, unchanged).
COUNT_EVENTS_JS = """
window.events = {sent: 0, answered: 0};
const fetchAsGradioDoes = window.fetch;
window.fetch = async (...args) => {
    const url = String((args[0] && args[0].url) || args[0]);
    if (url.includes('/queue/join')) window.events.sent += 1;
    const response = await fetchAsGradioDoes(...args);
    if (!url.includes('/queue/data') || !response.body) return response;
    // Gradio reads its own response, untouched; the events are counted on a copy (a response wrapped in a new one
    // lost an answer now and then: a view stayed as it was)
    const reader = response.clone().body.getReader(), decoder = new TextDecoder();
    (async () => {
        let pending = '';
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
            pending += decoder.decode(chunk.value, {stream: true});
            const lines = pending.split('\\n');
            pending = lines.pop();
            for (const line of lines) {
                if (line.startsWith('data:') && line.includes('"process_completed"')) window.events.answered += 1;
            }
        }
    })().catch(() => {});
    return response;
};
"""
# Whether the page has drawn what it was sent (`COUNT_EVENTS_JS` must run in it): more than `sent` events sent (-1:
# any number), every one answered, and in the open tab every figure in the window drawn (`ui.plot` marks its div
# `data-drawn`) and every image decoded.
SETTLED_JS = """(sent) => {
    if (!(window.events.sent > sent && window.events.answered >= window.events.sent)) return false;
    const panel = [...document.querySelectorAll('#views [role=tabpanel]')].find(p => p.offsetParent !== null);
    const inWindow = (e) => { const r = e.getBoundingClientRect();
                              return r.height > 0 && r.bottom > 0 && r.top < innerHeight; };
    return [...document.querySelectorAll('.live-plot')].every(d => !inWindow(d) || d.dataset.drawn === 'true')
        && [...(panel ? panel.querySelectorAll('img') : [])].every(img => img.complete);
}"""


def events_sent(page) -> int:
    """How many events the page has sent to the server (`COUNT_EVENTS_JS`)."""
    return page.evaluate("() => window.events.sent")


def settled(page, sent: int = -1) -> None:
    """Wait until the page has sent more than `sent` events (-1: any number), had every one answered, and drawn the
    open tab's figures in the window and its images (`SETTLED_JS`): what a fixed pause after an action stood for."""
    page.wait_for_function(SETTLED_JS, arg=sent)


def open_drawn(page, name: str) -> None:
    """`open_tab`, then wait until the view is drawn (`settled`): when another tab was open, the tab's own event
    answered too."""
    before = events_sent(page)
    chosen = "() => document.querySelector('#views [role=tab][aria-selected=true]')?.innerText.trim()"
    title = tab_title(page, name)
    other = page.evaluate(chosen) != title
    open_tab(page, name)
    page.wait_for_function(f"title => ({chosen})() === title", arg=title)
    settled(page, before if other else -1)
