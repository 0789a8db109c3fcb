"""The classroom benchmark's class mode (issue 38 §5): one teacher leads a class, and every student follows and
answers.

    python -m benchmarks.classroom --class-mode                  # 1 teacher and 60 students for 10 minutes
    python -m benchmarks.classroom --class-mode --quick          # 1 teacher and 6 students for 40 s (the tests)

Everyone speaks the page's own protocol, as in the classroom benchmark (`benchmarks.classroom`), so each costs the
server what a browser would:

- **The teacher's page** starts a class (Teach a class), then every `lead_s` seconds takes a Step (or Reset at the end
  of the sentence) or opens another view, and sends the view to `/class/show`, as the page's script does after every
  action. Every `ask_s` seconds it asks a question, each kind in turn, and reveals it `reveal_s` seconds later (the
  reveal shows the proof, sent to the class too). Its counts and tally tick every 0.5 s, as the page's timer does.
- **Each student's page** joins with the code, listens to the class's stream (`/class/events`), and asks for the
  teacher's view (the page's hidden Follow event) whenever it hears a version newer than the one it shows, as the
  page's script does. When a question reaches it, it answers after a think time (exponential, mean `think_s`).

Reported: follow latency (from the teacher's view sent to `/class/show` to a student's page showing that version or
a later one), p50 and p95; answer → tally (from a student's answer taken to the first tick of the teacher's tally
that counts it); errors (a failed request, a student's page showing an output that is not the teacher's at its
version, a view never followed, an answer never counted); the server's CPU per follow and per answer, measured
apart before the class comes in (one student, nobody else acting); the server's CPU for the whole class; and its
resident memory over time.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import statistics
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchmarks.classroom import (
    ANSWER_TIMEOUT_S,
    PageEvents,
    answer_of,
    browser_client,
    cpu_seconds,
    page_cookies,
    resident_mb,
)
from benchmarks.timing import percentile

SOURCE = "The children play in the park after school every day."
KINDS = ("next", "look", "silence", "layer")
TABS = ("attention", "inside", "walkthrough", "experiments", "beam")
TICK_S = 0.5  # the teacher's counts (`ui.class_panel.COUNTS_S`)
CALIBRATE = 40  # follows and answers of one student alone, for the server's CPU per kind
STATE = re.compile(r"\?state=([A-Za-z0-9_-]+)")
TOTAL = re.compile(r'class="class-total">(\d+)')


def is_update(value: object) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update"


def value_of(output: object) -> object:
    """An output's value as the page shows it after an answer (None: left as it was)."""
    return output.get("value") if is_update(output) else output


@dataclass
class Record:
    """What the class saw, with times from `time.monotonic()`."""

    shown: dict[int, tuple[float, str]] = field(default_factory=dict)  # a view's version: when sent, its output
    moves: dict[int, str] = field(default_factory=dict)  # a view's version: the teacher's move that made it
    follows: list[tuple[int, int, float, str]] = field(default_factory=list)  # student, version, done, output
    answers: list[tuple[int, float]] = field(default_factory=list)  # question, when taken
    ticks: list[tuple[int, float, int]] = field(default_factory=list)  # question, when drawn, answers counted
    errors: list[str] = field(default_factory=list)
    requests: int = 0

    def error(self, problem: str) -> None:
        self.errors.append(problem[:200])


class Page:
    """One page of the class: a session of its own, and its events called with the values a browser sends."""

    def __init__(self, url: str, events: PageEvents, http: httpx.AsyncClient, record: Record):
        self.url, self.events, self.http, self.record = url, events, http, record
        self.session = uuid.uuid4().hex
        self.headers: dict[str, str] = {}
        self.values: dict[str, Any] = {"source-text": SOURCE}
        self.shown = ""  # the state of the view the page shows (its share link's)
        # One event at a time: a browser's page reads every answer from one event stream of its session, and two
        # streams of one session take each other's messages.
        self.lock = asyncio.Lock()

    async def open(self) -> None:
        self.headers = await page_cookies(self.http, self.url)
        await self.call("source-text", "submit")

    async def call(self, elem_id: str, trigger: str, dependency: dict | None = None) -> dict:
        """An event of the page: its inputs' values are the page's (`values`, by elem_id), the settings' defaults
        otherwise (None for a gr.State, which the server keeps); its answer by the outputs' elem_ids."""
        events = self.events
        dependency = dependency or events.event(elem_id, trigger)
        data = []
        for i in dependency["inputs"]:
            name = events.elem_id(i)
            data.append(self.values[name] if name in self.values else events.first_value(i))
        self.record.requests += 1
        async with self.lock:
            outputs = await answer_of(self.http, self.url, self.session, dependency, data, self.headers)
        answer = {events.elem_id(i): value for i, value in zip(dependency["outputs"], outputs, strict=True)}
        self.took(answer)
        return answer

    def took(self, answer: dict) -> None:
        """What the page keeps of an answer: its seat, and the state its share link holds (what it shows)."""
        seat = value_of(answer.get("class-seat"))
        if isinstance(seat, str) and seat.startswith("{"):
            self.values["class-seat"] = seat
        found = STATE.search(str(value_of(answer.get("share-link")) or ""))
        if found:
            self.shown = found.group(1)


