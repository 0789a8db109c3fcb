"""One client cannot starve the others (`ui.admission`): caps per page, per address and for the public API, the 429
answer in the sender's language, and the fair order of the waiting events. A small app with handlers that wait until
the test lets them go, so that what is pending is known exactly."""

from __future__ import annotations

import threading
import time
import uuid
from types import SimpleNamespace

import gradio as gr
import httpx
import pytest

import app
from ui import admission
from ui.gradio_patch import Blocks

pytestmark = pytest.mark.slow  # a server of its own, its handlers held until the test lets them go

RELEASE = threading.Event()


def held(text: str) -> str:
    RELEASE.wait(timeout=60)
    return text


@pytest.fixture(scope="module")
def server():
    with Blocks() as demo:
        box = gr.Textbox()
        gr.Button().click(held, box, box, api_name="held", concurrency_id="quick", concurrency_limit=1)
        gr.api(held, api_name="translate", **admission.API)
    demo.queue()
    _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=None, quiet=True)
    fns = {fn.api_name: fn._id for fn in demo.fns.values()}
    yield SimpleNamespace(demo=demo, url=url, fns=fns, queue=demo._queue)
    RELEASE.set()
    demo.close()


@pytest.fixture
def fresh(server):
    """Nothing pending when a test starts, nor when it ends."""
    RELEASE.set()
    _wait_until_idle(server)
    RELEASE.clear()
    yield server
    RELEASE.set()
    _wait_until_idle(server)


def _wait_until_idle(server) -> None:
    for _ in range(600):
        if not server.queue.admission.pending():
            return
        threading.Event().wait(0.05)
    raise AssertionError("events still pending")


def join(server, api_name: str, session: str, language: str = "en") -> httpx.Response:
    """A join as a browser or a script sends it, never reading the answers."""
    body = {"data": ["x"], "fn_index": server.fns[api_name], "session_hash": session, "event_data": None}
    return httpx.post(
        server.url + "gradio_api/queue/join", json=body, headers={"accept-language": language}, timeout=30
    )


def session() -> str:
    return uuid.uuid4().hex[:11]


def test_a_flood_of_api_calls_is_refused_to_its_sender_only(fresh):
    flooder = session()
    answers = [join(fresh, "translate", flooder) for _ in range(6)]
    assert [a.status_code for a in answers] == [200] * admission.API_PER_ADDRESS + [429] * (
        6 - admission.API_PER_ADDRESS
    )
    assert "Too many requests from you" in answers[-1].json()["detail"]
    # A page somewhere else is served: its event is queued, not refused
    assert join(fresh, "held", session()).status_code == 200


def test_a_page_that_sends_too_many_events_at_once_is_told_so(fresh):
    busy, other = session(), session()
    answers = [join(fresh, "held", busy).status_code for _ in range(admission.SESSION_PENDING + 2)]
    assert answers == [200] * admission.SESSION_PENDING + [429, 429]
    assert join(fresh, "held", other).status_code == 200
    RELEASE.set()
    _wait_until_idle(fresh)
    assert join(fresh, "held", busy).status_code == 200  # its share comes back once its events are answered


def test_the_refusal_is_in_the_senders_language(fresh):
    flooder = session()
    for _ in range(admission.API_PER_ADDRESS):
        join(fresh, "translate", flooder, "zh-CN,zh;q=0.9")
    refused = join(fresh, "translate", flooder, "zh-CN,zh;q=0.9")
    assert refused.status_code == 429
    assert "请求太多" in refused.json()["detail"]


def test_a_new_client_waits_behind_one_event_of_each_other_client_not_behind_a_flood(fresh):
    flooder, student = session(), session()
    for _ in range(6):
        assert join(fresh, "held", flooder).status_code == 200  # one runs, five wait
    assert join(fresh, "held", student).status_code == 200
    line = fresh.queue.event_queue_per_concurrency_id["quick"].queue
    assert [e.session_hash for e in line].index(student) <= 1  # behind at most one event of the flooder


