"""The classroom benchmark: a class of simulated students on one app server, each thinking between clicks.

    python -m benchmarks.classroom                          # 30 students, 3 s think time, 120 s
    python -m benchmarks.classroom --students 60            # a bigger class
    python -m benchmarks.classroom --quick                  # 6 students for 20 s (the test suite runs this)
    python -m benchmarks.classroom --trainers 3             # … while 3 more students train in the Train tab
    python -m benchmarks.classroom --url http://127.0.0.1:8080/ --pid 123 --pid 124   # servers already running
    python -m benchmarks.classroom --abuser                 # … while one client floods the public API
    python -m benchmarks.classroom --class-mode             # a teacher leads 60 students for 10 minutes

The app runs in its own process (`python app.py`, as a teacher starts it), or already runs at `--url` (several
processes behind a load balancer, say; `--pid` names them, for their CPU and memory). Each student speaks the
page's own protocol, as the browser does: it joins the queue with one of the page's events (found by the
components' `elem_id`s in the page's `/config`), with the values of every control, and reads the answer from the
event stream. So every student has a session and an explorer of its own on the server, and costs the server
exactly what a browser would; the students are asyncio tasks of one process, so they cost this machine little.

A student waits a think time before each action (exponential, mean `--think` seconds), then does one of these,
in these proportions (`MIX`): Step 40%; Back 8%; a view setting (layer, head or attention family) 14%; switching
the causal mask 5%; opening a tab (Attention, Inside a step, the Walkthrough, Masks and heads, Beam search,
Positions) 12%; Run 6%; Reset 5%; a new sentence, of either built-in model (en-de, numbers-de), 10%. Step at the
end of a translation resets instead, and Back at its start steps instead.

Every answer is checked against what the same actions give one user alone (computed in this process beforehand,
with the same code the server runs): the output so far after every action, the Inside a step text when that tab
opens, and the Walkthrough's first section when that one opens. A wrong answer (crossed sessions, a stale view),
an error message or a failed request counts as an error.

Reported, per kind of action: requests, errors, p50 and p95 latency (from joining the queue to the last message);
for the whole class: requests a second, the server's CPU time per request (from `/proc/<pid>/stat`), the
students' own CPU (they share this machine), the server's resident memory over time, and the hit rate of the
server's shared cache (`explorer.cache`). Before the class comes in, one student alone does the same mix without
thinking (`--calibrate` actions): that gives the server's CPU time *per kind of action* (under load, the actions
run at once and their CPU cannot be told apart).

With `--abuser`, one more client floods the server while the class works, as a hostile script would: from an
address of its own (127.0.0.2), it first sends a burst of 80 `/translate` calls at once, then one every 50 ms, each
the costliest the API takes (beam 8, up to 128 tokens) and in a new session, and never reads an answer. Its answers
are counted by status (accepted, 429 "too many requests", anything else); the class should see no error and keep
its Step p95 (`ui.admission`).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import statistics
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field, replace
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any

import httpx

from benchmarks.real_app import App
from benchmarks.timing import percentile
from explorer.config import Config
from ui.settings import DEFAULTS, NAMES

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = {
    "en-de": [
        "The children play in the park after school every day.",
        "Where is the train station?",
        "My sister reads a book in the garden.",
        "Can you help me, please?",
        "We are going to the cinema tonight.",
    ],
    "numbers-de": ["twenty-one", "ninety-seven", "three hundred and forty-two"],
}
MIX = {"step": 40, "back": 8, "view": 14, "mask": 5, "tab": 12, "run": 6, "reset": 5, "sentence": 10}
TABS = ("attention", "inside", "walkthrough", "experiments", "beam")  # the tabs a student opens (ui/tabs)
FAMILIES = ("encoder", "decoder_self", "cross")
BACK_SAYS = "Back took off"  # what Back took off, when the output shows no change (`Explorer.back`): no error
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ANSWER_TIMEOUT_S = 120
IDLE_S = 5.0


# ---- what one user alone sees -------------------------------------------------------------------------------------


@dataclass
class Expected:
    """For one sentence and one setting of the causal mask (which changes the decoding: with it off, every step
    computes the prefix again, seeing the future), after k steps: the output so far, the Inside a step text (its
    default stage) and the Walkthrough's first section."""

    outputs: list[str]  # k = 0 … the end
    inside: list[str]
    tokens: list[str]

    @property
    def n_steps(self) -> int:
        return len(self.outputs) - 1


