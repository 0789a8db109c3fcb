"""`ui.gradio_patch` reads and changes Gradio internals: these tests fail when Gradio changes under it.

Each checks that what the patch relies on is still there, as it was in the version it was written against. When
one fails after an upgrade, read `ui/gradio_patch.py` again against the new Gradio's source, and update
`GRADIO_VERSION` with it.
"""

from __future__ import annotations

import inspect

import gradio as gr
import gradio.blocks
from gradio.queueing import Event, Queue
from gradio.state_holder import SessionState

from ui import gradio_patch


def test_the_patch_was_written_against_the_installed_gradio():
    assert gr.__version__ == gradio_patch.GRADIO_VERSION, "read ui/gradio_patch.py again against this Gradio"


def test_blocks_still_postprocess_an_events_answer_where_the_patch_hooks_in():
    parameters = list(inspect.signature(gr.Blocks.postprocess_data).parameters)
    assert parameters == ["self", "block_fn", "predictions", "state"]
    assert inspect.iscoroutinefunction(gr.Blocks.postprocess_data)
    assert callable(gradio.blocks.postprocess_update_dict)
    assert gr.skip() == gradio_patch.SKIP  # what a skipped output is


def test_a_sessions_state_still_keeps_its_components_where_the_patch_prunes_them():
    with gr.Blocks() as demo:
        gr.Textbox()
    state = SessionState(demo)
    assert isinstance(state.blocks_config.blocks, dict) and isinstance(state.config_values, dict)
    assert set(demo.default_config.blocks) >= set(state.blocks_config.blocks)


def test_the_queue_still_has_what_the_patch_sets_and_reads():
    assert "sleep_when_free" in Queue.start_processing.__code__.co_names  # the pause its loop reads
    assert "event_queue_per_concurrency_id" in Queue.__init__.__code__.co_names  # the waiting events (`waiting`)
    assert {"session_hash", "fn"} <= set(inspect.signature(Event.__init__).parameters)


def test_an_answer_that_draws_one_output_of_several_is_that_outputs_value():
    """Found by the Train tab's Pause: an answer drawing one of an event's outputs reached gradio as a one-item
    list, which gradio took as that output's value (a button labelled with the update's text)."""
    import asyncio

    with gradio_patch.Blocks() as demo:
        first, second = gr.Button("first"), gr.Button("second")
        first.click(lambda: {second: gr.update(interactive=False)}, None, [first, second], api_name="disable")
    block_fn = next(fn for fn in demo.fns.values() if fn.api_name == "disable")
    answer = {second: gr.update(interactive=False)}
    outputs = asyncio.run(demo.postprocess_data(block_fn, answer, SessionState(demo)))
    assert outputs[0] == gradio_patch.SKIP
    assert outputs[1]["interactive"] is False and "value" not in outputs[1]


def test_the_api_description_gives_translated_labels_in_english():
    """A label marked for translation (`ui.i18n.T`) is written by gradio as its serialised key in the API's
    description; the page's Blocks give its English text."""
    from ui.i18n import T

    with gradio_patch.Blocks() as demo:
        box = gr.Textbox(label=T("Source sentence"))
        plain = gr.Textbox(label="Plain")
        box.submit(lambda text: text, box, plain, api_name="echo")
    endpoint = demo.get_api_info()["named_endpoints"]["/echo"]
    assert [p["label"] for p in endpoint["parameters"]] == ["Source sentence"]
    assert [r["label"] for r in endpoint["returns"]] == ["Plain"]


def test_gradios_own_session_state_still_builds_what_the_lean_one_leaves_out():
    """`LeanSessionState` copies gradio's `SessionState.__init__` less its `config_values`: its attributes must be
    what gradio's has, and its components what gradio's gives (issue 36 §2)."""
    from gradio import state_holder

    with gr.Blocks() as demo:
        box = gr.Textbox("first")
        gr.Number(3)
    own = state_holder.SessionState(demo)
    assert isinstance(own, gradio_patch.LeanSessionState)  # what gradio's StateHolder makes now
    theirs = object.__new__(SessionState)
    SessionState.__init__(theirs, demo)
    assert set(vars(theirs)) <= set(vars(own))
    assert list(own.components) == list(theirs.components)
    with demo:
        changed = gr.Textbox("changed")
    own[box._id] = theirs[box._id] = changed
    own._update_value_in_config(box._id, "typed")
    theirs._update_value_in_config(box._id, "typed")
    assert list(own.components) == list(theirs.components)
    assert own.config_values.keys() == {box._id}  # only what changed is kept


