"""A page in a class takes what the teacher's move changes on it without a page event (issue 38 §2 and §5):
`GET /class/view`.

A gradio event costs the server about 10 ms of CPU before it does anything (the request, the queue, the answer's
stream), and a Follow that redraws a view 18–27 ms: 60 followers of one Step were 1.6 s of one core, and the last
page showed the Step 4.9 s after the teacher took it (docs/classroom.md). Yet every follower of one move in one
language is sent the same. So a page, told by the class's stream (`ui.class_events`) that the class's version
changed, asks this route for what changed:

- The route draws it once for all the pages whose seat and view are alike (the same share-link state, so the same
  language and the same view before; the same marks of the question and the lesson's moment they show; the same
  answer to the question asked), with the page's own Follow handler (`ClassPanel.followed`), and keeps the answer
  (`PAYLOADS` of them, the newest): every other page of that move costs a lookup and the bytes sent.
- The answer is the outputs of the page's hidden Apply button, in the form gradio's own answer has them
  (`Blocks.postprocess_data`); the page's script puts its own seat in them and gives them to that button's
  browser-only event (`APPLY_JS`), and gradio's page draws them as it draws any answer.
- The page's session on the server (its explorer, and the components' settings an event checks its inputs against,
  such as a question's choices) still holds what it had: it is brought up to what the page shows just before the
  page's next event (`catch_up`, from `ui.gradio_patch.Blocks.process_api`), so a student who answers, or breaks
  away and explores, does it from there.
- Each page has a key of its own, from its session (`seen`), which its seat holds: two pages of one seat each have
  their own session caught up, and a page that only follows keeps its session alive.
- A page this process has not seen yet (after a restart; nginx keeps a page on one process), a class that ended, a
  state that cannot be read, a page with models of its own or that shows another model than the class's, a page
  that asks for more than `DRAWS` drawings at one version: the answer is `{"follow": true}`, and the page takes its
  Follow event, as before.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import json
import logging
import secrets
import threading
from typing import Any, Protocol

import anyio
import gradio as gr
import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from explorer import Explorer, ExplorerError, ExplorerState
from explorer.classroom import normal_code
from explorer.i18n import LANGUAGES, speaking

from .gradio_patch import LeanSessionState, kept_session, session_value

LOG = logging.getLogger(__name__)
PAYLOADS = 64  # the views kept drawn, newest first: a few classes' last moves
PAGES = 10_000  # the following pages this process remembers (their session, and whether it is behind)
FOLLOW = b'{"follow":true}'
DRAWS = 3  # drawings one page may cause at one version of its class (a page draws one; a reload or a race, two)

# The Apply button's browser-only event: its outputs are what the page's script fetched (`SEAT_JS`).
APPLY_JS = "() => { const outputs = window.explorerClassView || []; window.explorerClassView = null; return outputs; }"


class Bounded(collections.OrderedDict):
    """A dict that forgets its oldest entries beyond `limit`."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
        self.lock = threading.Lock()  # written by the event loop and by the handlers' threads

    def __setitem__(self, key: Any, value: Any) -> None:
        with self.lock:
            super().__setitem__(key, value)
            self.move_to_end(key)
            while len(self) > self.limit:
                self.popitem(last=False)

    def pop(self, key: Any, *default: Any) -> Any:
        with self.lock:
            return super().pop(key, *default)


class FollowedPanel(Protocol):
    """What `Follows` uses of the class panel (`ui.class_panel.ClassPanel`, which makes it)."""

    page: Any
    classroom: Any
    seat: gr.components.Component
    stream: gr.components.Component

    def followed(
        self, explorer: Explorer | None, seat: dict, drawn: bool = False, language: str | None = None
    ) -> dict: ...


def page_language(explorer: Explorer | None, language: object = None) -> str:
    """The language a page is in: its explorer's; else, where the server has none for the page (it restarted, and the
    page went on without a reload), the one its language switch shows (`language`, where the event sends it)."""
    if isinstance(explorer, Explorer):
        return explorer.state.language
    return language if isinstance(language, str) and language in LANGUAGES else "en"


def read_seat(value: object) -> dict:
    """The seat the browser sent back: a dict with at least `role` and `code`, or {} if it is not one."""
    try:
        seat = json.loads(value) if isinstance(value, str) and value and len(value) < 1000 else {}
    except ValueError:
        return {}
    return seat if isinstance(seat, dict) and seat.get("role") in ("teacher", "student") else {}