def expected_answers() -> dict[tuple[str, str, bool], Expected]:
    """Every sentence stepped through by one user, with the causal mask on and off, in this process, with the code
    the server runs."""
    from explorer import Explorer, ExplorerState, ModelRegistry, inside, walkthrough

    registry = ModelRegistry(ROOT / "checkpoints")
    answers = {}
    for model, sentences in SENTENCES.items():
        for sentence, causal in itertools.product(sentences, (True, False)):
            explorer = Explorer(registry, ExplorerState(model=model, source=sentence, causal_mask=causal))
            seen = Expected([], [], [])
            while True:
                seen.outputs.append(explorer.snapshot().output_text)
                seen.inside.append(inside.stage_view(explorer)[1])
                # the walkthrough's first section, the one a student checks (the others are not written here)
                (tokens,) = walkthrough.written_tour(explorer, kinds=walkthrough.SECTIONS[:1])
                seen.tokens.append(tokens.text)
                if explorer.at_end:
                    break
                explorer.step()
            answers[(model, sentence, causal)] = seen
    return answers


# ---- the page's protocol ------------------------------------------------------------------------------------------


class BrowserTransport(httpx.AsyncHTTPTransport):
    """A connection pool that resends a request whose kept-alive connection the server had just closed, as browsers
    do: a request that failed before any of the answer arrived is sent once more, on a fresh connection. (The
    server closes a connection idle for 5 s; a request sent on it at that moment fails with nothing read.)"""

    RESENT = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await super().handle_async_request(request)
        except self.RESENT:
            return await super().handle_async_request(request)


def browser_client(limits: httpx.Limits, **options: Any) -> httpx.AsyncClient:
    """The simulated pages' HTTP client: its connections behave as a browser's (`BrowserTransport`)."""
    transport = BrowserTransport(limits=limits)
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(ANSWER_TIMEOUT_S), **options)