def test_idle_sessions_are_forgotten_and_unread_answers_dropped():
    import datetime
    from types import SimpleNamespace

    from gradio.state_holder import StateHolder

    with gr.Blocks() as demo:
        gr.Textbox()
    holder = StateHolder()
    holder.set_blocks(demo)
    for session in ("active", "idle", "quiet"):
        holder[session]  # a session is made when it is first asked for
    now = datetime.datetime.now()
    holder.time_last_used["idle"] = now - datetime.timedelta(seconds=gradio_patch.SESSION_IDLE_S + 1)
    holder.time_last_used["quiet"] = now - datetime.timedelta(seconds=gradio_patch.UNREAD_S + 1)
    unread = {"quiet": ["an answer"], "active": ["an answer"]}
    demo._queue = SimpleNamespace(pending_messages_per_session=unread)
    try:
        assert gradio_patch.forget_idle_sessions(demo, now) == 1
    finally:
        del demo._queue
    assert set(holder.session_data) == {"active", "quiet"}
    assert set(unread) == {"active"}


def test_a_skipped_output_is_what_gradio_itself_sends_for_it_worked_out_once_per_kind():
    for block in (gr.HTML("x"), gr.Textbox("y"), gr.Button("z")):
        sent = gradio.blocks.postprocess_update_dict(block, {"__type__": "update"})
        assert gradio_patch.skipped_update(block) == sent
        gradio_patch.skipped_update(block)["mutated"] = True  # each answer gets its own copy
        assert gradio_patch.skipped_update(block) == sent


def test_process_api_takes_its_arguments_by_keyword_where_the_patch_reads_them():
    """`Blocks.process_api` reads the session from gradio's call by keyword (`before_event`)."""
    from gradio import route_utils

    source = inspect.getsource(route_utils.call_process_api)
    assert "state=session_state" in source and "session_hash=session_hash" in source and "block_fn=fn" in source


def test_a_following_pages_session_is_kept_alive_without_making_one():
    """`kept_session` (a page that only follows takes no event) marks the session used, as an event would, and
    makes none for a session gradio has forgotten."""
    import datetime

    from gradio.state_holder import StateHolder

    with gr.Blocks() as demo:
        gr.Textbox()
    holder = StateHolder()
    holder.set_blocks(demo)
    state = holder["following"]
    holder["newer"]
    long_ago = datetime.datetime.now() - datetime.timedelta(seconds=gradio_patch.SESSION_IDLE_S + 1)
    holder.time_last_used["following"] = long_ago
    assert gradio_patch.kept_session(demo, "following") is state
    assert holder.time_last_used["following"] > long_ago
    assert list(holder.session_data) == ["newer", "following"]  # the most recently used, as gradio orders them
    assert gradio_patch.kept_session(demo, "forgotten") is None and "forgotten" not in holder


def test_a_blocks_id_is_its_key_in_the_page_and_in_a_sessions_state():
    """`block_id`, `is_block` and `session_value` (`ui.runtime`: a ZeroGPU worker's answer, pickled, names the page's
    components by id; `ui.class_follow`: a following page's explorer, read from its session's state)."""
    import pickle

    with gr.Blocks() as demo:
        box, held = gr.Textbox(), gr.State("first")
    assert demo.blocks[gradio_patch.block_id(box)] is box and demo.blocks[gradio_patch.block_id(held)] is held
    assert pickle.loads(pickle.dumps(gradio_patch.block_id(box))) == box._id
    assert gradio_patch.is_block(box) and gradio_patch.is_block(held) and not gradio_patch.is_block("box")
    state = SessionState(demo)
    assert gradio_patch.session_value(state, held) is None and not state.state_data  # nothing made by asking
    state[gradio_patch.block_id(held)] = "changed"
    assert gradio_patch.session_value(state, held) == "changed"
    assert gradio_patch.session_value(None, held) is None
