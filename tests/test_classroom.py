"""The classroom benchmark in a quick mode: simulated students speaking the page's own protocol to the real app.

Every answer is checked against what the same actions give one user alone, so crossed sessions and stale views
count as errors."""

from __future__ import annotations

import pytest

from benchmarks import classroom


@pytest.mark.long(waits=True)
@pytest.mark.slow
def test_a_small_class_gets_exactly_what_each_student_would_get_alone(real_app):
    pids = [real_app.process.pid]
    report = classroom.run(students=4, seconds=8, think_s=0.3, calibrate=12, url=real_app.url, pids=pids)
    assert report["errors"] == 0, report["first_errors"]
    assert report["alone"]["errors"] == 0, report["alone"]["first_errors"]
    assert report["requests"] >= 30
    assert {"step", "view", "tab"} <= set(report["actions"])  # the most frequent kinds, at least
    # the server's CPU per kind, read in clock ticks of 10 ms: a kind done once or twice may read 0, the whole not
    assert sum(row["server_cpu_ms"] * row["requests"] for row in report["alone"]["actions"].values()) > 0
    assert report["cache"]["after"]["entries"] > 0  # the server's shared cache, read through /cache_stats
    memory = report["memory_mb"]  # (seconds, MiB) from the start of the class to its end
    assert len(memory) >= 3 and memory[-1][1] - memory[0][1] < 200


def test_the_student_sends_every_control_of_the_page_in_its_order():
    from ui.settings import NAMES, Settings

    student = classroom.Settings("en-de", "Where is the train station?", causal_mask=False, layer=1)
    page = Settings.from_values([student.value(name) for name in NAMES])
    assert [page[name] for name in ("model", "causal_mask", "layer", "stage")] == [
        "en-de",
        False,
        1,
        "decoder.self_attention",
    ]


@pytest.mark.long(waits=True)
@pytest.mark.slow
def test_the_class_mode_follows_the_teacher_and_counts_every_answer(real_app):
    """One teacher and 4 students for 14 s: every view the teacher sends reaches every student, each shows the
    teacher's output at its version, and every answer reaches the projector's tally (else an error). The teacher
    leads for 3 s, asks, reveals 3 s later, leads again and asks again at 9 s. The server's CPU per kind is measured
    over 12 of each (40 in the benchmark)."""
    from benchmarks import class_mode

    settings = dict(students=4, seconds=14, think_s=1.5, lead_s=1.5, ask_s=6.0, reveal_s=3.0, calibrate=12)
    report = class_mode.run(real_app.url, [real_app.process.pid], **settings)
    assert report["errors"] == 0, report["first_errors"]
    assert report["views_sent"] >= 5 and report["questions"] >= 2
    assert report["follow_latency"]["n"] >= 4 * 3 and report["answer_to_tally"]["n"] >= 4
    assert report["server_cpu_ms_per_follow"] > 0 and report["server_cpu_ms_per_answer"] >= 0


def test_the_simulated_browser_resends_a_request_that_met_a_closed_connection(monkeypatch):
    """A request that fails before any answer arrived (the server closed the kept-alive connection) is sent once
    more, as a browser does; a second failure is the benchmark's error."""
    import asyncio

    import httpx

    attempts = []

    async def closed_once(self, request):
        attempts.append(request.url.path)
        if len(attempts) == 1 or request.url.path == "/always":
            raise httpx.ReadError("connection closed", request=request)
        return httpx.Response(200, text="ok", request=request)

    monkeypatch.setattr(httpx.AsyncHTTPTransport, "handle_async_request", closed_once)

    async def get(path):
        async with httpx.AsyncClient(transport=classroom.BrowserTransport()) as http:
            return await http.get(f"http://127.0.0.1:9{path}")

    assert asyncio.run(get("/once")).text == "ok" and attempts == ["/once", "/once"]
    with pytest.raises(httpx.ReadError):
        asyncio.run(get("/always"))
    assert attempts[2:] == ["/always", "/always"]