async def page_cookies(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    """Load the page as a browser does; the cookies it comes with, as the header that sends them back (behind a
    load balancer, they keep a browser's requests on one server: `deploy/nginx.conf`)."""
    loaded = await http.get(url)
    loaded.raise_for_status()
    cookies = "; ".join(f"{name}={value}" for name, value in loaded.cookies.items())
    return {"Cookie": cookies} if cookies else {}


async def answer_of(
    http: httpx.AsyncClient, url: str, session: str, dependency: dict, data: list, headers: dict[str, str] | None = None
) -> list:
    """What the browser does for an event: join the queue with the inputs' values `data` in the session `session`,
    then read the session's event stream until the event completes; the data of its last message (for a Run, the
    last of the messages it streams). `headers`: the browser's cookie, which keeps it on one server of several."""
    trigger = dependency["targets"][0][0] if dependency["targets"] else None
    body = {
        "data": data,
        "event_data": None,
        "fn_index": dependency["id"],
        "trigger_id": trigger,
        "session_hash": session,
    }
    joined = await http.post(f"{url}gradio_api/queue/join", json=body, headers=headers)
    joined.raise_for_status()
    event_id = joined.json()["event_id"]
    params = {"session_hash": session}
    async with http.stream("GET", f"{url}gradio_api/queue/data", params=params, headers=headers) as stream:
        async for line in stream.aiter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("event_id") != event_id or message["msg"] != "process_completed":
                continue
            if not message.get("success", False):
                raise RuntimeError(str(message.get("output", {}).get("error") or message)[:300])
            return message["output"]["data"]
    raise RuntimeError("the event stream ended without an answer")


class PageEvents:
    """The page's events by the `elem_id` of the component that triggers them, from the page's `/config`."""

    def __init__(self, config: dict):
        self.components = {c["id"]: c for c in config["components"]}
        self.by_trigger: dict[tuple[str, str], dict] = {}
        self.apply_outputs: list[str] = []  # a class's view fetched by a following page (`ui.class_follow`)
        for dependency in config["dependencies"]:
            if not dependency.get("backend_fn"):  # a script of the browser's own
                if any(self.components.get(target, {}).get("props", {}).get("elem_id") == "class-apply"
                       for target, _ in dependency["targets"]):  # fmt: skip
                    self.apply_outputs = [self.elem_id(i) for i in dependency["outputs"]]
                continue
            for target, trigger in dependency["targets"]:
                if target not in self.components:
                    continue  # the page's load event
                props = self.components.get(target, {}).get("props", {})
                name = props.get("elem_id") or (props.get("id") if self.components[target]["type"] == "tabitem" else "")
                if name:
                    self.by_trigger[(name, trigger)] = dependency
        self.by_api = {d["api_name"]: d for d in config["dependencies"] if d.get("api_name")}
        self.ticks = [d for d in config["dependencies"] if d.get("backend_fn") and d["targets"]
                      and d["targets"][0][1] == "tick"]  # fmt: skip  # the Train tab's poll (a gr.Timer)
        # The controls, by the setting each holds: Step takes them all, after the explorer, in the order of `NAMES`.
        controls = [i for i in self.event("step-api", "click")["inputs"] if self.components[i]["type"] != "state"]
        self.setting_of = dict(zip(controls, NAMES, strict=True))

    def event(self, name: str, trigger: str) -> dict:
        return self.by_trigger[(name, trigger)]

    def elem_id(self, component_id: int) -> str:
        return self.components[component_id]["props"].get("elem_id") or ""

    def first_value(self, component_id: int) -> Any:
        """The value a control has when the page opens (None for a gr.State, which the server keeps)."""
        component = self.components[component_id]
        return None if component["type"] == "state" else component["props"].get("value")


@dataclass(frozen=True)
class Settings:
    """What one student has set on the page, as the controls send it; every other control keeps its first value
    (`ui.settings.DEFAULTS`)."""

    model: str
    source: str
    causal_mask: bool = DEFAULTS["causal_mask"]
    family: str = DEFAULTS["family"]
    layer: int = DEFAULTS["layer"]
    head: str = DEFAULTS["head"]

    def value(self, name: str) -> Any:
        """The value of the control of the setting `name`: the student's own, or the page's default."""
        return getattr(self, name) if name in self.__dataclass_fields__ else DEFAULTS[name]


@dataclass
class Tally:
    """What the class did: latencies and errors by kind of action, and the server's CPU by kind (`calibrate`)."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    cpu: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    first_errors: list[str] = field(default_factory=list)

    def error(self, kind: str, problem: str) -> None:
        self.errors[kind] += 1
        if len(self.first_errors) < 8:
            self.first_errors.append(f"{kind}: {problem}")


class Student:
    """One student: a session on the server, settings, a place in a translation, and a seeded choice of actions."""

    def __init__(self, url: str, page: PageEvents, expected: dict, index: int, http: httpx.AsyncClient):
        self.url, self.page, self.expected, self.http = url, page, expected, http
        self.rng = random.Random(index)
        self.session = uuid.uuid4().hex
        model = self.rng.choice(list(SENTENCES))
        self.settings = Settings(model, self.rng.choice(SENTENCES[model]))
        self.k = 0  # steps taken
        self.tab = "attention"
        self.headers: dict[str, str] = {}  # the cookies the page was served with, sent back with every request

    @property
    def sentence(self) -> Expected:
        return self.expected[(self.settings.model, self.settings.source, self.settings.causal_mask)]

    async def call(self, dependency: dict) -> dict:
        """Join the queue with `dependency` and the student's settings (None for the explorer, a gr.State, which the
        server keeps); its answer by the outputs' `elem_id`s."""
        setting_of = self.page.setting_of
        data = [self.settings.value(setting_of[i]) if i in setting_of else None for i in dependency["inputs"]]
        outputs = await answer_of(self.http, self.url, self.session, dependency, data, self.headers)
        return {self.page.elem_id(i): value for i, value in zip(dependency["outputs"], outputs, strict=True)}

    # ---- the actions ------------------------------------------------------------------------------------------

    def choose(self) -> str:
        kind = self.rng.choices(list(MIX), weights=list(MIX.values()))[0]
        if kind == "step" and self.k >= self.sentence.n_steps:
            return "reset"
        if kind == "back" and self.k == 0:
            return "step"
        return kind

    async def act(self, kind: str) -> dict:
        """Do one action of `kind` (changing the student's settings and place first), and the answer."""
        page, settings = self.page, self.settings
        if kind == "step":
            self.k += 1
            return await self.call(page.event(f"step-on-{self.tab}", "click"))  # as the page's Step does
        if kind == "back":
            self.k -= 1
            return await self.call(page.event(f"back-on-{self.tab}", "click"))
        if kind == "run":
            self.k = self.sentence.n_steps
            return await self.call(page.event("run-btn", "click"))
        if kind == "reset":
            self.k = 0
            return await self.call(page.event("reset-btn", "click"))
        if kind == "sentence":
            model = self.rng.choice(list(SENTENCES))
            source = self.rng.choice([s for s in SENTENCES[model] if s != settings.source])
            self.settings, self.k = replace(settings, model=model, source=source, layer=0), 0
            return await self.call(page.event("source-text", "submit"))
        if kind == "mask":
            self.settings = replace(settings, causal_mask=not settings.causal_mask)
            self.k = min(self.k, self.sentence.n_steps)  # the choices so far, replayed under the new mask
            return await self.call(page.event("causal-mask", "input"))
        if kind == "view":
            control = self.rng.choice(["attention-layer", "head", "attention-family"])
            if control == "attention-layer":
                self.settings = replace(settings, layer=1 - settings.layer)  # both built-in models have 2+ layers
            elif control == "head":
                self.settings = replace(settings, head=self.rng.choice(["average", "head 0", "head 1", "all heads"]))
            else:
                self.settings = replace(settings, family=self.rng.choice(FAMILIES))
            return await self.call(page.event(control, "input"))
        self.tab = self.rng.choice([tab for tab in TABS if tab != self.tab])
        return await self.call(page.event(self.tab, "select"))

    def check(self, kind: str, answer: dict) -> str | None:
        """What is wrong with `answer`, if anything, against what one user alone sees."""
        sentence, k = self.sentence, self.k
        status = answer.get("status")
        said_by_back = kind == "back" and isinstance(status, str) and status.startswith(BACK_SAYS)
        if isinstance(status, str) and status.strip() and not said_by_back:
            return f"a message: {status[:120]!r}"
        shown = answer.get("output-text")
        if isinstance(shown, str) and shown != sentence.outputs[k]:
            return f"the output after {k} steps is {shown!r}, alone {sentence.outputs[k]!r}"
        if kind == "tab" and self.tab == "inside" and answer.get("inside-text") != sentence.inside[k]:
            return f"Inside a step after {k} steps is not what one user sees"
        if kind == "tab" and self.tab == "walkthrough" and answer.get("walkthrough-tokens") != sentence.tokens[k]:
            return f"the walkthrough after {k} steps is not what one user sees"
        return None

    async def open_page(self) -> None:
        """What a browser does as it opens the page: load it (keeping the cookies it comes with: behind a load
        balancer, they keep the student on one server), then draw the first view."""
        self.headers = await page_cookies(self.http, self.url)
        self.k = 0
        await self.call(self.page.event("source-text", "submit"))

    async def attend(self, deadline: float, think_s: float, tally: Tally) -> None:
        """Act until `deadline`, thinking before each action; each answer timed, checked and counted. A page that
        does not open (its first view refused, under a flood) counts as an error of kind "open" and is opened again a
        second later, as a student would reload it."""
        opened = False
        while time.monotonic() < deadline:
            if not opened:
                started = time.perf_counter()
                try:
                    await asyncio.wait_for(self.open_page(), ANSWER_TIMEOUT_S)
                    opened = True
                except Exception as error:
                    tally.error("open", f"{type(error).__name__}: {error}"[:200])
                    await asyncio.sleep(1.0)
                    continue
                finally:
                    tally.latencies["open"].append(time.perf_counter() - started)
            if think_s:
                await asyncio.sleep(min(self.rng.expovariate(1 / think_s), max(deadline - time.monotonic(), 0)))
            if time.monotonic() >= deadline:
                break
            kind = self.choose()
            started = time.perf_counter()
            try:
                answer = await asyncio.wait_for(self.act(kind), ANSWER_TIMEOUT_S)
            except Exception as error:  # any failure is what a load test counts
                tally.latencies[kind].append(time.perf_counter() - started)
                tally.error(kind, f"{type(error).__name__}: {error}"[:200])
                self.settings, self.k = Settings(self.settings.model, self.settings.source), 0
                try:
                    await self.call(self.page.event("reset-btn", "click"))  # start again from a known place
                except Exception:
                    opened = False  # the page is reloaded instead
                continue
            tally.latencies[kind].append(time.perf_counter() - started)
            problem = self.check(kind, answer)
            if problem:
                tally.error(kind, problem)