class Teacher(Page):
    def __init__(self, *args):
        super().__init__(*args)
        self.code, self.secret = "", ""
        self.question, self.kind = 0, ""  # the question now asked (0: none yet), and its kind
        self.steps, self.tab, self.output = 0, "attention", ""

    async def start(self) -> None:
        await self.open()
        seat = json.loads((await self.call("class-teach", "click"))["class-seat"])
        self.code, self.secret = seat["code"], seat["secret"]
        await self.show(await self.call("step-on-attention", "click"), "step")

    async def show(self, answer: dict, move: str) -> None:
        """Send the view of `answer` to the class, as the page's script does after every action."""
        if isinstance(answer.get("output-text"), str):
            self.output = answer["output-text"]  # (opening a view does not redraw the output: it stays)
        found = STATE.search(answer.get("share-link") or "")
        if not found:
            return
        sent = time.monotonic()
        body = {"class": self.code, "secret": self.secret, "state": found.group(1)}
        self.record.requests += 1
        reply = await self.http.post(f"{self.url}class/show", json=body, headers=self.headers)
        reply.raise_for_status()
        version = reply.json()["version"]
        if version not in self.record.shown:
            self.record.shown[version] = (sent, self.output)
            self.record.moves[version] = move

    async def lead(self, rng: random.Random) -> None:
        """One move: a Step (a Reset at the end of the sentence), or another view."""
        if rng.random() < 0.25:
            self.tab = rng.choice([tab for tab in TABS if tab != self.tab])
            await self.show(await self.call(self.tab, "select"), f"open {self.tab}")
            return
        answer, move = await self.call(f"step-on-{self.tab}", "click"), f"step on {self.tab}"
        self.steps += 1
        if self.steps > 12:
            (answer, move), self.steps = (await self.call("reset-btn", "click"), "reset"), 0
        await self.show(answer, move)

    async def ask(self, kind: str) -> bool:
        """Ask the class; False when the translation has ended (there is no next step to ask about)."""
        self.values["class-kind"] = self.kind = kind
        answer = await self.call("class-ask-button", "click")
        if "class-total" not in str(answer.get("class-tally")):
            said = str(answer.get("status"))
            if "finished" in said:
                return False
            raise RuntimeError(f"the question was not asked: {said[:120]}")
        self.question += 1
        return True

    async def reset(self) -> None:
        """Reset: the sentence from its start again (at its end there is no next step to ask about)."""
        (answer, self.steps) = (await self.call("reset-btn", "click"), 0)
        await self.show(answer, "reset")

    async def reveal(self) -> None:
        await self.show(await self.call("class-reveal", "click"), f"reveal {self.kind}")

    async def tick(self, tick: dict, ticker: Page) -> None:
        """The counts' timer: the tally as the projector shows it (`ticker`: a session of its own, which the
        counts need no more of than the seat)."""
        ticker.values["class-seat"] = self.values["class-seat"]
        answer = await ticker.call("", "", tick)
        found = TOTAL.search(str(answer.get("class-tally") or ""))
        if found and self.question:
            self.record.ticks.append((self.question, time.monotonic(), int(found.group(1))))

    async def attend(self, deadline: float, lead_s: float, ask_s: float, reveal_s: float, tick: dict) -> None:
        rng = random.Random(0)
        started = time.monotonic()
        ticking = asyncio.create_task(self.keep_ticking(deadline, tick))
        next_ask, revealing, asked = started + ask_s / 2, None, 0
        while time.monotonic() < deadline:
            try:
                if revealing is not None and time.monotonic() >= revealing:
                    await self.reveal()
                    revealing = None
                elif revealing is None and time.monotonic() >= next_ask:
                    if not await self.ask(KINDS[asked % len(KINDS)]):  # the sentence ended
                        await self.reset()
                        continue
                    asked, revealing, next_ask = asked + 1, time.monotonic() + reveal_s, time.monotonic() + ask_s
                elif revealing is None:
                    await self.lead(rng)
            except Exception as error:  # a failure is what the benchmark counts
                self.record.error(f"teacher: {type(error).__name__}: {error}")
            await asyncio.sleep(lead_s)
        await ticking

    async def keep_ticking(self, deadline: float, tick: dict) -> None:
        ticker = Page(self.url, self.events, self.http, self.record)
        ticker.headers = self.headers
        while time.monotonic() < deadline + 2:
            began = time.monotonic()
            try:
                await self.tick(tick, ticker)
            except Exception as error:
                self.record.error(f"tick: {type(error).__name__}: {error}")
            await asyncio.sleep(max(TICK_S - (time.monotonic() - began), 0))


