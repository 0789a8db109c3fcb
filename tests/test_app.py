"""The Gradio app through its API, with gradio_client, on the shipped numbers-de model."""

from __future__ import annotations

import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

import gradio as gr
import pytest
from gradio_client import Client

import app
from tests.conftest import explorer_on
from ui.settings import event_values
from ui.tabs import TABS

pytestmark = pytest.mark.slow  # the app's server runs in this process, and its runs stream through the queue


def sent_index(elem_id: str) -> int:
    """Where the answer of the page's events, as gradio_client returns it, holds the component `elem_id`: the
    events list the same outputs, and a State is not sent to clients."""
    step = next(fn for fn in app.demo.fns.values() if fn.api_name == "step")
    sent = [block for block in step.outputs if not isinstance(block, gr.State)]
    return next(i for i, block in enumerate(sent) if block.elem_id == elem_id)


STATUS, OUTPUT = sent_index("status"), sent_index("output-text")


@pytest.fixture(scope="module")
def client():
    app.demo.queue(default_concurrency_limit=2)
    _, url, _ = app.demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=None, quiet=True)
    yield Client(url, verbose=False)
    app.demo.close()


def test_translate_endpoint_returns_translation_tokens_and_candidates(client):
    result = client.predict("twenty-one", "numbers-de", api_name="/translate")
    assert result["translation"] == "einundzwanzig"
    assert result["source_tokens"][-1] == "</s>"
    assert "".join(result["output_tokens"]).replace("▁", "") == "einundzwanzig</s>"
    first = result["steps"][0]
    assert first["token"] == result["output_tokens"][0]
    assert len(first["candidates"]) == 5 and first["candidates"][0]["prob"] >= first["candidates"][1]["prob"]


def test_bad_parameters_are_rejected_with_a_message(client):
    with pytest.raises(Exception, match="beam width"):
        client.predict("one", "numbers-de", "beam", 1.0, 0, 1.0, 0, 99, api_name="/translate")
    with pytest.raises(Exception, match="family:layer:head"):
        client.predict("one", "numbers-de", silenced=["cross"], api_name="/translate")
    with pytest.raises(Exception, match="type a sentence"):
        client.predict("   ", "numbers-de", api_name="/translate")


def test_two_clients_at_once_with_different_settings_get_their_own_results(client):
    every_cross = [f"cross:{layer}:{head}" for layer in range(2) for head in range(4)]
    alone_plain = client.predict("ninety-seven", "numbers-de", api_name="/translate")["translation"]
    alone_silenced = client.predict("ninety-seven", "numbers-de", silenced=every_cross, api_name="/translate")
    assert alone_plain != alone_silenced["translation"]
    other = Client(client.src, verbose=False)

    def plain(_):
        return client.predict("ninety-seven", "numbers-de", api_name="/translate")["translation"]

    def silenced(_):
        return other.predict("ninety-seven", "numbers-de", silenced=every_cross, api_name="/translate")["translation"]

    with ThreadPoolExecutor(4) as pool:
        plains = list(pool.map(plain, range(3)))
        silenceds = list(pool.map(silenced, range(3)))
    assert plains == [alone_plain] * 3
    assert silenceds == [alone_silenced["translation"]] * 3


def test_a_run_over_its_time_budget_stops_with_a_message(client, monkeypatch):
    import ui.runtime

    settings = event_values(model="numbers-de", source="three hundred and forty-two")
    monkeypatch.setattr(ui.runtime, "RUN_BUDGET_S", 0.0)
    stopped = client.predict(*settings, api_name="/run")
    assert "time budget" in stopped[STATUS]
    monkeypatch.setattr(ui.runtime, "RUN_BUDGET_S", 30.0)
    finished = client.predict(*settings, api_name="/run")  # Run again goes on from there, to the end
    assert finished[OUTPUT] == "dreihundertzweiundvierzig" and "time budget" not in finished[STATUS]


def test_a_cancelled_run_leaves_the_app_serving(client):
    """A session of its own: the cancelled run may have written none of the sentence, some or all of it, and two more
    steps write at least "drei" (the output text shows whole words: one token, "drei", may become "dreihundert")."""
    settings = event_values(model="numbers-de", source="three hundred and forty-two")
    session = Client(client.src, verbose=False)
    session.predict(*settings, api_name="/reset")
    job = session.submit(*settings, api_name="/run")
    job.cancel()
    session.predict(*settings, api_name="/step")
    stepped = session.predict(*settings, api_name="/step")
    assert stepped[OUTPUT].startswith("drei")
    assert client.predict("twenty-one", "numbers-de", api_name="/translate")["translation"] == "einundzwanzig"