class Trainer:
    """A student who trains in the Train tab, with its default setup, for the whole class: opens the tab, presses
    Train, and asks for news once a second as the page's timer does; trains again when a run ends (its time budget
    spent). Counted apart from the class: its polls, and the training steps its runs reached."""

    def __init__(self, url: str, page: PageEvents, http: httpx.AsyncClient):
        self.url, self.page, self.http = url, page, http
        self.session = uuid.uuid4().hex
        self.headers: dict[str, str] = {}
        self.steps = 0  # training steps of the runs that ended, and of the one going on
        self.ended = 0

    async def call(self, dependency: dict) -> dict:
        data = [self.page.first_value(i) for i in dependency["inputs"]]
        outputs = await answer_of(self.http, self.url, self.session, dependency, data, self.headers)
        return {self.page.elem_id(i): value for i, value in zip(dependency["outputs"], outputs, strict=True)}

    async def attend(self, deadline: float, tally: Tally) -> None:
        self.headers = await page_cookies(self.http, self.url)
        await self.call(self.page.event("source-text", "submit"))  # the page's first view, as a browser draws it
        await self.call(self.page.event("train", "select"))
        await self.call(self.page.event("train-start", "click"))
        poll, before = self.page.ticks[0], 0
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            started = time.perf_counter()
            try:
                answer = await self.call(poll)
            except Exception as error:  # any failure is what a load test counts
                tally.error("train-poll", f"{type(error).__name__}: {error}"[:200])
                continue
            tally.latencies["train-poll"].append(time.perf_counter() - started)
            numbers = answer.get("train-numbers")
            if not isinstance(numbers, str):
                continue  # nothing new: the page keeps what it shows
            found = re.search(r"step ([\d,]+)", numbers)
            step = int(found.group(1).replace(",", "")) if found else before
            self.steps, before = self.steps + max(step - before, 0), step
            if "Finished" in numbers or "Stopped" in numbers or "Failed" in numbers:
                self.ended += 1
                before = 0
                await self.call(self.page.event("train-start", "click"))