class Student(Page):
    def __init__(self, index: int, teacher: Teacher, *args):
        super().__init__(*args)
        self.index, self.teacher = index, teacher
        self.rng = random.Random(index)
        self.heard = 0  # the newest version the stream told of
        self.answered = 0  # the number of the last question answered
        self.woken = asyncio.Event()
        self.answering: list[asyncio.Task] = []  # answers waiting for their think time

    async def join(self) -> None:
        await self.open()
        self.values["class-code"] = self.teacher.code
        await self.call("class-join", "click")

    def seat(self) -> dict:
        return json.loads(self.values.get("class-seat") or "{}")

    async def listen(self, deadline: float) -> None:
        """The class's stream: each version heard wakes the follower."""
        query = {"class": self.teacher.code, "student": self.seat()["student"]}
        timeout = httpx.Timeout(ANSWER_TIMEOUT_S, read=deadline - time.monotonic() + 30)
        try:
            async with self.http.stream(
                "GET", f"{self.url}class/events", params=query, headers=self.headers, timeout=timeout
            ) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data:") and '"version"' in line:
                        self.heard = max(self.heard, json.loads(line[5:])["version"])
                        self.woken.set()
                    if time.monotonic() > deadline:
                        return
        except (httpx.ReadTimeout, httpx.RemoteProtocolError):
            return

    async def fetched(self, shown: str | None = None) -> dict | None:
        """What the class's new version changes on the page, as its script fetches it (`ui.class_follow`) and
        applies it (with no page event), by elem_id; None when the answer sends the page to its Follow event.
        `shown`: as if the page showed that state."""
        seat = self.seat()
        if not (shown or self.shown):
            return None
        query = {"class": seat["code"], "student": seat["student"], "page": seat.get("page", ""),
                 "shown": shown or self.shown,
                 "following": int(bool(seat.get("following"))), "asked": seat.get("asked", ""),
                 "noted": seat.get("noted", "")}  # fmt: skip
        self.record.requests += 1
        reply = await self.http.get(f"{self.url}class/view", params=query, headers=self.headers)
        reply.raise_for_status()
        answer = reply.json()
        if answer.get("follow"):
            return None
        outputs = dict(zip(self.events.apply_outputs, answer["outputs"], strict=True))
        marks = {mark: answer[mark] for mark in ("version", "asked", "noted")}
        outputs["class-seat"] = json.dumps({**seat, **marks})
        self.took(outputs)
        return outputs

    async def follow(self, think_s: float) -> None:
        """The page's script: what the teacher's move changed, fetched, else the page's Follow event; a question
        answered after a think time."""
        answer = await self.fetched()
        if answer is None:
            answer = await self.call("class-follow", "click")
        output = value_of(answer.get("output-text"))
        if isinstance(output, str):
            self.record.follows.append((self.index, self.seat().get("version", 0), time.monotonic(), output))
        box, choice = answer.get("class-question"), answer.get("class-choice")
        open_question = is_update(box) and box.get("visible") and is_update(choice) and choice.get("interactive")
        if open_question and choice.get("choices") and self.answered != self.teacher.question:
            self.answered = self.teacher.question
            key = self.rng.choice(choice["choices"])[1]
            answering = self.answer(self.teacher.question, key, self.rng.expovariate(1 / think_s))
            self.answering.append(asyncio.create_task(answering))

    async def answer(self, question: int, key: str, after_s: float) -> None:
        await asyncio.sleep(after_s)
        if question != self.teacher.question:
            return  # the teacher moved on to another question meanwhile
        try:
            self.values["class-choice"] = key
            said = (await self.call("class-choice", "input")).get("status") or ""
            if "Your answer is in" in said:
                self.record.answers.append((question, time.monotonic()))
            elif "closed" not in said:
                self.record.error(f"answer: {said[:120]}")
        except Exception as error:
            self.record.error(f"answer: {type(error).__name__}: {error}")

    async def attend(self, deadline: float, think_s: float) -> None:
        listening = asyncio.create_task(self.listen(deadline))
        while time.monotonic() < deadline:
            try:
                await asyncio.wait_for(self.woken.wait(), max(deadline - time.monotonic(), 0.01))
            except TimeoutError:
                break
            self.woken.clear()
            if self.heard == self.seat().get("version"):
                continue
            try:
                await self.follow(think_s)
            except Exception as error:
                self.record.error(f"follow: {type(error).__name__}: {error}")
        listening.cancel()