def test_simultaneous_events_of_one_user_are_applied_one_at_a_time(client, registry):
    source = "three hundred and forty-two"
    alone = explorer_on(registry, source, steps=5)
    settings = event_values(model="numbers-de", source=source)
    session = Client(client.src, verbose=False)
    session.predict(*settings, api_name="/reset")
    jobs = [session.submit(*settings, api_name="/step") for _ in range(4)]  # the quick queue runs two at once
    [job.result() for job in jobs]
    assert session.predict(*settings, api_name="/step")[OUTPUT] == alone.snapshot().output_text


def test_a_session_keeps_one_copy_of_each_component_however_many_events(client):
    """Gradio 6.31 files every updated component of a session again under a new id at each event (a leak of
    about 80 KB per request); `ui.gradio_patch.Blocks` drops those copies. Without it this session would hold 100+."""
    settings = event_values(model="numbers-de", source="ninety-seven")
    session = Client(client.src, verbose=False)
    for endpoint in ["/apply", "/step", "/step", "/back", "/run", "/reset"] * 4:
        session.predict(*settings, api_name=endpoint)
    held = app.demo.state_holder.session_data[session.session_hash]
    page = app.demo.default_config.blocks
    assert set(held.blocks_config.blocks) == set(page)
    assert set(held.config_values) <= set(page)


def test_a_move_lists_the_views_and_a_change_of_settings_the_controls_too():
    """Clients find the message and the output by their place in the answer (`sent_index`): Step, Back and Run
    list the same outputs, the views only; Reset and a new sentence list them too, in the same places, and after
    them the controls a setting changes (the layer's range, the model's examples)."""
    fns = {fn.api_name: fn for fn in app.demo.fns.values() if fn.api_name in ("step", "back", "run", "reset", "apply")}
    moves, changes = [fns["step"], fns["back"], fns["run"]], [fns["reset"], fns["apply"]]
    assert all(fn.outputs == moves[0].outputs for fn in moves) and changes[0].outputs == changes[1].outputs
    ids = {block.elem_id for block in moves[0].outputs}
    assert {"status", "output-text", "attention-plot", "inside-text", "source-pieces"} <= ids
    assert not ids & {"attention-layer", "head", "inside-layer", "silenced-heads", "examples", "model-select"}
    assert changes[0].outputs[: len(moves[0].outputs)] == moves[0].outputs
    assert {"attention-layer", "examples"} <= {block.elem_id for block in changes[0].outputs}


def test_opening_a_tab_before_any_action_gives_gradio_an_answer():
    """A tab's select event remembers the open tab and draws it; with no explorer yet it must still answer (not
    an empty dict, which gradio refuses)."""
    handlers = [fn.fn for fn in app.demo.fns.values() if fn.fn and "opened" in fn.fn.__qualname__]
    assert len(handlers) == len(TABS)  # every tab
    for handler in handlers:
        assert handler(None)


def test_skipped_outputs_are_answered_as_gradio_answers_them_without_building_components():
    """`ui.gradio_patch.Blocks` leaves the outputs a handler skips out of gradio's postprocessing (which built a new
    component for each of them, at every event): the answer sent to the page is the same, output for output."""
    import asyncio

    from gradio.state_holder import SessionState

    step = next(fn for fn in app.demo.fns.values() if fn.api_name == "step")
    settings = event_values(model="numbers-de", source="ninety-seven")
    explorer = step.fn(None, *settings)[step.outputs[0]]  # the first answer draws everything
    answer = step.fn(explorer, *settings)
    assert len(answer) < len(step.outputs) / 2  # a Step draws a few of the page's outputs, and skips the rest
    built = []
    block_init = gr.blocks.Block.__init__

    def counted(self, *args, **kwargs):
        built.append(type(self).__name__)
        block_init(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gr.blocks.Block, "__init__", counted)
        ours = asyncio.run(app.demo.postprocess_data(step, answer, SessionState(app.demo)))
    assert len(built) <= len(answer)  # gradio alone built one for each of the 40-odd outputs skipped
    explorer.back()
    theirs = asyncio.run(
        gr.Blocks.postprocess_data(app.demo, step, step.fn(explorer, *settings), SessionState(app.demo))
    )
    assert len(ours) == len(theirs) == len(step.outputs)
    for mine, gradios in zip(ours[1:], theirs[1:], strict=True):  # (the explorer itself is a State: not sent)
        assert mine == gradios


