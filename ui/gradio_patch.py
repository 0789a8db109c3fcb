"""A patch of Gradio's internals, written against Gradio `GRADIO_VERSION`: what the page changes in `gr.Blocks` and
its queue, and reads of the queue, that Gradio has no public way to do.

Each is checked by a test (`tests/test_gradio_patch.py`) that fails when Gradio changes under it: a new Gradio
version means reading these again against its source.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import gradio as gr
import gradio.state_holder
from gradio.blocks import Block, postprocess_update_dict
from gradio.i18n import I18nData
from gradio.state_holder import SessionState

from explorer.config import DEFAULTS, Config

from . import admission

# The version this module was written against: requirements-app.txt pins it, and a Space's SDK brings it (README.md's
# sdk_version).
GRADIO_VERSION = "6.31.0"

# Gradio's queue keeps the last 10,000 events for its monitoring page, and after *every* event it builds a pandas
# table of all of them to summarise their times: under a class that was the largest single cost of an event (16% of
# the server's time in a profile at 30 students, and growing with every event kept). The page has no use for the
# summary: it is made once every thousand events, of the last thousand. (Read when the queue is made, in `launch`.)
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "1000")

# With nothing to do, Gradio's queue looks for new events every millisecond: 30 ms of CPU a second, idle, and a wake-up
# that takes the interpreter's lock a thousand times a second under load. Every 4 ms is as good for a person (at most
# 4 ms before an event starts) and halves the idle cost: 14–16 ms a second in the classroom benchmark (`Blocks.queue`).
QUEUE_POLL_S = 0.004
I18N_PREFIX = "__i18n__"  # how gradio writes a translated label where it needs a string (`I18nData.__str__`)


def block_id(block: Block) -> int:
    """The number gradio knows `block` by (`Block._id`): its key in the page's blocks and in a session's state, a
    number that can be pickled (a ZeroGPU worker's answer names the page's components by it, `ui.runtime`)."""
    return block._id


def is_block(value: Any) -> bool:
    """Whether `value` is one of a page's blocks (a component, a layout), as gradio takes the keys of an answer."""
    return isinstance(value, Block)


def session_value(state: SessionState | None, block: Block) -> Any:
    """What the session's `state` holds for `block` (the value of a `gr.State`); None where it holds nothing yet, or
    there is no session. (A `SessionState` has no `get` that would leave it unchanged: its `[]` makes the value.)"""
    key = block_id(block)
    return state[key] if state is not None and key in state else None


def waiting(request: gr.Request | None, api_name: str) -> bool:
    """Whether the user of `request` has an event of the handler `api_name` waiting in gradio's queue, not started.
    (Gradio's queue, read as Gradio `GRADIO_VERSION` keeps it.)"""
    if request is None:  # called directly, not by gradio
        return False
    queue, session = request.app.get_blocks()._queue, request.session_hash
    return any(
        event.session_hash == session and event.fn.api_name == api_name
        for waiting_events in list(queue.event_queue_per_concurrency_id.values())
        for event in list(waiting_events.queue)
    )