class Abuser:
    """The flooding client of `--abuser` (the module's docstring)."""

    BURST = 80
    EVERY_S = 0.05
    ADDRESS = "127.0.0.2"  # a loopback address of its own: the server tells it from the class (127.0.0.1)
    SOURCE = "The children play in the park after school every day, and then they go home for dinner."

    def __init__(self, url: str, page: PageEvents):
        self.url = url
        self.dependency = page.by_api["translate"]
        self.statuses: dict[int, int] = defaultdict(int)

    def body(self) -> dict:
        data = [self.SOURCE, "en-de", "beam", 1.0, 0, 1.0, 0, 8, 128, True, True, [], 5]
        return {"data": data, "event_data": None, "fn_index": self.dependency["id"], "session_hash": uuid.uuid4().hex}

    async def join(self, http: httpx.AsyncClient) -> None:
        try:
            answer = await http.post(f"{self.url}gradio_api/queue/join", json=self.body())
            self.statuses[answer.status_code] += 1
        except httpx.HTTPError:
            self.statuses[0] += 1  # no answer at all

    async def attend(self, deadline: float) -> None:
        transport = httpx.AsyncHTTPTransport(local_address=self.ADDRESS, limits=httpx.Limits(max_connections=100))
        async with httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(30)) as http:
            await asyncio.gather(*(self.join(http) for _ in range(self.BURST)))
            while time.monotonic() < deadline:
                await self.join(http)
                await asyncio.sleep(self.EVERY_S)

    def summary(self) -> dict[str, int]:
        return {
            "joins": sum(self.statuses.values()),
            "accepted": self.statuses.get(200, 0),
            "refused_429": self.statuses.get(429, 0),
            "other": {str(code): n for code, n in self.statuses.items() if code not in (200, 429)},
        }