class Follows:
    """The views drawn for following pages, and the pages whose session is behind what they show."""

    def __init__(self, panel: FollowedPanel, apply: Any, follow: Any):
        self.panel, self.page, self.classroom = panel, panel.page, panel.classroom
        self.apply, self.follow = apply, follow  # the BlockFunctions of Apply (browser only) and of Follow
        self.seat_at = [i for i, block in enumerate(apply.outputs) if block in (panel.seat, panel.stream)]
        self.payloads: Bounded = Bounded(PAYLOADS)
        self.drawing: dict[tuple, asyncio.Future] = {}
        self.secret = secrets.token_bytes(32)  # a page's key, from its session (`seen`)
        self.pages: Bounded = Bounded(PAGES)  # a page's key → (class, student, the page's session)
        self.behind: Bounded = Bounded(PAGES)  # session → the class its page shows, which its session does not
        self.draws: Bounded = Bounded(PAGES)  # (class, student) → (the class's version, drawings asked for at it)

    # The pages

    def seen(self, code: str, student: str, session: str | None) -> str | None:
        """A student's page took a page event in this process (its session is then up to date): the page's key,
        which its seat holds and sends with each fetch. One key per page (per session), so that two pages of one
        seat (a second tab, a phone and a laptop) each have their own session caught up."""
        if not session:
            return None
        key = hmac.new(self.secret, session.encode(), "sha256").hexdigest()[:24]
        self.pages[key] = (code, student, session)
        self.behind.pop(session, None)
        return key

    async def view(self, code: str, student: str, page: str, seat: dict, shown: str) -> bytes:
        """The answer to the page `page` of `student` in the class `code`, which shows the state `shown`, and whose
        seat holds `seat`'s marks of what it shows of the class (`following`, `asked`, `noted`)."""
        known = self.pages.get(page)
        if known is None or known[:2] != (code, student):
            return FOLLOW
        session = known[2]
        state = kept_session(self.page.demo, session)
        explorer = session_value(state, self.page.explorer)
        if not isinstance(explorer, Explorer) or self.page.registry_of(explorer) is not self.page.registry:
            return FOLLOW  # a page with models of its own (trained, loaded) has its own drawn: its Follow event
        row = await anyio.to_thread.run_sync(self.classroom.news, code, student, seat["following"])
        if row is None or not row.view:
            return FOLLOW
        try:
            before = ExplorerState.from_link(shown)
        except ExplorerError:
            return FOLLOW
        if before.model != ExplorerState.from_link(row.view).model:
            return FOLLOW  # the page shows another model than the class: its Follow event (never a model loaded here)
        mine = self.classroom.store.choice_of(code, row.question, student) if row.question else None
        key = (code, row.version, shown, seat["following"], seat["asked"], seat["noted"], mine)
        if key not in self.payloads:
            version, drawn = self.draws.get((code, student), (None, 0))
            drawn = drawn + 1 if version == row.version else 1
            if drawn > DRAWS:  # a page that asks for more than its move: its Follow event, which `ui.admission` paces
                return FOLLOW
            self.draws[(code, student)] = (row.version, drawn)
            await self._draw(key, {"role": "student", "code": code, "student": student, **seat}, before)
        body = self.payloads.get(key, FOLLOW)
        if body is not FOLLOW:
            self.behind[session] = (code, student, seat["following"], before.language)
        return body

    async def _draw(self, key: tuple, seat: dict, before: ExplorerState) -> None:
        """Draw what the page's Follow would, once, however many pages ask for it at the same time: every page
        with the same key gets the same, but for its own seat, which the page's script fills in."""
        if key in self.drawing:
            await asyncio.shield(self.drawing[key])
            return
        self.drawing[key] = asyncio.get_running_loop().create_future()
        try:
            updates = await anyio.to_thread.run_sync(self._followed, seat, before)
            drawn = read_seat(updates.get(self.panel.seat))  # its marks; none when the class has just ended
            if not drawn:
                return
            values = await self._answer(self.apply, updates, state=None)
            body = {**{mark: drawn.get(mark) for mark in ("version", "asked", "noted")}, "outputs": values}
            self.payloads[key] = orjson.dumps(body | {"seat": self.seat_at}, option=orjson.OPT_SERIALIZE_NUMPY)
        except (ExplorerError, KeyError, TypeError, ValueError):
            pass  # the page's Follow event draws it, or says what is wrong
        finally:
            self.drawing.pop(key).set_result(None)

    def _followed(self, seat: dict, before: ExplorerState) -> dict:
        """What the page's Follow draws for a page that shows `before` (its views from the shared cache)."""
        with speaking(before.language):
            return self.panel.followed(Explorer.showing(self.page.registry, before), seat, drawn=True)

    async def _answer(self, block_fn: Any, updates: dict, state: Any) -> list:
        """The outputs of `block_fn` for `updates`, as gradio sends them (and as they leave `state`, the session's)."""
        wanted = set(block_fn.outputs)
        predictions = {block: value for block, value in updates.items() if block in wanted}
        predictions = predictions or {block_fn.outputs[0]: gr.skip()}
        state = state if state is not None else LeanSessionState(self.page.demo)
        return await self.page.demo.postprocess_data(block_fn, predictions, state)

    async def catch_up(self, block_fn: Any, state: Any, session: str) -> None:
        """Before a page's event: if its page shows what its session does not hold, bring the session to it, as
        the page's Follow would have: the explorer, and every component's settings (a question's choices, which
        gradio checks an answer against)."""
        if block_fn is self.apply or session not in self.behind:
            return
        code, student, following, language = self.behind.get(session)
        explorer = session_value(state, self.page.explorer)
        seat = {"role": "student", "code": code, "student": student, "following": following}

        def followed() -> dict:  # what changed since the session's explorer, the view the session's page had
            with speaking(page_language(explorer, language)):
                return self.panel.followed(explorer, seat, language=language)

        try:
            await self._answer(self.follow, await anyio.to_thread.run_sync(followed), state)
            self.behind.pop(session, None)
        except Exception:  # the page's own event goes on with the session as it was; the next one tries again
            LOG.exception("a page's session could not catch up with its class")


def routes(follows: Follows | None) -> list[Route]:
    """`GET /class/view?class=CODE&student=ID&asked=…&noted=…&shown=STATE`: the class's view for a following page,
    or `{"follow": true}` (then the page takes its Follow event)."""

    async def view(request: Request) -> Response:
        query = request.query_params
        code = normal_code(query.get("class"))
        body = FOLLOW
        if follows is not None and code:
            student, page, shown = query.get("student", "")[:64], query.get("page", "")[:64], query.get("shown", "")
            seat = {"following": query.get("following") == "1", "asked": query.get("asked", "")[:64]}
            body = await follows.view(code, student, page, seat | {"noted": query.get("noted", "")[:64]}, shown)
        return Response(body, media_type="application/json", headers={"cache-control": "no-store"})

    return [Route("/class/view", view, methods=["GET"])]