def test_the_queue_of_the_page_looks_for_events_every_few_milliseconds_not_every_one(client):
    """`ui.gradio_patch.Blocks.queue` sets an attribute of Gradio's queue (written against Gradio 6.31): if Gradio
    renames it, this fails, rather than the page silently spinning again."""
    from gradio.queueing import Queue

    from ui import gradio_patch

    queue = app.demo._queue
    assert isinstance(queue, Queue) and queue.sleep_when_free == gradio_patch.QUEUE_POLL_S
    assert "sleep_when_free" in Queue.start_processing.__code__.co_names  # still the attribute its loop reads
    assert os.environ["GRADIO_ANALYTICS_CACHE_FREQUENCY"] == "1000" and queue.ANAYLTICS_CACHE_FREQUENCY == 1000


@pytest.fixture
def slow_steps(monkeypatch):
    """Every step of every explorer takes 80 ms, and is counted: a Run lasts long enough to be stopped."""
    from explorer import Explorer

    taken = []
    step = Explorer.step

    def slow(self, *args, **kwargs):
        time.sleep(0.08)
        taken.append(time.monotonic())
        return step(self, *args, **kwargs)

    monkeypatch.setattr(Explorer, "step", slow)
    return taken


RUN_SETTINGS = event_values(model="numbers-de", source="three hundred and forty-two")


def test_stop_halts_the_run_at_once_and_the_run_ends_drawing_that_step(client, slow_steps):
    """Issue 22: after Stop the server decoded on, the message said "Running…" for ever, and Back made the output
    longer. Now the Run halts before its next token, says so, and its last message draws the step it halted at."""
    session = Client(client.src, verbose=False)
    full = session.predict(*RUN_SETTINGS, api_name="/run")[OUTPUT]
    n_full = len(slow_steps)
    session.predict(*RUN_SETTINGS, api_name="/reset")
    job = session.submit(*RUN_SETTINGS, api_name="/run")
    while len(slow_steps) < n_full + 2:
        time.sleep(0.005)
    assert session.predict(api_name="/stop") == {"__type__": "update"}  # skipped: the Run draws the page itself
    stopped = job.result()
    halted_at = len(slow_steps)
    time.sleep(0.3)
    assert len(slow_steps) == halted_at  # not a step more after the Run's last message
    match = re.fullmatch(r"Stopped after (\d+) tokens: .*", stopped[STATUS])
    assert match and 2 <= int(match[1]) < n_full and full.startswith(stopped[OUTPUT])  # (its last token is </s>)
    tokens = int(match[1])
    backed = session.predict(*RUN_SETTINGS, api_name="/back")
    assert len(slow_steps) == halted_at and "Stopped" not in backed[STATUS]
    assert session.predict(api_name="/stop") == f"Nothing is running: the output has {tokens - 1} tokens."
    finished = session.predict(*RUN_SETTINGS, api_name="/run")  # Run again goes on from there, to the end
    assert finished[OUTPUT] == full and finished[STATUS] == ""


def test_stop_pressed_while_the_run_waits_in_the_queue_stops_it_before_it_starts(client, slow_steps):
    """Runs wait in their own queue (one at a time): a Stop for a waiting Run stops it before it steps."""
    first, second = Client(client.src, verbose=False), Client(client.src, verbose=False)
    for session in (first, second):
        session.predict(*RUN_SETTINGS, api_name="/reset")
    running = first.submit(*RUN_SETTINGS, api_name="/run")
    while not slow_steps:
        time.sleep(0.005)
    waiting = second.submit(*RUN_SETTINGS, api_name="/run")
    time.sleep(0.1)  # joined the queue behind the first
    second.predict(api_name="/stop")
    assert running.result()[OUTPUT] == "dreihundertzweiundvierzig"  # the other user's Run is not touched
    stopped = waiting.result()
    assert stopped[OUTPUT] == "" and stopped[STATUS].startswith("Stopped before it started, at 0 tokens: ")
    assert second.predict(*RUN_SETTINGS, api_name="/run")[OUTPUT] == "dreihundertzweiundvierzig"  # the next one runs


def test_a_run_whose_page_is_closed_stops_decoding(client, slow_steps):
    """A tab closed mid-Run: gradio notices the closed event stream and stops asking the Run for more."""
    import httpx

    run = next(fn for fn in app.demo.fns.values() if fn.api_name == "run")
    body = {
        "data": [None, *RUN_SETTINGS],
        "event_data": None,
        "fn_index": run._id,
        "trigger_id": None,
        "session_hash": "closed-tab",
    }
    with httpx.Client(base_url=client.src, timeout=10) as http:
        http.post("gradio_api/queue/join", json=body).raise_for_status()
        with http.stream("GET", "gradio_api/queue/data", params={"session_hash": "closed-tab"}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:") and json.loads(line[5:])["msg"] == "process_generating":
                    break  # the first token: the tab closes
    time.sleep(0.3)
    after_close = len(slow_steps)
    time.sleep(0.5)
    assert len(slow_steps) == after_close < 8