def test_the_api_waits_while_a_page_event_could_start():
    page_event, api_event = object(), object()
    lines = {
        "quick": SimpleNamespace(queue=[page_event], concurrency_limit=2, current_concurrency=0),
        "api": SimpleNamespace(queue=[api_event], concurrency_limit=1, current_concurrency=0),
    }
    queue = SimpleNamespace(event_queue_per_concurrency_id=lines)

    def api_first():
        for cid in ("api", "quick"):
            if lines[cid].queue:
                return [lines[cid].queue.pop(0)], False, cid

    assert admission.Admission(queue).first_the_page(api_first)[2] == "quick"
    assert lines["api"].queue == [api_event]  # kept, for when the page's events are served
    assert admission.Admission(queue).first_the_page(api_first)[2] == "api"


def test_the_apps_public_api_has_its_own_line():
    public = [fn for fn in app.demo.fns.values() if fn.api_name in ("translate", "cache_stats")]
    assert len(public) == 2
    assert {fn.concurrency_id for fn in public} == {admission.API["concurrency_id"]}
    assert all(fn.concurrency_id != admission.API["concurrency_id"] for fn in app.demo.fns.values() if fn not in public)


def test_an_address_that_spent_its_minute_of_api_time_waits_for_the_next(fresh):
    gate = fresh.queue.admission
    RELEASE.set()
    assert join(fresh, "translate", session()).status_code == 200
    _wait_until_idle(fresh)
    assert gate.api_seconds("127.0.0.1") > 0  # the call's time is charged to its address
    gate.api_time["127.0.0.1"].append((time.monotonic(), admission.API_SECONDS_PER_MINUTE))
    assert join(fresh, "translate", session()).status_code == 429
    assert join(fresh, "held", session()).status_code == 200  # the page is not the API
    assert gate.api_seconds("127.0.0.1", now=time.monotonic() + 61) == 0  # a minute later, the budget is back


def test_behind_a_proxy_the_address_is_the_one_the_last_proxy_saw(monkeypatch):
    def request(forwarded: str) -> SimpleNamespace:
        return SimpleNamespace(headers={"x-forwarded-for": forwarded}, client=SimpleNamespace(host="10.0.0.1"))

    assert admission.address(request("1.2.3.4")) == "10.0.0.1"  # no proxy named: the peer
    monkeypatch.setattr(admission, "PROXY_HOPS", 1)
    assert admission.address(request("1.2.3.4")) == "1.2.3.4"
    assert admission.address(request("6.6.6.6, 1.2.3.4")) == "1.2.3.4"  # a forged first entry is passed over
    assert admission.address(request("")) == "10.0.0.1"


def test_a_pages_own_events_keep_the_order_it_sent_them_in():
    """A page's event once went before its own earlier one: it was given a round by the events it had waiting at the
    time, fewer than when the earlier one came (a Step ran before the Reset sent before it)."""

    def event(session: str, name: str) -> SimpleNamespace:
        return SimpleNamespace(session_hash=session, request=None, concurrency_id="quick", name=name)

    line = SimpleNamespace(queue=[])
    gate = admission.Admission(SimpleNamespace(event_queue_per_concurrency_id={"quick": line}))
    for name in ("a1", "a2", "a3"):
        line.queue.append(event("a", name))
        gate.place(line.queue[-1])
    del line.queue[:2]  # a1 and a2 are taken; a3 waits, in the third round
    line.queue.append(event("a", "a4"))
    gate.place(line.queue[-1])
    assert [e.name for e in line.queue] == ["a3", "a4"]


def test_a_call_with_too_few_values_is_answered_with_words(fresh):
    """Issue 36 §4: too few arguments through the API were a traceback in the log and "Error" to the caller."""
    body = {"data": [], "fn_index": fresh.fns["translate"], "session_hash": session(), "event_data": None}
    answer = httpx.post(fresh.url + "gradio_api/queue/join", json=body, timeout=30)
    assert answer.status_code == 422
    assert answer.json()["detail"] == "This call sends 0 values, and /translate takes 1: send one for each parameter."
