"""How a student's page hears that the teacher moved: a server-sent-events stream, `GET /class/events`.

A follower must cost the server nearly nothing while nothing happens, and hear of a change within a second. So the
server *pushes a version number*, and the page *pulls the state* only when the number changed (through a page
event, which reads the views from the shared cache the teacher's page filled):

- Each page that follows a class opens one stream (`EventSource` in the browser), which waits on an `asyncio.Event`
  of its class: an idle follower is a parked coroutine, and a comment every `KEEPALIVE_S` keeps proxies from
  closing it.
- One poller per process (`Hub`) reads the versions of every class its pages follow, in one query every `POLL_S`,
  and wakes the streams of a class whose version changed. The version lives in the store, so a change made through
  another app process reaches them all.
- The same poller tells the store, every `TOUCH_S`, which students of each class still have a stream open: one
  write per class, the "connected" of the teacher's counts.
- The browser reconnects by itself (`retry:`), so a restarted server loses no follower.

Why this and not a timer on every page, or a long-lived page event: docs/classroom.md ("How pages follow"), with the
measurements.
"""

from __future__ import annotations

import asyncio
import collections
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from explorer.classroom import Classroom, normal_code

POLL_S = 0.25  # how often a process reads the versions of its classes
TOUCH_S = 10.0  # how often it tells the store which students are connected
KEEPALIVE_S = 15.0  # a comment on an idle stream, so that proxies keep it open
RETRY_MS = 1000  # how soon a browser reconnects after the stream closes (a restart)
MAX_STREAMS = 2000  # streams one process holds at most


def message(event: str, data: dict) -> str:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


@dataclass
class Channel:
    """The streams of one class in this process: its last version seen, and the event that wakes them."""

    version: int
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    students: collections.Counter = field(default_factory=collections.Counter)  # open streams per student
    ended: bool = False

    def wake(self) -> None:
        woken, self.changed = self.changed, asyncio.Event()
        woken.set()


class Hub:
    """The classes this process's pages follow, and the one poller that wakes them (see the module's docstring)."""

    def __init__(
        self, classroom: Classroom, poll_s: float = POLL_S, touch_s: float = TOUCH_S, keepalive_s: float = KEEPALIVE_S
    ):
        self.classroom = classroom
        self.poll_s, self.touch_s, self.keepalive_s = poll_s, touch_s, keepalive_s
        self.channels: dict[str, Channel] = {}
        self.streams = 0
        self._poller: asyncio.Task | None = None

    async def stream(
        self, code: str, student: str, version: int, keepalive_s: float = KEEPALIVE_S
    ) -> AsyncIterator[str]:
        """The events of one page: the class's version now, then each new one; `ended` when the class is gone."""
        channel = self.channels.get(code) or self.channels.setdefault(code, Channel(version))
        channel.students[student] += 1
        self.streams += 1
        self._start()
        try:
            yield f"retry: {RETRY_MS}\n\n"
            seen = channel.version
            yield message("version", {"version": seen})
            while not channel.ended:
                if channel.version != seen:  # checked before waiting: a change made meanwhile is not missed
                    seen = channel.version
                    yield message("version", {"version": seen})
                    continue
                try:
                    await asyncio.wait_for(channel.changed.wait(), self.keepalive_s)
                except TimeoutError:
                    yield ": still here\n\n"
            yield message("ended", {})
        finally:
            self.streams -= 1
            channel.students[student] -= 1
            if channel.students[student] <= 0:
                del channel.students[student]
            if not channel.students and self.channels.get(code) is channel:
                del self.channels[code]

    def _start(self) -> None:
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        """Read the versions of the followed classes every `poll_s`, wake what changed; tell the store who is
        connected every `touch_s`. Ends when no page of this process follows a class."""
        touched = 0.0
        while self.channels:
            await asyncio.sleep(self.poll_s)
            self.check()
            if time.monotonic() - touched >= self.touch_s:
                touched = time.monotonic()
                now = self.classroom.clock()
                for code, channel in list(self.channels.items()):
                    self.classroom.store.touch(code, list(channel.students), now)

    def check(self) -> None:
        """One poll: wake the streams of each class whose version changed, and end those of a class that is gone."""
        versions = self.classroom.store.versions(list(self.channels))
        for code, channel in list(self.channels.items()):
            version = versions.get(code)
            if version is None:
                channel.ended = True
                channel.wake()
            elif version != channel.version:
                channel.version = version
                channel.wake()


def routes(hub: Hub) -> list[Route]:
    """The route to mount on the app (`launch(app_kwargs={"routes": …})`)."""

    async def events(request: Request) -> Response:
        code = normal_code(request.query_params.get("class"))
        student = request.query_params.get("student", "")
        row = hub.classroom.store.find(code) if code else None
        if row is None or not hub.classroom.store.has_student(code, student[:64]):
            return JSONResponse({"detail": "There is no such class, or this page has not joined it."}, status_code=404)
        if hub.streams >= MAX_STREAMS:
            return JSONResponse({"detail": "This server follows as many pages as it can."}, status_code=503)
        headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}  # nginx must not hold the events back
        return StreamingResponse(
            hub.stream(code, student, row.version), media_type="text/event-stream", headers=headers
        )

    return [Route("/class/events", events, methods=["GET"])]