# ---- the servers --------------------------------------------------------------------------------------------------


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time of the processes `pids` (all their threads), in seconds."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of the whole line)
    return total / CLOCK_TICKS


def resident_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return round(total / 1024, 1)


async def cache_stats(url: str, page: PageEvents, http: httpx.AsyncClient, headers: dict[str, str]) -> dict | None:
    """The server's shared cache counters (the page's `/cache_stats` endpoint), or None where there is none. Behind
    a load balancer, those of the server that `headers` (a browser's cookies) lead to."""
    dependency = page.by_api.get("cache_stats")
    if dependency is None:
        return None
    return (await answer_of(http, url, uuid.uuid4().hex, dependency, [], headers))[0]


def summary(tally: Tally) -> dict[str, Any]:
    kinds = {}
    for kind in sorted(tally.latencies):
        values = tally.latencies[kind]
        row = {
            "requests": len(values),
            "errors": tally.errors.get(kind, 0),
            "p50_ms": round(1000 * statistics.median(values), 1),
            "p95_ms": round(1000 * percentile(values, 95), 1),
        }
        if tally.cpu.get(kind):
            row["server_cpu_ms"] = round(1000 * statistics.fmean(tally.cpu[kind]), 1)
        kinds[kind] = row
    return kinds


async def calibrated(solo: Student, pids: list[int], actions: int) -> Tally:
    """One student alone, `actions` actions without thinking: the server's CPU time by kind of action."""
    alone = Tally()
    if not actions:
        return alone
    await solo.open_page()
    for _ in range(actions):
        kind = solo.choose()
        before, started = cpu_seconds(pids), time.perf_counter()
        answer = await solo.act(kind)
        alone.latencies[kind].append(time.perf_counter() - started)
        alone.cpu[kind].append(cpu_seconds(pids) - before)
        problem = solo.check(kind, answer)
        if problem:
            alone.error(kind, problem)
    return alone


