"""What the page's scripts use of Gradio's and plotly.js's internals in the browser, written against Gradio
`GRADIO_VERSION` and plotly.js `PLOTLY_JS_VERSION` (the one the plotly package ships, `ui.plot.PLOTLY_JS`).

Each internal is one small JavaScript function here, named, that the page's scripts call by its name between double
underscores (`__PLOT_AREA__(plot)`); `with_internals` writes the function in its place. No script of the page
reaches into Gradio or plotly.js itself: `tests/test_layout.py` fails on one that does, and
`tests/test_browser_internals.py` checks each internal in the installed Gradio's and plotly's own scripts. A new
version of either means reading these again against its source. The page's head also holds `STREAM_KEEPER_JS`,
which stands between Gradio's client and the server's stream of answers (its own tests there too), and `MENDS` are
the changes made to Gradio's own scripts and page as the server sends them (`ui.web.Mended`).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

# The versions these were written against: requirements-app.txt pins Gradio, requirements-base.txt plotly, whose
# package ships plotly.js (`plotly/package_data/plotly.min.js`, which the page loads: `ui.plot`).
GRADIO_VERSION = "6.31.0"
PLOTLY_JS_VERSION = "4.1.1"

# Gradio's script file that holds its translations and `changeLocale` (its Settings panel's language switch), as the
# page loaded it: `assets/core-<hash>.js` (`CHANGE_LOCALE` finds it by this expression). A dynamic import of the same
# address is the same module.
GRADIO_CORE = r"/assets/core-[\w-]+\.js$"

INTERNALS = {
    # Gradio shows its own text and the page's fixed text (`ui.i18n.T`) in the language `tag` ("en", "zh-CN");
    # a promise, kept (never rejected) when the page has no such module.
    "CHANGE_LOCALE": r"""(tag) => {
        const core = performance.getEntriesByType("resource").map((entry) => entry.name)
            .find((name) => new RegExp("""
    + json.dumps(GRADIO_CORE)
    + r""").test(name));
        if (!core) return Promise.resolve();
        return import(core).then((module) => module.changeLocale(tag)).catch(() => {});
    }""",
    # The points under the pointer of a plotly.js plot (`_hoverdata`: what its hover label shows), or none.
    "HOVERED_POINTS": """(plot) => (plot && plot._hoverdata) || []""",
    # The element over a plotly.js plot's area between its axes (the `nsewdrag` drag box, which takes its clicks),
    # or null.
    "PLOT_AREA": """(plot) => plot.querySelector(".nsewdrag")""",
    # The layout plotly.js drew a plot with (`_fullLayout`: its sizes worked out), or undefined before it drew one
    # or after it was purged.
    "DRAWN_LAYOUT": """(plot) => plot._fullLayout""",
    # The object that holds a plotly.js plot's event listeners (`_ev`), which plotly.js drops with them when it purges
    # the plot (a mark set on it goes with the listeners), or undefined before it has any.
    "PLOT_LISTENERS": """(plot) => plot._ev""",
}


def with_internals(script: str) -> str:
    """`script` with each internal it names (`__PLOT_AREA__`) written in, as a function it calls in place."""
    for name, function in INTERNALS.items():
        script = script.replace(f"__{name}__", f"({function})")
    return script


# The page's stream of answers, kept open while an answer is owed (a script for the page's head: app.py).
#
# Gradio's client sends each event (`POST …/queue/join`) and reads every answer from one stream per page
# (`GET …/queue/data?session_hash=…`). The server ends that stream (`close_stream`) as soon as no event of the page is
# waiting; the client marks it closed on reading that message, and after each join opens a stream only if it holds
# none open. Two connections, two orders: on a busy machine the answer to a join sent just after the page's last
# answer can be read before the `close_stream` that the server wrote first. The client then keeps its event on a
# stream it is about to mark closed, and the answer waits on the server for a stream nobody opens: the page never
# draws it (seen in the browser tests as a first view missing, or a Step with no answer: docs/architecture.md). The
# browser tests make it happen every time, check that Gradio alone still does this, and that the keeper mends it.
#
# The keeper stands between the client and `fetch`: it counts the joins on their way and the events not yet answered,
# and when the server ends the stream while one is owed, it passes no `close_stream` on and reads the answers from a
# stream it opens again, under the client's own stream. The client sees one stream that never closed.
# `window.streamKeeper.reopened` counts its openings. A page that sets `window.streamKeeper` first goes without it.
STREAM_KEEPER_JS = """<script>
if (!window.streamKeeper) {
    const keeper = window.streamKeeper = {joining: 0, owed: new Set(), early: new Set(), reopened: 0};
    const fetchAsBefore = window.fetch;
    const owing = () => keeper.joining > 0 || keeper.owed.size > 0;
    // Whether to pass one message of the stream on to the client ("data: {…}"); reads the answers as they go.
    const passed = (message) => {
        let data;
        try { data = JSON.parse(message.slice(message.indexOf("data:") + 5)); } catch (error) { return true; }
        if (data.msg === "process_completed" && data.event_id && !keeper.owed.delete(data.event_id)) {
            keeper.early.add(data.event_id);  // answered before its join's answer was read
        }
        return data.msg !== "close_stream" || !owing();
    };
    const joined = async (args) => {
        keeper.joining += 1;
        try {
            const response = await fetchAsBefore(...args);
            if (response.ok) {
                const id = await response.clone().json().then((body) => body.event_id, () => null);
                if (id && !keeper.early.delete(id)) keeper.owed.add(id);
            }
            return response;
        } finally {
            keeper.joining -= 1;
        }
    };
    const keptOpen = async (args) => {
        const first = await fetchAsBefore(...args);
        if (!first.ok || !first.body) return first;
        const decoder = new TextDecoder(), encoder = new TextEncoder();
        let reader = first.body.getReader(), rest = "", closedOwing = false;
        const body = new ReadableStream({
            async pull(controller) {
                for (;;) {
                    const chunk = await reader.read();  // an error (the page aborted it) goes on to the client
                    if (chunk.done) {
                        if (!closedOwing) return controller.close();
                        const again = await fetchAsBefore(...args);
                        if (!again.ok || !again.body) throw new Error(`the stream did not open again: ${again.status}`);
                        keeper.reopened += 1;
                        reader = again.body.getReader();
                        rest = "";
                        closedOwing = false;
                        continue;
                    }
                    const messages = (rest + decoder.decode(chunk.value, {stream: true})).split("\\n\\n");
                    rest = messages.pop();
                    let text = "";
                    for (const message of messages) {
                        if (passed(message)) text += message + "\\n\\n";
                        else closedOwing = true;  // the server ends this stream next: another one is opened
                    }
                    if (text) return controller.enqueue(encoder.encode(text));
                }
            },
            cancel: (reason) => reader.cancel(reason),
        });
        return new Response(body, {status: first.status, statusText: first.statusText, headers: first.headers});
    };
    window.fetch = (...args) => {
        const address = String((args[0] && args[0].url) || args[0]);
        if (address.includes("/queue/join")) return joined(args);
        if (address.includes("/queue/data?")) return keptOpen(args);
        return fetchAsBefore(...args);
    };
}
</script>"""


@dataclass(frozen=True)
class Mend:
    """One change to one of Gradio's scripts or to its page, made as the server sends it: in the answer at an
    address that `address` matches, the text `before`, found exactly once, becomes `after`."""

    address: str  # a regular expression (`^/assets/statustracker-[\w-]+\.js$`; `^/$`: the page)
    before: str
    after: str

    def applies_to(self, path: str) -> bool:
        return re.search(self.address, path) is not None


# Gradio's status tracker (`StatusTracker.svelte`, the progress shown over a component while its event runs) counts
# the seconds of a pending event in a loop of animation frames: `ze` asks for the next frame while `W` (the timer runs)
# is true, and the tracker sets `W` false when its status leaves "pending". The tracker of the page's own loading is
# taken out of the document while pending and never told: its loop asked for a frame 60 times a second for as long as
# the page stayed open, and each frame made the browser compose the page again. An idle page cost 0.054 s of CPU a
# second, all of it this loop; a phone in a lesson ran it for the whole hour. The mend lets the loop go on only while
# the tracker's element (`U`, bound as the component mounts) is in the document: once it was there and is gone, the
# timer stops (`W=!1`, so that a new pending status starts it again). An idle page then costs 0.004 s a second
# (`python -m benchmarks.app_bench --idle`).
IDLE_TIMER = Mend(
    address=r"^/assets/statustracker-[\w-]+\.js$",
    before="W&&ze()})}",
    after="W&&(U&&(ze.s=1),U?U.isConnected:!ze.s)?ze():W=!1})}",
)
# Gradio chooses its own language (and so that of the page's fixed text, `ui.i18n`) from the browser's as its scripts
# start (`navigator.language`), before the page's `head` (which it writes in later) runs; the page's language was
# set only once its opening had been answered (`ui.i18n.SET_LOCALE_JS`), and an English browser opening a `?lang=zh`
# link showed the page in English for two seconds (from 1.4 s to 3.5 s after it was opened, on the 2-core CPU). This
# script, written into the page's HTML first, makes the browser's language the address's (`?lang=en`, `?lang=zh`),
# read at each call, before Gradio reads it; an address without one leaves it as the browser has it.
PAGE_LANGUAGE_JS = """<script>
(() => {
    const tags = {en: "en", zh: "zh-CN"};
    const asked = () => tags[new URLSearchParams(location.search).get("lang")];
    for (const name of ["language", "languages"]) {
        const browsers = Object.getOwnPropertyDescriptor(Navigator.prototype, name);
        if (!browsers || !browsers.get) continue;
        Object.defineProperty(Navigator.prototype, name, {
            configurable: true,
            enumerable: browsers.enumerable,
            get() {
                const tag = asked();
                if (!tag) return browsers.get.call(this);
                return name === "language" ? tag : Object.freeze([tag]);
            },
        });
    }
})();
</script>"""
PAGE_LANGUAGE = Mend(address=r"^/$", before="<head>", after="<head>" + PAGE_LANGUAGE_JS)
# Gradio's front end finds a component's node in its tree of the page's layout (`Z(root, id)`, in
# `assets/core-<hash>.js`) by walking the tree from its root, through Svelte's proxies, every time. And at each status
# message of an event (pending, started, finished) it sets the loading status of every component that ever had one
# (`update_loading_stati_state`): on this page, some 300 of them, each found by a walk over the 1,000 nodes. That cost
# 20 ms of the page's main thread per message on the 2-core CPU, some 15 messages for a Step and 40 for the opening.
# The mend keeps, for each root, where each id lies (its path of child indices, the first in the walk's order, as `Z`
# finds it) and checks it on every call: the path must lead, in the tree as it is now, to a node of that id. When it
# does not (the tree changed there: a `gr.render`, a tab's children built), `Z` walks the tree once more and learns it
# again. It finds the same node as `Z` always, and an id not in the tree (`null`) costs one walk, as before.
NODE_LOOKUP = Mend(
    address=GRADIO_CORE.replace("/assets/", "^/assets/"),
    before="function Z(e,t){if(e.id===t)return e;if(e.children)for(let n of e.children){let e=Z(n,t);if(e)return e}"
    "return null}",
    after="""function Z(root, id) {
    const learnt = Z.paths || (Z.paths = new WeakMap());  // for each root: id -> its path of child indices
    const at = (path) => {
        let node = root;
        for (const index of path) if (!(node = node.children?.[index])) return null;
        return node.id === id ? node : null;
    };
    let paths = learnt.get(root);
    const found = paths?.has(id) ? at(paths.get(id)) : null;
    if (found) return found;
    paths = new Map();
    const learn = (node, path) => {
        if (!paths.has(node.id)) paths.set(node.id, path);
        node.children?.forEach((child, index) => learn(child, [...path, index]));
    };
    learn(root, []);
    learnt.set(root, paths);
    return paths.has(id) ? at(paths.get(id)) : null;
}""",
)
# As the page starts, Gradio gives each node of its tree the events the page listens to on it
# (`find_attached_events`), by looking through every event's targets for each node: here 166 events for 1,000 nodes,
# 70 ms of an opening's main thread. The mend goes through the events once, for each list of them (a page loaded
# anew has a new list), and keeps each component's events in their order, the first target of each event that names
# it, as Gradio's does.
ATTACHED_EVENTS = Mend(
    address=NODE_LOOKUP.address,
    before="find_attached_events(e,t){let n=t.filter(t=>t.targets.find(([t])=>t===e.id)).map(t=>{let n=t.targets"
    ".find(([t])=>t===e.id);return n?n[1]:null}).filter(Boolean);return e.props.shared_props.attached_events=n,e}",
    after="""find_attached_events(node, dependencies) {
    const lists = this.events_by_target || (this.events_by_target = new WeakMap());
    let events = lists.get(dependencies);  // id -> the events on it, in the order of the dependencies
    if (!events) {
        events = new Map();
        for (const dependency of dependencies) {
            const named = new Set();
            for (const [id, event] of dependency.targets) {
                if (named.has(id)) continue;
                named.add(id);
                if (events.has(id)) events.get(id).push(event);
                else events.set(id, [event]);
            }
        }
        lists.set(dependencies, events);
    }
    node.props.shared_props.attached_events = (events.get(node.id) || []).filter(Boolean);
    return node;
}""",
)
MENDS = (IDLE_TIMER, PAGE_LANGUAGE, NODE_LOOKUP, ATTACHED_EVENTS)

_unmended: set[str] = set()


def mended(path: str, script: bytes) -> bytes:
    """`script`, served at `path`, with the `MENDS` for it made (on its bytes, never decoded: the page is 0.7 MB, sent
    to every student). One whose text is not found once (another Gradio) is left out, with a warning the first time:
    the page works without it, at its old cost."""
    for mend in MENDS:
        if not mend.applies_to(path):
            continue
        before = mend.before.encode()
        if script.count(before) == 1:
            script = script.replace(before, mend.after.encode())
        elif mend.address not in _unmended:
            _unmended.add(mend.address)
            logging.getLogger(__name__).warning(
                "Gradio's %s is not the one written against (Gradio %s): not mended", path, GRADIO_VERSION
            )
    return script