async def apart(teacher: Teacher, student: Student, pids: list[int], calibrate: int = CALIBRATE) -> dict[str, float]:
    """The server's CPU, nobody else acting: for the first follower of a teacher's move (who has the view drawn), for
    each other follower of it (the view already drawn), for a Follow event (a question, a lesson's moment, a page
    not following), and for one answer; the mean of `calibrate` of each."""
    measured: dict[str, list[float]] = {"first_follow": [], "follow": [], "follow_event": [], "answer": []}
    rng = random.Random(1)
    for _ in range(calibrate):
        await teacher.lead(rng)
        shown = student.shown
        before = cpu_seconds(pids)
        if await student.fetched() is None:
            raise RuntimeError("a following page was sent to its Follow event for a move of the teacher's")
        measured["first_follow"].append(cpu_seconds(pids) - before)
        for _ in range(4):  # the class's other pages, which showed what this one showed
            before = cpu_seconds(pids)
            await student.fetched(shown)
            measured["follow"].append(cpu_seconds(pids) - before)
    for _ in range(calibrate):
        student.values["class-seat"] = json.dumps({**student.seat(), "version": -1})  # a view it does not show yet
        before = cpu_seconds(pids)
        await student.call("class-follow", "click")
        measured["follow_event"].append(cpu_seconds(pids) - before)
    if not await teacher.ask("next"):  # the sentence ended
        await teacher.reset()
        await teacher.ask("next")
    student.values["class-seat"] = json.dumps({**student.seat(), "version": -1})
    question = (await student.call("class-follow", "click")).get("class-choice") or {}
    keys = [c[1] for c in question.get("choices", [])]
    for i in range(calibrate):
        student.values["class-choice"] = keys[i % len(keys)]
        before = cpu_seconds(pids)
        await student.call("class-choice", "input")
        measured["answer"].append(cpu_seconds(pids) - before)
    await teacher.reveal()
    return {kind: round(1000 * statistics.fmean(values), 2) for kind, values in measured.items()}


def latencies(
    record: Record, students: int, started: float, deadline: float
) -> tuple[dict[str, list[float]], list[float]]:
    """Follow latencies (every student, every view sent), by the teacher's move, and answer → tally latencies; what
    never arrived is an error."""
    follows: dict[str, list[float]] = {}
    by_student: dict[int, list[tuple[int, float]]] = {}
    for student, version, done, _output in record.follows:
        by_student.setdefault(student, []).append((version, done))
    for version, (sent, _output) in sorted(record.shown.items()):
        if sent < started or sent > deadline - 3:
            continue  # sent before the class came in (the CPU measured apart), or as it ended
        for student in range(students):
            done = [t for v, t in by_student.get(student, []) if v >= version and t >= sent]
            if done:
                follows.setdefault(record.moves[version].split(" on ")[0], []).append(min(done) - sent)
            else:
                record.error(f"student {student} never showed version {version}")
    tallies: list[float] = []
    for question in {q for q, _ in record.answers}:
        taken = sorted(t for q, t in record.answers if q == question and t < deadline)
        ticks = [(t, n) for q, t, n in record.ticks if q == question]
        for rank, at in enumerate(taken, start=1):
            counted = [t for t, n in ticks if n >= rank and t >= at]
            if counted:
                tallies.append(min(counted) - at)
            else:
                record.error(f"an answer to question {question} was never counted on the projector")
    return follows, tallies