def training_summary(trainers: list[Trainer], tally: Tally) -> dict[str, Any]:
    """What the students who trained saw: their polls' latencies, and the steps their runs reached."""
    return {
        "trainers": len(trainers),
        "slots": Config.from_environ(os.environ).train_slots,  # the server's, which shares this environment
        "polls": summary(tally),
        "errors": sum(tally.errors.values()),
        "first_errors": tally.first_errors,
        "steps_trained": sum(t.steps for t in trainers),
        "runs_ended": sum(t.ended for t in trainers),
    }


async def classroom(
    url: str,
    pids: list[int],
    *,
    students: int,
    seconds: float,
    think_s: float,
    calibrate: int,
    expected: dict,
    trainers: int = 0,
    abuser: bool = False,
) -> dict[str, Any]:
    """One student alone (`calibrate` actions, no thinking), then the class for `seconds`, while `trainers` more
    students train in the Train tab, and with `abuser` one client floods the public API."""
    limits = httpx.Limits(max_connections=4 * students + 8, max_keepalive_connections=2 * students + 8)
    # The students share one client, but not its cookies: each sends its own (`Student.open_page`), and the client
    # keeps none (a shared jar would give every student the first one's, and one server behind a load balancer).
    no_cookies = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
    async with browser_client(limits, cookies=no_cookies) as http:
        page = PageEvents((await http.get(f"{url}config")).json())

        alone = await calibrated(Student(url, page, expected, 10_000, http), pids, calibrate)
        observer = await page_cookies(http, url)  # one browser, so that both readings are of one server
        stats_before = await cache_stats(url, page, http, observer)
        idle_before = cpu_seconds(pids)
        await asyncio.sleep(IDLE_S)  # what the server spends with nothing to do (its queue's and streams' upkeep)
        idle_cpu_per_s = (cpu_seconds(pids) - idle_before) / IDLE_S

        tally = Tally()
        class_ = [Student(url, page, expected, i, http) for i in range(students)]
        memory = [(0.0, resident_mb(pids))]
        cpu_before, client_before, started = cpu_seconds(pids), time.process_time(), time.monotonic()
        deadline = started + seconds
        training, in_training = Tally(), [Trainer(url, page, http) for _ in range(trainers)]
        flooder = Abuser(url, page) if abuser else None
        tasks = [asyncio.create_task(s.attend(deadline, think_s, tally)) for s in class_] + [
            asyncio.create_task(t.attend(deadline, training)) for t in in_training
        ]
        tasks += [asyncio.create_task(flooder.attend(deadline))] if flooder is not None else []
        while not all(task.done() for task in tasks) and time.monotonic() < deadline + ANSWER_TIMEOUT_S:
            await asyncio.sleep(1.0)
            if time.monotonic() - started >= memory[-1][0] + seconds / 12:
                memory.append((round(time.monotonic() - started, 1), resident_mb(pids)))
        for task in tasks:
            if not task.done():
                task.cancel()
                tally.error("class", "a student was still waiting for an answer long after the end")
        elapsed = time.monotonic() - started
        server_cpu, client_cpu = cpu_seconds(pids) - cpu_before, time.process_time() - client_before
        stats_after = await cache_stats(url, page, http, observer)

    requests = sum(len(values) for values in tally.latencies.values())
    hits = misses = None
    if stats_before and stats_after:
        hits = stats_after["hits"] - stats_before["hits"]
        misses = stats_after["misses"] - stats_before["misses"]
    return {
        "students": students,
        "think_s": think_s,
        "seconds": round(elapsed, 1),
        "requests": requests,
        "requests_per_s": round(requests / elapsed, 2),
        "errors": sum(tally.errors.values()),
        "first_errors": tally.first_errors,
        "actions": summary(tally),
        "server_cpu_ms_per_request": round(1000 * server_cpu / max(requests, 1), 1),
        "server_idle_cpu_ms_per_s": round(1000 * idle_cpu_per_s, 1),  # measured before the class, nobody acting
        "server_cpu_share": round(server_cpu / elapsed / (os.cpu_count() or 1), 3),  # of the whole machine
        "students_cpu_ms_per_request": round(1000 * client_cpu / max(requests, 1), 1),
        "memory_mb": memory,  # (seconds into the class, resident MiB of the server processes)
        "cache": {
            "hits": hits,
            "misses": misses,
            "hit_rate": round(hits / (hits + misses), 3) if hits is not None and hits + misses else None,
            "after": stats_after,
        },
        "alone": {"actions": summary(alone), "errors": sum(alone.errors.values()), "first_errors": alone.first_errors},
        "training": training_summary(in_training, training),
        "abuser": flooder.summary() if flooder is not None else None,
    }