class Blocks(gr.Blocks):
    """`gr.Blocks` that skips what is skipped, does not keep every replaced component of a session (a leak in
    Gradio 6.31), and whose queue does not spin (`queue`).

    A handler returns a dict of the outputs it draws; gradio fills every other output of the event with `gr.skip()`
    and then handles that as an update of the component's properties: it builds a new component for the session,
    for every skipped output, at every event. With the page's 50 outputs and the 9 a Step draws, that took 27 ms of
    each Step and of each of a Run's streamed messages. Here the skipped outputs are left out before gradio's
    postprocessing and given back to the page as the same "update nothing" answer.

    An event that updates a component (`gr.update(choices=…)`, or any `gr.update`) makes a new component for
    the session, under the original's id. Gradio then also files that new component under its *own* new id the
    next time it reads or writes it, and never removes it: each session's component table (and the config made
    from it) grows by a few entries with every event, about 80 KB of memory per request in the load test. Every
    entry that the page itself does not have is one of those copies; they are dropped after each event.
    """

    # Called with (the event's BlockFunction, the session's state, the session) before an event is processed:
    # a following page's session brought up to the view its page shows (`ui.class_follow.Follows.catch_up`).
    before_event: Callable[[Any, Any, str], Awaitable[None]] | None = None

    async def process_api(self, *args, **kwargs):
        state, session = kwargs.get("state"), kwargs.get("session_hash")
        if self.before_event is not None and state is not None and session:
            await self.before_event(kwargs.get("block_fn"), state, session)
        return await super().process_api(*args, **kwargs)

    def get_api_info(self, *args, **kwargs):
        """Gradio's description of the API, whose labels say the English text of a label the page translates
        (`ui.i18n.T`): gradio gives such a label as its key object, which a client reads as its serialised form,
        `__i18n__{"__type__": …, "key": "Model"}`."""
        info = super().get_api_info(*args, **kwargs)
        for endpoints in (info or {}).values():
            for endpoint in endpoints.values() if isinstance(endpoints, dict) else ():
                for part in (*endpoint.get("parameters", ()), *endpoint.get("returns", ())):
                    label = part.get("label")
                    if isinstance(label, I18nData):
                        part["label"] = label.key
                    elif isinstance(label, str) and label.startswith(I18N_PREFIX):
                        part["label"] = json.loads(label.removeprefix(I18N_PREFIX)).get("key", label)
        return info

    def queue(self, *args, **kwargs):
        """Gradio's queue, looking for new events every `QUEUE_POLL_S` seconds (it looks every millisecond), holding
        at most `admission.QUEUE_SIZE` events, and admitting and ordering them by who sent them (`ui.admission`)."""
        kwargs.setdefault("max_size", admission.QUEUE_SIZE)
        queued = super().queue(*args, **kwargs)
        self._queue.sleep_when_free = QUEUE_POLL_S
        if not isinstance(getattr(self._queue, "admission", None), admission.Admission):
            self._queue.admission = admission.Admission(self._queue)
            self._queue.admission.install()
            keep_sessions_bounded(self)
        return queued

    async def postprocess_data(self, block_fn, predictions, state):
        skipped, kept, drawn = _without_skipped(block_fn, predictions)
        outputs = await self._postprocess_kept(kept, drawn, state)
        for index in skipped:  # what gradio itself sends for a skipped output, without building a component
            outputs.insert(index, skipped_update(block_fn.outputs[index]))
        return outputs

    async def _postprocess_kept(self, block_fn, predictions, state):
        if not block_fn.outputs:
            return []
        outputs = await super().postprocess_data(block_fn, predictions, state)
        if state is not None:  # runs on the event loop, like the code that adds the copies
            page = self.default_config.blocks
            for key in [k for k in state.blocks_config.blocks if k not in page]:
                del state.blocks_config.blocks[key]
                state.config_values.pop(key, None)
        return outputs


SKIP = {"__type__": "update"}  # what `gr.skip()` returns: an update of nothing
_SKIPPED: dict[type, dict] = {}


def skipped_update(block: Block) -> dict:
    """What gradio sends for a skipped output of `block`: the same for every block of its class, and worked out
    once (for a gr.HTML, gradio reads the signature of its constructor each time: 2 ms of a Follow's 98 outputs)."""
    kind = type(block)
    if kind not in _SKIPPED:
        _SKIPPED[kind] = postprocess_update_dict(block, dict(SKIP))
    return copy.deepcopy(_SKIPPED[kind])


class LeanSessionState(SessionState):
    """Gradio's state of one session, without a copy of the whole page's configuration made when the session starts.

    Gradio keeps, for every session, the configuration of every component (`config_values`: 222 KB of JSON for this
    page, 430 KB of memory), for its "deep links", which this page does not offer (its share link holds the state).
    Here a component's configuration is kept only once an event changed it; `components` gives the others' from the
    page as they are. With the explorer, a session kept about 1.4 MB; the 1,000 sessions kept were 1.6–1.9 GB."""

    def __init__(self, blocks: gr.Blocks):
        self.blocks_config = copy.copy(blocks.default_config)
        self.page_blocks = blocks.blocks
        self.config_values = {}
        self.state_data = {}
        self._state_ttl = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

    @property
    def components(self):
        for key, block in self.blocks_config.blocks.items():
            if key in self.config_values:
                config = self.config_values[key]
            elif key in self.page_blocks:
                config = self.blocks_config.config_for_block(key, [], block)
            else:
                continue
            if config:
                yield config


