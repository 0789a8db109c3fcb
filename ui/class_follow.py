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
- A page this process has not seen yet (after a restart; nginx keeps a page on one process), a class that ended, a
  state that cannot be read: the answer is `{"follow": true}`, and the page takes its Follow event, as before.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
from typing import TYPE_CHECKING, Any

import anyio
import gradio as gr
import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from explorer import Explorer, ExplorerError, ExplorerState
from explorer.classroom import normal_code
from explorer.i18n import speaking

if TYPE_CHECKING:
    from .class_panel import ClassPanel

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

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


class Follows:
    """The views drawn for following pages, and the pages whose session is behind what they show."""

    def __init__(self, panel: ClassPanel, apply: Any, follow: Any):
        self.panel, self.page, self.classroom = panel, panel.page, panel.classroom
        self.apply, self.follow = apply, follow  # the BlockFunctions of Apply (browser only) and of Follow
        self.seat_at = [i for i, block in enumerate(apply.outputs) if block in (panel.seat, panel.stream)]
        self.payloads: Bounded = Bounded(PAYLOADS)
        self.drawing: dict[tuple, asyncio.Future] = {}
        self.sessions: Bounded = Bounded(PAGES)  # (class, student) → the page's session
        self.behind: Bounded = Bounded(PAGES)  # session → the class its page shows, which its session does not
        self.draws: Bounded = Bounded(PAGES)  # (class, student) → (the class's version, drawings asked for at it)

    # The pages

    def seen(self, code: str, student: str, session: str | None) -> None:
        """A student's page took a page event in this process (its session is then up to date)."""
        if session:
            self.sessions[(code, student)] = session
            self.behind.pop(session, None)

    async def view(self, code: str, student: str, seat: dict, shown: str) -> bytes:
        """The answer to a page of the class that shows the state `shown`, whose seat holds `seat`'s marks of what
        it shows of the class (`following`, `asked`, `noted`)."""
        session = self.sessions.get((code, student))
        row = self.classroom.news(code, student, seat["following"]) if session else None
        if row is None:
            return FOLLOW
        try:
            before = ExplorerState.from_link(shown)
        except ExplorerError:
            return FOLLOW
        mine = self.classroom.store.choice_of(code, row.question, student) if row.question else None
        key = (code, row.version, shown, seat["following"], seat["asked"], seat["noted"], mine)
        if key not in self.payloads:
            version, drawn = self.draws.get((code, student), (None, 0))
            drawn = drawn + 1 if version == row.version else 1
            if drawn > DRAWS:  # a page that asks for more than its move: its Follow event, which `ui.admission` paces
                return FOLLOW
            self.draws[(code, student)] = (row.version, drawn)
            await self._draw(key, {"role": "student", "code": code, "student": student, **seat}, before)
        self.behind[session] = (code, student, seat["following"])
        return self.payloads.get(key, FOLLOW)

    async def _draw(self, key: tuple, seat: dict, before: ExplorerState) -> None:
        """Draw what the page's Follow would, once, however many pages ask for it at the same time: every page
        with the same key gets the same, but for its own seat, which the page's script fills in."""
        if key in self.drawing:
            await asyncio.shield(self.drawing[key])
            return
        self.drawing[key] = asyncio.get_running_loop().create_future()
        try:
            updates = await anyio.to_thread.run_sync(self._followed, seat, before)
            drawn = json.loads(updates[self.panel.seat])
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
        from .gradio_patch import LeanSessionState

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
        code, student, following = self.behind.pop(session)
        key = self.page.explorer._id
        explorer = state[key] if key in state else None  # noqa: SIM401 (a SessionState has no `get`)
        seat = {"role": "student", "code": code, "student": student, "following": following}

        def followed() -> dict:  # what changed since the session's explorer, the view the session's page had
            with speaking(explorer.state.language if isinstance(explorer, Explorer) else "en"):
                return self.panel.followed(explorer, seat)

        # (if the view cannot be shown, the event goes on with the session as it was)
        with contextlib.suppress(ExplorerError):
            await self._answer(self.follow, await anyio.to_thread.run_sync(followed), state)


def routes(follows: Follows | None) -> list[Route]:
    """`GET /class/view?class=CODE&student=ID&asked=…&noted=…&shown=STATE`: the class's view for a following page,
    or `{"follow": true}` (then the page takes its Follow event)."""

    async def view(request: Request) -> Response:
        query = request.query_params
        code = normal_code(query.get("class"))
        body = FOLLOW
        if follows is not None and code:
            student, shown = query.get("student", "")[:64], query.get("shown", "")[:4096]
            seat = {"following": query.get("following") == "1", "asked": query.get("asked", "")[:64]}
            body = await follows.view(code, student, seat | {"noted": query.get("noted", "")[:64]}, shown)
        return Response(body, media_type="application/json", headers={"cache-control": "no-store"})

    return [Route("/class/view", view, methods=["GET"])]