def run(
    *,
    students: int,
    seconds: float,
    think_s: float,
    calibrate: int,
    url: str | None = None,
    pids: list[int] | None = None,
    trainers: int = 0,
    abuser: bool = False,
) -> dict[str, Any]:
    """The benchmark: start the app unless `url` is given, and return the numbers. The server's CPU per request
    counts the class's requests; with `trainers`, it includes answering their polls (the training itself runs in
    worker processes, not counted there)."""
    expected = expected_answers()
    app = None
    if url is None:
        app = App()
        ready_s = app.start()
        url, pids = app.url, [app.process.pid]
    try:
        result = asyncio.run(
            classroom(
                url,
                pids or [],
                students=students,
                seconds=seconds,
                think_s=think_s,
                calibrate=calibrate,
                expected=expected,
                trainers=trainers,
                abuser=abuser,
            )
        )
    finally:
        if app is not None:
            app.close()
    if app is not None:
        result["ready_s"] = round(ready_s, 2)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.classroom", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--think", type=float, default=3.0, help="mean think time before each action, seconds")
    parser.add_argument("--calibrate", type=int, default=300, help="actions of one student alone, for CPU per kind")
    parser.add_argument("--trainers", type=int, default=0, help="students training in the Train tab meanwhile")
    parser.add_argument("--abuser", action="store_true", help="one more client floods the public API meanwhile")
    parser.add_argument("--quick", action="store_true", help="6 students for 20 s, 60 actions alone")
    parser.add_argument("--class-mode", action="store_true", help="a teacher leads, the students follow and answer")
    parser.add_argument("--url", help="a server already running (then --pid names its processes)")
    parser.add_argument("--pid", type=int, action="append", default=[], help="a server process, for CPU and memory")
    args = parser.parse_args(argv)
    if args.class_mode:
        print(json.dumps(lead(args), indent=2, ensure_ascii=False))
        return
    if args.quick:
        args.students, args.seconds, args.calibrate = 6, 20, 60
    url = args.url if args.url is None or args.url.endswith("/") else args.url + "/"
    result = run(
        students=args.students,
        seconds=args.seconds,
        think_s=args.think,
        calibrate=args.calibrate,
        url=url,
        pids=args.pid,
        trainers=args.trainers,
        abuser=args.abuser,
    )
    print(json.dumps(result, indent=2, ensure_ascii=False))


def lead(args: argparse.Namespace) -> dict[str, Any]:
    """The class mode (`benchmarks.class_mode`): 60 students for 10 minutes unless told otherwise; `--quick`: 6 for
    40 s, a question every 15 s."""
    from benchmarks import class_mode

    quick = args.quick
    students = 6 if quick else (args.students if args.students != 30 else 60)
    seconds = 40 if quick else (args.seconds if args.seconds != 120 else 600)
    url = args.url if args.url is None or args.url.endswith("/") else args.url + "/"
    return class_mode.run(
        url,
        args.pid,
        students=students,
        seconds=seconds,
        think_s=3.0 if quick else 8.0,
        lead_s=3.0 if quick else 6.0,
        ask_s=15.0 if quick else 60.0,
        reveal_s=8.0 if quick else 25.0,
    )


if __name__ == "__main__":
    main()