def wrong_views(record: Record) -> None:
    """A student's page that shows an output other than the teacher's at its version is an error."""
    versions = sorted(record.shown)
    for student, version, _done, output in record.follows:
        before = [v for v in versions if v <= version]
        if before and output != record.shown[before[-1]][1]:
            teachers = record.shown[before[-1]][1]
            record.error(f"student {student} at version {version} shows {output!r}, the teacher {teachers!r}")


def stats(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50_ms": round(1000 * statistics.median(values), 1),
        "p95_ms": round(1000 * percentile(values, 95), 1),
        "max_ms": round(1000 * max(values), 1),
    }


async def lead_a_class(
    url: str, pids: list[int], *, students: int, seconds: float, think_s: float, lead_s: float, ask_s: float,
    reveal_s: float, calibrate: int = CALIBRATE,
) -> dict[str, Any]:  # fmt: skip
    limits = httpx.Limits(max_connections=6 * students + 16, max_keepalive_connections=4 * students + 16)
    record = Record()
    async with browser_client(limits) as http:
        events = PageEvents((await http.get(f"{url}config")).json())
        tick = next(d for d in events.ticks if "class-banner" in {events.elem_id(i) for i in d["outputs"]})
        teacher = Teacher(url, events, http, record)
        await teacher.start()
        solo = Student(-1, teacher, url, events, http, record)
        await solo.join()
        cpu_apart = await apart(teacher, solo, pids, calibrate)
        record.errors.clear()

        class_ = [Student(i, teacher, url, events, http, record) for i in range(students)]
        for student in class_:
            await student.join()
        record.follows.clear()
        record.requests = 0
        memory = [(0.0, resident_mb(pids))]
        cpu_before, client_before, started = cpu_seconds(pids), time.process_time(), time.monotonic()
        deadline = started + seconds
        tasks = [asyncio.create_task(s.attend(deadline, think_s)) for s in class_]
        tasks.append(asyncio.create_task(teacher.attend(deadline, lead_s, ask_s, reveal_s, tick)))
        while not all(task.done() for task in tasks):
            await asyncio.sleep(1.0)
            if time.monotonic() - started >= memory[-1][0] + seconds / 12:
                memory.append((round(time.monotonic() - started, 1), resident_mb(pids)))
            if time.monotonic() > deadline + ANSWER_TIMEOUT_S:
                record.error("a page was still waiting long after the end")
                break
        elapsed = time.monotonic() - started
        server_cpu, client_cpu = cpu_seconds(pids) - cpu_before, time.process_time() - client_before
    wrong_views(record)
    follows, tallies = latencies(record, students, started, deadline)
    every = [latency for values in follows.values() for latency in values]
    return {
        "students": students,
        "seconds": round(elapsed, 1),
        "views_sent": len(record.shown),
        "questions": teacher.question,
        "follows": len(record.follows),
        "answers": len(record.answers),
        "requests": record.requests,
        "errors": len(record.errors),
        "first_errors": record.errors[:8],
        "follow_latency": stats(every),
        "follow_latency_by_move": {move: stats(values) for move, values in sorted(follows.items())},
        "answer_to_tally": stats(tallies),
        "server_cpu_ms_per_follow": cpu_apart["follow"],  # each follower but the first of a move
        "server_cpu_ms_first_follow": cpu_apart["first_follow"],  # the first, who has the view drawn
        "server_cpu_ms_per_follow_event": cpu_apart["follow_event"],  # a Follow event (a question, a moment)
        "server_cpu_ms_per_answer": cpu_apart["answer"],
        "server_cpu_share": round(server_cpu / elapsed, 3),  # of one core, the whole class
        # The simulated pages' own CPU (this process: reading every answer), on the same cores as the server's
        "students_cpu_ms_per_follow": round(1000 * client_cpu / max(len(record.follows), 1), 1),
        "students_cpu_share": round(client_cpu / elapsed, 3),
        "memory_mb": memory,
    }


def run(url: str | None = None, pids: list[int] | None = None, **settings: Any) -> dict[str, Any]:
    """The class mode: start the app unless `url` is given (then `pids` are its processes), and the numbers."""
    from benchmarks.real_app import App

    app = None
    if url is None:
        app = App()
        app.start()
        url, pids = app.url, [app.process.pid]
    try:
        return asyncio.run(lead_a_class(url, pids or [], **settings))
    finally:
        if app is not None:
            app.close()
