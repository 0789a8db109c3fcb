"""Who may put an event in gradio's queue, and in what order the waiting events run: one client cannot starve the rest.

Gradio's queue is one line for the whole server, first come first served, refused to everybody once it holds
`max_size` events. A script that sent `/translate` every 50 ms filled it, and the class's Steps were refused with
"503 Queue is full". Here every event is admitted or refused by who sent it:

* **A cap per client.** A page (a session) may have `SESSION_PENDING` events waiting or running at once, and one
  address `ADDRESS_PENDING` (a class behind one school router shares an address, so this cap is wide). Beyond it the
  sender, and only the sender, is answered 429 "Too many requests from you…", in its own language.
* **The public API has its own budget.** `/translate` and the other `gr.api` endpoints run in their own group
  (`API`): at most `API_PENDING` of their events wait or run at once, `API_PER_ADDRESS` per address, one runs at a
  time, and it runs only when no page event waits (`first_the_page`). An address may use `API_SECONDS_PER_MINUTE`
  seconds of the server's time on the API in any minute; beyond that it is refused until its minute has passed.
* **The page first.** The API's one event at a time gives way to the page between its steps: while a page event waits
  or runs, it pauses (`give_way`, at most `GIVE_WAY_S` per step). A flood of the costliest calls (beam 8, 128 tokens)
  took one core and the interpreter's lock from the class, whose Step p95 went from 174 to 453 ms.
* **Fair order.** A new event does not join the end of the line: it goes before every event of a client that has
  more events waiting than it has (round robin by session, and by address in shares of `ADDRESS_SHARE`). A student's
  Step waits behind at most one event of each other client, however many a flooding client has sent.

The address is the one uvicorn reports, which behind nginx on the same machine is already the client's (uvicorn
trusts `X-Forwarded-For` from 127.0.0.1; `FORWARDED_ALLOW_IPS` names other proxies). Behind proxies that uvicorn
does not know, such as a Hugging Face Space's, `EXPLORER_PROXY_HOPS` says how many there are (1 on a Space): the
address is then that many entries from the right of `X-Forwarded-For`, the one the last proxy saw, which a client
cannot forge by sending its own header (docs/deployment.md).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter, defaultdict, deque
from typing import Any

import fastapi
from fastapi import HTTPException

from explorer.config import DEFAULTS, Config
from explorer.i18n import _, language_of, speaking

# The server's configuration sets these (`configure`); a page built without it has the defaults.
SESSION_PENDING = DEFAULTS.session_pending
ADDRESS_PENDING = DEFAULTS.address_pending
ADDRESS_SHARE = 8  # an address counts for one more round per this many of its events waiting
API_PENDING = DEFAULTS.api_pending
API_PER_ADDRESS = DEFAULTS.api_per_address
API_SECONDS_PER_MINUTE = DEFAULTS.api_seconds_per_minute
QUEUE_SIZE = DEFAULTS.queue_size  # every client's events together (gradio's max_size)
PROXY_HOPS = DEFAULTS.proxy_hops

GIVE_WAY_S = 1.0  # the longest the API pauses for the page at one step: the API is slowed, never stopped
POLL_S = 0.005
API = {"concurrency_id": "api", "concurrency_limit": 1}  # what `gr.api` endpoints are given (ui/page.py)
TOO_MANY = 429


def configure(config: Config) -> None:
    """Take the server's configuration (`app.py` reads it, `ui.page.build_page` hands it here): the caps, the API's
    budget, the queue's size and the proxies in front of the app."""
    global SESSION_PENDING, ADDRESS_PENDING, API_PENDING, API_PER_ADDRESS, API_SECONDS_PER_MINUTE, QUEUE_SIZE
    global PROXY_HOPS
    SESSION_PENDING, ADDRESS_PENDING = config.session_pending, config.address_pending
    API_PENDING, API_PER_ADDRESS = config.api_pending, config.api_per_address
    API_SECONDS_PER_MINUTE, QUEUE_SIZE, PROXY_HOPS = config.api_seconds_per_minute, config.queue_size, config.proxy_hops


def address(request: fastapi.Request | None) -> str:
    """The client's address ("" when unknown): uvicorn's, or behind `PROXY_HOPS` proxies the address the last of
    them saw."""
    if request is None:
        return ""
    if PROXY_HOPS:
        seen = [hop.strip() for hop in request.headers.get("x-forwarded-for", "").split(",") if hop.strip()]
        if len(seen) >= PROXY_HOPS:
            return seen[-PROXY_HOPS]
    client = getattr(request, "client", None)
    return getattr(client, "host", "") or ""


def in_senders_language(request: fastapi.Request | None):
    """`_` speaks the language the sender's browser prefers (its Accept-Language)."""
    return speaking(language_of(request.headers.get("accept-language") if request is not None else None))


def refusal(request: fastapi.Request | None, api: bool) -> HTTPException:
    """The 429 answer, in the language the sender's browser prefers."""
    with in_senders_language(request):
        if api:
            text = _(
                "Too many requests from you: the public API takes a few at a time from each address. Wait for "
                "the answers you asked for, then send more."
            )
        else:
            text = _("Too many requests from you at once: wait for the answers to what you asked, then try again.")
    return HTTPException(status_code=TOO_MANY, detail=text)


_INSTALLED: dict[int, Admission] = {}  # the queue of this process, by process id (a fork's copy is not its own)


