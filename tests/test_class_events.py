"""How a student's page hears that the teacher moved (issue 38 §2): the server-sent-events stream and its poller."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from explorer.class_store import SQLiteStore
from explorer.classroom import Classroom, Limits
from explorer.state import ExplorerState
from ui.class_events import Hub, routes


@pytest.fixture
def classroom(tmp_path):
    return Classroom(SQLiteStore(tmp_path / "classes.db"), Limits(idle_s=3600))


async def _next_event(stream, timeout: float = 5.0) -> str:
    return await asyncio.wait_for(anext(stream), timeout)


def test_a_stream_says_the_version_then_each_change_then_that_the_class_ended(classroom):
    async def scenario():
        teacher = classroom.start(ExplorerState(source="one"))
        row = classroom.join(teacher.code, "page")
        hub = Hub(classroom, poll_s=0.02, keepalive_s=1.0)
        stream = hub.stream(teacher.code, "page", row.version)
        assert await _next_event(stream) == "retry: 1000\n\n"
        assert await _next_event(stream) == 'event: version\ndata: {"version":1}\n\n'
        assert hub.channels[teacher.code].students == {"page": 1}
        classroom.show(teacher, ExplorerState(source="two"))
        # the change comes with the next poll, before the stream's keep-alive (how soon is measured in the benchmark)
        assert await _next_event(stream) == 'event: version\ndata: {"version":2}\n\n'
        assert await _next_event(stream) == ": still here\n\n"  # an idle stream keeps the proxies' line open
        classroom.store.expire(before=classroom.clock() + 1)
        assert await _next_event(stream) == "event: ended\ndata: {}\n\n"
        with pytest.raises(StopAsyncIteration):
            await _next_event(stream)
        assert hub.channels == {} and hub.streams == 0

    asyncio.run(scenario())


def test_one_poll_wakes_every_page_of_a_class_and_no_page_of_another(classroom):
    async def scenario():
        first, second = classroom.start(), classroom.start()
        hub = Hub(classroom, poll_s=3600)  # polled by hand below
        streams = {}
        for code, page in [(first.code, "a"), (first.code, "b"), (second.code, "c")]:
            classroom.join(code, page)
            streams[page] = hub.stream(code, page, 1)
            await _next_event(streams[page])
            await _next_event(streams[page])
        pending = {page: asyncio.ensure_future(_next_event(s)) for page, s in streams.items()}
        classroom.show(first, ExplorerState(source="x"))
        hub.check()
        done = [await pending["a"], await pending["b"]]
        assert done == ['event: version\ndata: {"version":2}\n\n'] * 2
        await asyncio.sleep(0.05)
        assert not pending["c"].done()  # the other class did not change
        pending["c"].cancel()

    asyncio.run(scenario())


def test_the_poller_tells_the_store_which_pages_are_connected(classroom):
    async def scenario():
        teacher = classroom.start()
        classroom.join(teacher.code, "a")
        classroom.join(teacher.code, "b")
        classroom.clock = lambda: time.time() + classroom.limits.connected_s + 5  # both joined "long ago"
        assert classroom.counts(teacher.code) == (0, 0)
        hub = Hub(classroom, poll_s=0.01, touch_s=0.01)
        stream = hub.stream(teacher.code, "a", 1)
        await _next_event(stream)
        await asyncio.sleep(0.1)
        assert classroom.counts(teacher.code) == (1, 1)  # "a" has its stream open, "b" has none
        await stream.aclose()

    asyncio.run(scenario())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_route_streams_over_http_and_refuses_a_page_that_has_not_joined(classroom):
    hub = Hub(classroom, poll_s=0.02)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=routes(hub)), port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        teacher = classroom.start()
        classroom.join(teacher.code, "page")
        base = f"http://127.0.0.1:{port}/class/events"
        for query in ("?class=ZZZZZZ&student=page", f"?class={teacher.code}&student=other", "?student=page", ""):
            answer = httpx.get(base + query)
            assert answer.status_code == 404 and "not joined" in answer.json()["detail"]
        with httpx.stream("GET", f"{base}?class={teacher.code.lower()}&student=page", timeout=5) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            assert answer.headers["x-accel-buffering"] == "no"
            lines = answer.iter_lines()
            assert [next(lines) for _ in range(4)] == ["retry: 1000", "", "event: version", 'data: {"version":1}']
            classroom.show(teacher, ExplorerState(source="moved"))
            assert [next(lines) for _ in range(3)] == ["", "event: version", 'data: {"version":2}']
    finally:
        server.should_exit = True
        thread.join(timeout=10)
