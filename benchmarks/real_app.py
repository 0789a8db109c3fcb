"""Start the real app and drive its page: used by the app benchmark (`app_bench`), the classroom benchmark
(`classroom`, without a browser) and the browser tests.

`App` runs `python app.py` in its own process, as a teacher starts it; Chromium is Debian's (`CHROMIUM`, launched
with `CHROMIUM_ARGS`), driven by Playwright; the page helpers find what a user finds: a view's tab, a model in the
picker.
"""

from __future__ import annotations

import contextlib
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


def listens_on(pid: int, port: int) -> bool:
    """Whether the process `pid` (or a thread of it) listens on TCP `port`, read from /proc: its sockets' inodes
    against the listening sockets of the machine. True where there is no /proc to read (not Linux)."""
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not all(table.exists() for table in tables):
        return True
    listening = set()
    for table in tables:
        for row in table.read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                listening.add(fields[9])  # the socket's inode
    sockets = set()
    with contextlib.suppress(OSError):  # the process ended, or a descriptor closed while it was read
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                sockets.add(os.readlink(fd))
    return any(f"socket:[{inode}]" in sockets for inode in listening)


class App:
    """`python app.py` in its own process, as a teacher starts it, on a free port and without the network; its output
    goes to a log file (a pipe nobody reads would block a chatty app), read by `log_tail` when something fails."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process: subprocess.Popen | None = None
        self.ready_s: float | None = None  # how long its last start took (`start`)
        self.log = tempfile.NamedTemporaryFile(prefix="app-", suffix=".log", delete=False)  # noqa: SIM115

    def start(self) -> float:
        """Start the app; the seconds from just before `Popen` until `GET /` answers 200 from this app's own process.
        A port taken after it was chosen (by another test's app, under pytest-xdist) is given up for another."""
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
        env.setdefault("EXPLORER_CLASS_DB", str(Path(self.log.name).with_suffix(".classes.db")))  # its own classes
        start = time.perf_counter()
        for _attempt in range(3):
            logged = Path(self.log.name).stat().st_size
            env["GRADIO_SERVER_PORT"] = str(self.port)
            self.process = subprocess.Popen(
                [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT
            )
            while time.perf_counter() - start < READY_TIMEOUT_S and self.process.poll() is None:
                try:
                    with urllib.request.urlopen(self.url, timeout=1) as answer:
                        if answer.status == 200 and listens_on(self.process.pid, self.port):
                            self.ready_s = time.perf_counter() - start
                            return self.ready_s
                except OSError:
                    pass
                time.sleep(0.05)
            if self.process.poll() is None:
                raise RuntimeError(f"the app did not answer within {READY_TIMEOUT_S} s")
            if "Cannot find empty port" not in Path(self.log.name).read_text(errors="replace")[logged:]:
                raise RuntimeError("the app exited")
            self.port = free_port()  # gradio's words: the port was taken
            self.url = f"http://127.0.0.1:{self.port}/"
        raise RuntimeError("the app found no free port")

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


# Runs in the page before Gradio's own scripts (`page.add_init_script`): the page's events as they pass, for the
# browser tests and the app benchmark. It counts the events the page sent to the server (`window.events.sent`: one
# POST to /queue/join each, less those the server refused or the network lost, whose status or error goes to
# `window.events.refused`) and those answered (`window.events.answered`: one `process_completed` message each); keeps
# each event's numbers (`window.events.joins`: its id, when it was sent and which of the page's events it is, its
# place in the config's dependencies, in order; `window.events.byEvent[id]`: the bytes of its messages, how many, its
# handler's seconds as the server says, when its answer came), read from whichever stream carried them (one may
# carry the answers of many events, kept open by the page's stream keeper), and each stream's opening
# (`window.events.streams`); and calls `window.events.onPartial`, where a test sets it, on an
# answer still generating (a Run's text as it grows), before Gradio draws it. The streams are read from a copy, and
# Gradio reads its own response untouched (a response wrapped in a new one lost an answer now and then); an error
# reading the copy goes to the stream's `error`.
EVENT_TAP_JS = """
window.events = {sent: 0, answered: 0, refused: [], streams: [], joins: [], byEvent: {}, onPartial: null};
const fetchAsGradioDoes = window.fetch;
const eventRecord = (id) => window.events.byEvent[id] ??= {bytes: 0, messages: 0, serverFnS: 0, completedAt: null};
const utf8 = new TextEncoder();
window.fetch = async (...args) => {
    const url = String((args[0] && args[0].url) || args[0]);
    if (url.includes('/queue/join')) {
        window.events.sent += 1;
        const sentAt = performance.now();
        let fn = null;  // which of the page's events (its place in the config's dependencies)
        try { fn = JSON.parse(args[1].body).fn_index; } catch (error) {}
        const refused = (why) => { window.events.sent -= 1; window.events.refused.push(why); };
        let response;
        try {
            response = await fetchAsGradioDoes(...args);
        } catch (error) {
            refused(String(error));
            throw error;
        }
        if (!response.ok) refused(response.status);
        else response.clone().json().then((body) => {
            if (!body || !body.event_id) return;
            window.events.joins.push({id: body.event_id, sentAt, fn});
            eventRecord(body.event_id);
        }, () => {});
        return response;
    }
    const response = await fetchAsGradioDoes(...args);
    if (!url.includes('/queue/data') || !response.body) return response;
    const stream = {start: performance.now(), error: null};
    window.events.streams.push(stream);
    const reader = response.clone().body.getReader(), decoder = new TextDecoder();
    (async () => {
        let pending = '';
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
            pending += decoder.decode(chunk.value, {stream: true});
            const lines = pending.split('\\n');
            pending = lines.pop();
            for (const line of lines) {
                if (!line.startsWith('data:')) continue;
                let message;
                try { message = JSON.parse(line.slice(5)); } catch (error) { continue; }  // not JSON: not ours
                if (message.msg !== 'process_generating' && message.msg !== 'process_completed') continue;
                const event = eventRecord(message.event_id);
                event.messages += 1;
                event.bytes += utf8.encode(line).length;
                event.serverFnS += (message.output && message.output.duration) || 0;
                if (message.msg === 'process_completed') {
                    window.events.answered += 1;
                    event.completedAt = performance.now();
                } else if (window.events.onPartial) {
                    window.events.onPartial();
                }
            }
        }
    })().catch((error) => { stream.error = String(error); });
    return response;
};
"""
# Whether the page has drawn what it was sent (`EVENT_TAP_JS` must run in it): more than `sent` events sent (-1:
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
    """How many events the page has sent to the server (`EVENT_TAP_JS`)."""
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