# How long a page may go without an event before its session is forgotten (its explorer, its state): a page open in a
# lesson asks for something every few minutes at most (the Train tab every second), and a page that comes back after
# this starts afresh, as after a restart; its share link brings its view back.
# (The server's configuration sets it, `configure`.)
SESSION_IDLE_S = DEFAULTS.session_idle_s
# Answers nobody read (a page that closed, a script that never listens) are dropped after this long.
UNREAD_S = 300.0
JANITOR_EVERY_S = 60.0


def configure(config: Config) -> None:
    """Take the server's configuration (`app.py` reads it, `ui.page.build_page` hands it here): `SESSION_IDLE_S`."""
    global SESSION_IDLE_S
    SESSION_IDLE_S = config.session_idle_s


def forget_idle_sessions(blocks: gr.Blocks, now: datetime.datetime | None = None) -> int:
    """Forget the sessions idle for longer than `SESSION_IDLE_S`, and the unread answers of sessions idle for longer
    than `UNREAD_S` that wait for nothing; the number of sessions forgotten."""
    holder, queue = blocks.state_holder, blocks._queue
    now = now or datetime.datetime.now()
    waiting = {e.session_hash for e in queue.admission.pending()} if hasattr(queue, "admission") else set()
    forgotten = 0
    for session, last in list(holder.time_last_used.items()):
        idle = (now - last).total_seconds()
        if session in waiting:
            continue
        if idle > UNREAD_S and session in queue.pending_messages_per_session:
            del queue.pending_messages_per_session[session]
        if idle > SESSION_IDLE_S:
            with holder.lock:
                holder.session_data.pop(session, None)
                holder.time_last_used.pop(session, None)
            forgotten += 1
    return forgotten


def kept_session(blocks: gr.Blocks, session: str) -> SessionState | None:
    """The session `session`'s state, kept alive as an event of its page would keep it (`ui.class_follow`: a page
    that only follows its class takes no event); None if it was forgotten. (Gradio's `StateHolder.__getitem__`
    would make a new one.)"""
    holder = blocks.state_holder
    if session not in holder:
        return None
    holder.time_last_used[session] = datetime.datetime.now()
    holder.update(session)
    return holder.session_data.get(session)


def keep_sessions_bounded(blocks: gr.Blocks) -> None:
    """Run `forget_idle_sessions` every `JANITOR_EVERY_S` seconds, in a thread of its own, for the app's life."""

    def janitor() -> None:
        while True:
            time.sleep(JANITOR_EVERY_S)
            with contextlib.suppress(Exception):  # a janitor never takes the app down
                forget_idle_sessions(blocks)

    threading.Thread(target=janitor, daemon=True, name="explorer-session-janitor").start()


gradio.state_holder.SessionState = LeanSessionState  # what gradio's StateHolder makes for a new session


def _without_skipped(block_fn: Any, predictions: Any) -> tuple[list[int], Any, Any]:
    """The indices of the outputs a handler's answer skips (left out, or `gr.skip()`), and the event and the answer
    without them; the event and answer as they are when there is nothing to leave out (a single output, a list)."""
    if not isinstance(predictions, dict) or not predictions or not all(isinstance(k, Block) for k in predictions):
        return [], block_fn, predictions
    drawn = {block_id(block): value for block, value in predictions.items()}
    if set(drawn) - {block_id(block) for block in block_fn.outputs}:
        return [], block_fn, predictions  # not one of the event's outputs: gradio says so
    skipped = [i for i, block in enumerate(block_fn.outputs) if drawn.get(block_id(block), SKIP) == SKIP]
    if not skipped:
        return [], block_fn, predictions
    kept = copy.copy(block_fn)
    kept.outputs = [block for i, block in enumerate(block_fn.outputs) if i not in set(skipped)]
    values = [drawn[block_id(block)] for block in kept.outputs]
    return skipped, kept, values[0] if len(values) == 1 else values  # gradio takes one output's answer as it is