def give_way() -> None:
    """Called by an API handler between its steps: wait while a page event waits or runs, at most `GIVE_WAY_S`.
    Nothing where no queue was installed in this process (a call outside gradio, a ZeroGPU worker)."""
    installed = _INSTALLED.get(os.getpid())
    if installed is None or threading.current_thread() is threading.main_thread():
        return
    until = time.monotonic() + GIVE_WAY_S
    while installed.page_busy() and time.monotonic() < until:
        time.sleep(POLL_S)


class Admission:
    """The rules above, applied to one gradio queue (`install`)."""

    def __init__(self, queue: Any):
        self.queue = queue
        self.api_time: dict[str, deque[tuple[float, float]]] = defaultdict(deque)  # address: (ended at, seconds)

    def api_seconds(self, sender: str, now: float | None = None) -> float:
        """The seconds the API spent on `sender`'s calls in the last minute."""
        now = time.monotonic() if now is None else now
        spent = self.api_time.get(sender, deque())
        while spent and spent[0][0] < now - 60:
            spent.popleft()
        if not spent:
            self.api_time.pop(sender, None)
        return sum(seconds for _, seconds in spent)

    def page_busy(self) -> bool:
        """Whether a page event (not the API's) waits or runs."""
        return any(e.concurrency_id != API["concurrency_id"] for e in self.pending())

    def install(self) -> None:
        """Make gradio's queue admit and order its events by these rules (written against gradio 6.31's queue)."""
        queue, push, get_events, process = self.queue, self.queue.push, self.queue.get_events, self.queue.process_events

        async def admitted_push(body, request, username):
            self.admit(body, request)
            pushed = await push(body, request, username)
            if pushed[0]:
                self.place(queue.event_ids_to_events.get(pushed[1]))
            return pushed

        def page_first_get_events():
            return self.first_the_page(get_events)

        async def timed_process_events(events, *args, **kwargs):
            started = time.monotonic()
            try:
                return await process(events, *args, **kwargs)
            finally:
                ended = time.monotonic()
                for event in events:
                    if event.concurrency_id == API["concurrency_id"]:
                        self.api_time[address(event.request)].append((ended, ended - started))

        queue.push = admitted_push
        queue.get_events = page_first_get_events
        queue.process_events = timed_process_events
        _INSTALLED[os.getpid()] = self

    # --- what is in the queue ------------------------------------------------------------------------------------

    def pending(self) -> list[Any]:
        """Every event waiting or running."""
        waiting = [e for line in list(self.queue.event_queue_per_concurrency_id.values()) for e in list(line.queue)]
        running = [e for job in list(self.queue.active_jobs) if job for e in job]
        return waiting + running

    def admit(self, body: Any, request: fastapi.Request) -> None:
        """Refuse (429) an event beyond its sender's share; nothing when it is within it."""
        fn = self._fn(body)
        if fn is None:
            return  # gradio answers what it cannot find
        if not isinstance(body.data, list) or len(body.data) < len(fn.inputs):  # gradio's answer was a traceback
            with in_senders_language(request):
                said = _("This call sends {sent} values, and {name} takes {wanted}: send one for each parameter.")
            sent = len(body.data) if isinstance(body.data, list) else 0
            name = f"/{fn.api_name}" if fn.api_name else _("this event")
            raise HTTPException(status_code=422, detail=said.format(sent=sent, name=name, wanted=len(fn.inputs)))
        api = fn.concurrency_id == API["concurrency_id"]
        sender, session = address(request), body.session_hash
        pending = self.pending()
        if api:
            mine = [e for e in pending if e.concurrency_id == API["concurrency_id"]]
            if (
                len(mine) >= API_PENDING
                or sum(address(e.request) == sender for e in mine) >= API_PER_ADDRESS
                or self.api_seconds(sender) >= API_SECONDS_PER_MINUTE
            ):
                raise refusal(request, api=True)
            return
        if (
            sum(e.session_hash == session for e in pending) >= SESSION_PENDING
            or sum(address(e.request) == sender for e in pending) >= ADDRESS_PENDING
        ):
            raise refusal(request, api=False)

    def _fn(self, body: Any) -> Any:
        fns = self.queue.blocks.fns
        return fns.get(body.fn_index) if body.fn_index is not None else None

    def place(self, event: Any) -> None:
        """Move a newly queued event before the events of clients with more waiting than its own client."""
        if event is None:
            return
        line = self.queue.event_queue_per_concurrency_id[event.concurrency_id].queue
        if not line or line[-1] is not event:
            return  # already taken, or not where gradio puts it
        line.pop()
        sessions = Counter(e.session_hash for e in line)
        addresses = Counter(address(e.request) for e in line)
        # … and never before an event of its own page: a page's events run in the order it sent them (Reset, then Step)
        own = [getattr(e, "admission_round", 0) for e in line if e.session_hash == event.session_hash]
        event.admission_round = max(
            sessions[event.session_hash], addresses[address(event.request)] // ADDRESS_SHARE, *own
        )
        at = next((i for i, e in enumerate(line) if getattr(e, "admission_round", 0) > event.admission_round), None)
        line.insert(len(line) if at is None else at, event)

    def first_the_page(self, get_events: Any) -> Any:
        """Gradio's choice of the next events, except that the API's group is passed over while a page event waits
        that could start."""
        lines = self.queue.event_queue_per_concurrency_id
        api_line = lines.get(API["concurrency_id"])
        page_waits = any(
            line.queue and (line.concurrency_limit is None or line.current_concurrency < line.concurrency_limit)
            for cid, line in lines.items()
            if cid != API["concurrency_id"]
        )
        if api_line is None or not api_line.queue or not page_waits:
            return get_events()
        held, api_line.queue = api_line.queue, []
        try:
            return get_events()
        finally:
            api_line.queue = held + api_line.queue
