"""A class on the page (issue 38): the teacher starts one, the students join it and follow the teacher's view.

- **Teach a class** starts a class showing the teacher's view, and puts its join code and the QR code of its join
  link on the page, for the projector, with the counts of students connected and following.
- A student joins with the link (`?class=CODE`) or by typing the code, and from then on their page follows the
  teacher: each time the teacher's view changes, the page shows it, in the student's own language. **Explore on
  my own** breaks away (everything works as it does alone); **Back to the teacher** snaps to where the teacher is.
- The teacher's link (`?class=CODE&teacher=SECRET`) drives the class, and reopens it from any browser.

Who is in which class lives in the browser (`seat`, a hidden text box holding the page's seat as JSON) and in the
store (`explorer.classroom`), never only in the server's memory: after a restart, every page goes on where it was.
The browser's side is `SEAT_JS`: a student's page listens to the class's stream (`ui.class_events`) and asks for the
teacher's view when its version changes; the teacher's page sends its view (the share link's state, always
current) to `/class/show` after every action, and keeps its secret out of the address bar.
"""

from __future__ import annotations

import html
import json
import secrets
import zlib
from collections.abc import Callable
from typing import Any

import gradio as gr
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from explorer import Explorer, ExplorerError, ExplorerState
from explorer.class_store import ClassRow
from explorer.classroom import Classroom, ClassroomError, Teacher, join_link, normal_code, qr_svg
from explorer.i18n import N_, _, speaking
from explorer.questions import revealed
from explorer.registry import ModelRegistry

from . import scripts
from .class_follow import APPLY_JS, Follows, page_language, read_seat
from .class_questions import Questions
from .i18n import T, with_browser_words
from .panel import PageAccess, Panel, Updates, escaped
from .runtime import APART, QUICK, uses_gpu
from .settings import control_values

COUNTS_S = 0.5  # how often the teacher's page redraws its counts and the tally
# As the page opens, after its view is restored: an address with a class in it (`class_query`) joins the class
# (`ClassPanel.by_link`, which checks the code).
BY_LINK_JS = scripts.click_when('new URLSearchParams(location.search).get("class")', "class-by-link")

CLASS_INTRO = N_(
    "**Teach a class**: the students open the link or type the code, and their pages follow yours, each in its own "
    "language. Or **join** the class your teacher started."
)

# The page's seat (JSON in `ClassPanel.seat`) as the browser acts on it. A student's page listens to its class's
# stream and, when the class has a version its page does not show, fetches what it changes (`ui.class_follow`) or
# clicks the hidden Follow button; the teacher's page sends the share link's state to /class/show whenever the link
# changes, and keeps the secret in the tab's sessionStorage instead of the address bar (a projector shows the address
# bar). `__WORDS__`: none yet.
SEAT_JS = """
const state = { stream: null, code: "", observer: null, sent: "", teaching: "", asking: false };
const seatOf = () => { try { return JSON.parse(props.value || "{}"); } catch (error) { return {}; } };
const follow = () => document.getElementById("class-follow")?.click();
// The page asks for what the class's new version changes on it (`ui.class_follow`): drawn once for every page that
// shows what this one shows, and given to the hidden Apply button's browser-only event; else its Follow event.
const fetched = async (seat) => {
    const shown = token();
    if (!shown || !seat.page) return false;
    const query = new URLSearchParams({ class: seat.code, student: seat.student, page: seat.page, shown,
                                        following: seat.following ? 1 : 0, asked: seat.asked || "",
                                        noted: seat.noted || "" });
    try {
        const reply = await fetch(`class/view?${query}`, { cache: "no-store", signal: AbortSignal.timeout(5000) });
        const answer = reply.ok ? await reply.json() : { follow: true };
        const now = seatOf();
        const same = now.code === seat.code && now.student === seat.student && !now.following === !seat.following;
        // drawn from what the page showed when it asked: if the page changed meanwhile, its Follow event draws it
        if (answer.follow || !same || token() !== shown) return false;
        if (typeof now.version === "number" && answer.version <= now.version) return true;  // it shows that already
        const outputs = answer.outputs.slice();
        const next = JSON.stringify({ ...now, version: answer.version, asked: answer.asked, noted: answer.noted });
        for (const i of answer.seat) outputs[i] = next;
        window.explorerClassView = outputs;
        document.getElementById("class-apply")?.click();
        return true;
    } catch (error) { return false; }
};
const catchUp = async () => {
    const seat = seatOf();
    if (state.asking || seat.role !== "student" || state.latest === undefined || state.latest === seat.version) return;
    state.asking = true;
    const done = await fetched(seat);
    state.asking = false;
    if (!done) follow();  // the server knows whether the page follows, and what else changed
};
const listen = (seat) => {
    if (state.stream && state.code === seat.code + seat.student) return;
    state.stream?.close();
    state.code = seat.code + seat.student;
    const query = new URLSearchParams({ class: seat.code, student: seat.student });
    state.stream = new EventSource(`class/events?${query}`);
    state.stream.addEventListener("version", (event) => {
        state.latest = JSON.parse(event.data).version;
        catchUp();
    });
    state.stream.addEventListener("ended", () => { state.stream.close(); follow(); });
};
const token = () => {
    const link = document.querySelector("#share-link a");
    return link ? new URL(link.getAttribute("href"), location.href).searchParams.get("state") : "";
};
const send = (seat) => {
    const now = token();
    if (!now || now === state.sent) return;
    state.sent = now;
    fetch("class/show", { method: "POST", headers: { "content-type": "application/json" },
                          body: JSON.stringify({ class: seat.code, secret: seat.secret, state: now }) });
};
// The address says which class the page is in (never the teacher's secret), so that a reload or a restarted server
// opens the page in it again: the teacher's as ?class=CODE&teach=1 (its tab keeps the secret), a student's as
// ?class=CODE&seat=ID, a page out of any class without them.
const address = (seat) => {
    const url = new URL(location.href);
    for (const name of ["class", "teacher", "teach", "seat"]) url.searchParams.delete(name);
    if (seat.role) url.searchParams.set("class", seat.code);
    if (seat.role === "teacher") url.searchParams.set("teach", "1");
    if (seat.role === "student") url.searchParams.set("seat", seat.student);
    if (url.href !== location.href) history.replaceState(null, "", url);
};
const teach = (seat) => {
    sessionStorage.setItem("class-teacher", JSON.stringify({ code: seat.code, secret: seat.secret }));
    if (!state.observer) {
        const target = document.getElementById("share-link");
        state.observer = new MutationObserver(() => { const now = seatOf(); if (now.role === "teacher") send(now); });
        if (target) state.observer.observe(target, { childList: true, subtree: true, characterData: true });
    }
    if (state.teaching !== seat.code) {  // the class already shows this page's view: send only what changes next
        state.teaching = seat.code;
        state.sent = token();
    }
    send(seat);
};
watch("value", () => {
    const seat = seatOf();
    address(seat);
    if (seat.role === "student") {
        listen(seat);
        // a version that came while the page was asking for the one before: ask again
        if (state.latest !== undefined && state.latest !== seat.version) setTimeout(catchUp, 0);
    }
    else { state.stream?.close(); state.stream = null; state.code = ""; }
    if (seat.role === "teacher") teach(seat);
    else sessionStorage.removeItem("class-teacher");
});
// The teacher's page opened again (a reload, a restarted server): its tab still holds the class's secret.
const kept = JSON.parse(sessionStorage.getItem("class-teacher") || "null");
const asked = new URLSearchParams(location.search);
if (kept && asked.get("class") === kept.code && !asked.get("teacher")) {
    let tries = 0;
    const reclaim = () => {
        const box = document.querySelector("#class-reopen textarea, #class-reopen input");
        const button = document.getElementById("class-reopen-button");
        // after the page's first view (its load draws the share link), which would otherwise replace the class's
        if (!box || !button || !token()) { if (++tries < 300) setTimeout(reclaim, 100); return; }
        box.value = JSON.stringify(kept);
        box.dispatchEvent(new Event("input", { bubbles: true }));
        setTimeout(() => button.click(), 50);
    };
    reclaim();
}
"""


# The teacher's link, on the clipboard (as Copy link copies a view's link), from the tab's sessionStorage.
TEACHER_ADDRESS = """const kept = JSON.parse(sessionStorage.getItem("class-teacher") || "null");
        if (!kept) return null;
        const link = new URL(location.pathname, location.href);
        link.search = new URLSearchParams({ class: kept.code, teacher: kept.secret }).toString();
        return link.href;"""
COPY_TEACHER_WORDS = {
    "copy": N_("Copy the teacher link"),
    "copied": N_("Teacher link copied: keep it to yourself"),
    "none": N_("No class yet"),
    "by_hand": N_("Copy the link by hand"),
}


def copy_teacher_js() -> str:
    return with_browser_words(scripts.copy_js("class-copy", TEACHER_ADDRESS), COPY_TEACHER_WORDS)


def seat_json(role: str = "", code: str = "", **fields: Any) -> str:
    """A page's seat as the browser keeps it ("" for none)."""
    return json.dumps({"role": role, "code": code, **fields}) if role else ""


def address_of(request: gr.Request | None) -> str:
    """The sender's address, for the teacher secret's guess limit."""
    client = getattr(request, "client", None)
    return getattr(client, "host", "") or ""


def page_address(request: gr.Request | None) -> str:
    """The address of the page that sent `request` (its Referer; else its host), for the join link."""
    headers = getattr(request, "headers", None) or {}
    referer = headers.get("referer", "")
    if referer.startswith(("http://", "https://")):
        return referer
    return f"http://{headers.get('host', 'localhost:7860')}/"


class ClassPanel(Panel):
    """Made in the header, under the share link (`ui.presentation.Header`)."""

    def __init__(self, page: PageAccess, opened_with: gr.State):
        super().__init__(page)
        self.classroom: Classroom = page.classroom
        self.opened_with = opened_with  # what the page's address holds (`ui.share.SharePanel.address`)
        # The class's bar and questions: shown only in a class (then in the presentation layout too)
        with gr.Column(elem_id="class-area", visible=False) as self.area:
            with gr.Row(elem_id="class-bar"):
                self.banner = gr.HTML("", elem_id="class-banner")
                self.leave = gr.Button(
                    T("Explore on my own"), elem_id="class-leave", size="sm", scale=0, min_width=160, visible=False
                )
                self.back = gr.Button(
                    T("Back to the teacher"), elem_id="class-back", size="sm", scale=0, min_width=160, visible=False
                )
            self.questions = Questions(self.classroom)
        self.seat = gr.Textbox("", visible="hidden", elem_id="class-seat")
        self.stream = gr.HTML("", html_template="", js_on_load=SEAT_JS, visible="hidden", elem_id="class-stream")
        self.follow = gr.Button(visible="hidden", elem_id="class-follow")
        self.by_link_button = gr.Button(visible="hidden", elem_id="class-by-link")  # `on_opened`
        self.apply = gr.Button(visible="hidden", elem_id="class-apply")  # a view fetched by the page (`class_follow`)
        self.follows: Follows | None = None
        self.reopen_box = gr.Textbox("", visible="hidden", elem_id="class-reopen")
        self.reopen_button = gr.Button(visible="hidden", elem_id="class-reopen-button")
        self.timer = gr.Timer(COUNTS_S, active=False)
        # The lesson's part (`ui.lesson_panel`, made after this panel): the class's moment on its pages
        self.noted: Callable[[ClassRow | None, dict], Updates] = lambda row, seat: {}
        self.lesson_outputs: list = []

    def make_box(self, row: gr.Row) -> None:
        """Teach a class, or join one: a button in `row` (the share link's) that unfolds the box, which is made
        here, under it. Folded, the box takes no room: the first screen still holds a whole step."""
        with row:
            toggle = gr.Button(T("Teach or join a class"), elem_id="class-toggle", size="sm", scale=0, min_width=170)
        toggle.click(None, None, None, js=scripts.toggle_js("class-box"), api_visibility="private")
        with gr.Column(elem_id="class-box", elem_classes="folded"):
            gr.Markdown(T(CLASS_INTRO), elem_classes="caption")
            small = {"size": "sm", "scale": 0, "min_width": 100}
            self.teach = gr.Button(T("Teach a class"), elem_id="class-teach", variant="primary", **small)
            with gr.Row(elem_id="class-join-row"):
                self.code = gr.Textbox(
                    show_label=False,
                    placeholder=T("Class code"),
                    max_lines=1,
                    max_length=16,
                    elem_id="class-code",
                    scale=1,
                    min_width=100,
                    container=False,
                )
                self.join = gr.Button(T("Join"), elem_id="class-join", **small)
            self.copy = gr.Button(T("Copy the teacher link"), elem_id="class-copy", visible=False, **small)
            self.end = gr.Button(T("Leave the class"), elem_id="class-end", visible=False, **small)

    @property
    def mine(self) -> list:
        """Everything this panel's events may redraw."""
        mine = [self.area, self.banner, self.leave, self.back, self.teach, self.code, self.join, self.copy, self.end]
        mine += [self.seat, self.stream, self.timer]
        return [*mine, *self.questions.teacher_outputs, *self.questions.student_outputs, *self.lesson_outputs]

    # What the page shows

    def banner_html(self, seat: dict, request: gr.Request | None = None) -> str:
        """The banner of a page in a class: for the teacher, the code, the QR code and the counts; for a student,
        whether the page follows the teacher."""
        if not seat:
            return ""
        code = html.escape(seat["code"])
        if seat["role"] == "teacher":
            link = join_link(page_address(request), seat["code"]) if request is not None else seat.get("link", "")
            connected, following = self.classroom.counts(seat["code"])
            counts = _("{connected} connected · {following} following").format(connected=connected, following=following)
            join_at, label = html.escape(_("Join at")), html.escape(_("Class code"))
            return (
                f'<div class="class-teacher"><img class="class-qr" src="{qr_svg(link)}" alt="{html.escape(link)}">'
                f'<div><div class="class-code-label">{join_at} {html.escape(link)}</div>'
                f'<div class="class-code" aria-label="{label}">{code}</div>'
                f'<div class="class-counts" role="status">{html.escape(counts)}</div></div></div>'
            )
        said = (
            _("Class {code}: your page follows the teacher.")
            if seat.get("following")
            else _("Class {code}: you are exploring on your own.")
        )
        return f'<div class="class-student" role="status">{html.escape(said.format(code=seat["code"]))}</div>'

    def shown(self, seat: dict, request: gr.Request | None = None, drawn: bool = False) -> Updates:
        """Everything of this panel for `seat` (none: out of any class); `drawn`: the page shows this seat already,
        and only the seat itself changed (its version)."""
        if drawn and seat:
            kept = seat_json(**{k: v for k, v in seat.items() if k != "link"})
            return {self.seat: seat_json(**seat), self.stream: kept}
        student = seat.get("role") == "student"
        teacher = seat.get("role") == "teacher"
        following = student and bool(seat.get("following"))
        return {
            self.area: gr.update(visible=bool(seat)),
            self.seat: seat_json(**seat) if seat else "",
            self.stream: seat_json(**{k: v for k, v in seat.items() if k != "link"}) if seat else "",
            self.banner: self.banner_html(seat, request),
            self.leave: gr.update(visible=following),  # (updates, not components: a component costs 1–2 ms)
            self.back: gr.update(visible=student and not following),
            self.teach: gr.update(visible=not seat),
            self.code: gr.update(visible=not seat),
            self.join: gr.update(visible=not seat),
            self.copy: gr.update(visible=teacher),
            self.end: gr.update(visible=bool(seat), value=_("End the class") if teacher else _("Leave the class")),
            self.timer: gr.update(active=teacher),
            self.questions.ask_row: gr.update(visible=teacher),
            **({} if teacher else {self.questions.tally: ""}),
            **({} if student else {self.questions.box: gr.update(visible=False)}),
        }

    def failed(self, error: ExplorerError) -> Updates:
        return {self.page.status: escaped(str(error))}

    # The teacher

    def started(self, explorer: Explorer | None, request: gr.Request) -> Updates:
        """Teach a class: start one showing the page's view."""
        language = page_language(explorer)
        with speaking(language):
            try:
                teacher = self.classroom.start(explorer.state if isinstance(explorer, Explorer) else None)
            except ClassroomError as error:
                return self.failed(error)
            seat = {"role": "teacher", "code": teacher.code, "secret": teacher.secret}
            seat["link"] = join_link(page_address(request), teacher.code)
            said = _("Class {code} started. Keep your teacher link: it drives the class from any browser.")
            return self.shown(seat, request) | {self.page.status: said.format(code=teacher.code)}

    def reclaimed(self, explorer: Explorer | None, kept: str, request: gr.Request) -> Updates:
        """The teacher's page opened again (a reload, another browser): the class its link or its tab holds."""
        language = page_language(explorer)
        with speaking(language):
            seat = read_seat(json.dumps({"role": "teacher", **json.loads(kept)}) if kept.startswith("{") else "")
            return self.as_teacher(explorer, seat.get("code"), seat.get("secret"), request)

    def as_teacher(
        self, explorer: Explorer | None, code: object, secret: object, request: gr.Request | None
    ) -> Updates:
        """The teacher's page, opened with the teacher's link or again in its tab: where the class stands."""
        try:
            row = self.classroom.teacher(code, secret, address_of(request))
        except ClassroomError as error:
            return self.failed(error)
        seat = {"role": "teacher", "code": row.code, "secret": secret}
        seat["link"] = join_link(page_address(request), row.code)
        own = explorer.state if isinstance(explorer, Explorer) else ExplorerState()
        view = self.classroom.view(row, own)
        shown = self.showing(explorer, view) if view is not None else {}
        return shown | self.shown(seat, request) | self.noted(row, seat)

    def counted(self, explorer: Explorer | None, seat_value: str, request: gr.Request) -> Updates:
        """The teacher's counts, redrawn every `COUNTS_S`, in the teacher's language."""
        seat = read_seat(seat_value)
        row = self.classroom.store.find(seat.get("code", "")) if seat.get("role") == "teacher" else None
        if row is None:
            return {self.timer: gr.update(active=False)}
        with speaking(page_language(explorer)):
            return {self.banner: self.banner_html(seat, request)} | self.questions.teacher_view(row)

    def ask_handler(self, explorer: Explorer | None, seat_value: str, kind: str, request: gr.Request) -> Updates:
        """Ask the class: a question about the teacher's step."""
        seat = read_seat(seat_value)
        with speaking(page_language(explorer)):
            try:
                row = self.classroom.teacher(seat.get("code"), seat.get("secret"), address_of(request))
                if not isinstance(explorer, Explorer):
                    raise ExplorerError(_("type a sentence to translate"))
                return self.questions.asked(explorer, row.code, kind) | {self.page.status: ""}
            except ExplorerError as error:
                return self.failed(error)

    def reveal_handler(self, explorer: Explorer | None, seat_value: str, request: gr.Request) -> Updates:
        """Reveal: the answer on the projector, and the view that proves it on the teacher's page (so on the
        class's)."""
        seat = read_seat(seat_value)
        with speaking(page_language(explorer)):
            try:
                row = self.classroom.teacher(seat.get("code"), seat.get("secret"), address_of(request))
                question = self.questions.revealing(row)
                shown = self.showing(explorer, revealed(explorer.state, question)) if explorer else {}
                return shown | self.questions.teacher_view(self.classroom.store.find(row.code))
            except ExplorerError as error:
                return self.failed(error)

    def answer_handler(self, explorer: Explorer | None, seat_value: str, choice: str) -> Updates:
        seat = read_seat(seat_value)
        with speaking(page_language(explorer)):
            if seat.get("role") != "student":
                said = _("There is no question to answer.")
            else:
                row = self.classroom.news(seat["code"], seat["student"], seat.get("following", False))
                said = self.questions.answered(row, seat["student"], choice)
            return {self.page.status: said, self.questions.said: said}  # where the student looks, and aloud

    # The students

    def joined(self, explorer: Explorer | None, code: str, request: gr.Request | None = None) -> Updates:
        """Join the class of the typed code: the page shows the teacher's view from now on."""
        language = page_language(explorer)
        with speaking(language):
            student = secrets.token_urlsafe(12)
            try:
                row = self.classroom.join(code, student)
            except ClassroomError as error:
                return self.failed(error)
            seat = {"role": "student", "code": row.code, "student": student, "following": True, "version": 0}
            said = _("You joined class {code}. Your page follows the teacher.").format(code=row.code)
            return self.followed(explorer, seat, request=request) | {self.page.status: said}

    def followed(
        self,
        explorer: Explorer | None,
        seat: dict,
        drawn: bool = False,
        request: gr.Request | None = None,
        language: str | None = None,
    ) -> Updates:
        """A following student's page after the teacher moved: the teacher's view, if it is not shown yet, the
        class's question and the lesson's note. `drawn`: the page shows `seat` already (its own Follow), so what it
        shows of the class is drawn again only where it changed (the seat marks what was drawn: `asked`, `noted`).
        `language`: the page's (`page_language`), for a page the server has no explorer for."""
        page = self.page
        row = self.classroom.news(seat["code"], seat["student"], seat.get("following", False))
        if self.follows is not None:  # its next moves may come without a page event (`ui.class_follow`)
            key = self.follows.seen(seat["code"], seat["student"], getattr(request, "session_hash", None))
            seat = {**seat, "page": key} if key else seat
        if row is None:
            said = _("The class has ended. You are exploring on your own.")
            return self.shown({}) | self.noted(None, seat) | {page.status: said}
        asked_mark, noted_mark = self.marks(row)
        marks = {"asked": asked_mark, "noted": noted_mark}
        asked = {}  # following or not, a question reaches them
        if not drawn or seat.get("asked") != marks["asked"]:
            asked = self.questions.student_view(row, seat["student"])
        if row.version == seat.get("version"):
            return self.shown({**seat, "asked": marks["asked"]}, drawn=drawn) | asked
        following = bool(seat.get("following"))
        noted = {}
        if following and (not drawn or seat.get("noted") != marks["noted"]):
            noted = self.noted(row, seat)
        seat = {**seat, "version": row.version, "asked": marks["asked"]}
        seat |= {"noted": marks["noted"]} if following else {}
        if isinstance(explorer, Explorer):
            own = explorer.state
        else:  # a page the server has no explorer for (a restart): in its own language, as its switch shows it
            own = ExplorerState(language=page_language(None, language))
        view = self.classroom.view(row, own) if following else None
        if view is None:
            return self.shown(seat, drawn=drawn) | asked | noted
        return self.showing(explorer, view) | self.shown(seat, drawn=drawn) | asked | noted

    def marks(self, row: ClassRow) -> tuple[str, str]:
        """What a page marks in its seat of the class's question (`asked`) and the lesson's moment (`noted`), to
        draw them again only when they change."""
        question = self.classroom.store.question(row.code, row.question) if row.question else None
        asked = f"{row.question}{'r' if question is not None and question.revealed else ''}"
        return asked, f"{zlib.crc32(row.lesson.encode())}:{row.moment}" if row.lesson else ""

    def showing(self, explorer: Explorer | None, view: ExplorerState) -> Updates:
        """The page showing `view` (the class's), as opening its share link would."""
        return self.showing_with(explorer, view)[1]

    def showing_with(self, explorer: Explorer | None, view: ExplorerState) -> tuple[Explorer, Updates]:
        """`showing`, and the explorer it shows. A page that shows the same sentence with the same settings already
        (a follower after the teacher's Step, or a change of view) gets what a move redraws, and the controls that
        change: a whole redraw costs the server three times as much, most of it gradio's (an update of a component's
        settings builds the component anew)."""
        before = explorer.state if isinstance(explorer, Explorer) else None
        return self.showing_from(before, view, self.page.registry_of(explorer))

    def showing_from(
        self, before: ExplorerState | None, view: ExplorerState, registry: ModelRegistry
    ) -> tuple[Explorer, Updates]:
        """`showing_with` for a page that shows `before` (None: a page to draw whole), with the models of
        `registry`."""
        page = self.page
        state = view.replace(tab=page.tab_holding(view.tab))
        explorer = Explorer.showing(registry, state)  # its views from the shared cache
        controls = control_values(explorer.state)
        if before is None or before.replace(choices=()).computed() != state.replace(choices=()).computed():
            controls = {page.control(name): value for name, value in controls.items()}
            return explorer, page.opening(state.tab) | controls | page.refreshed(explorer)
        shown = control_values(before)
        changed = {page.control(name): value for name, value in controls.items() if shown[name] != value}
        opening = page.opening(state.tab) if before.tab != state.tab else {}
        return explorer, opening | changed | page.refreshed(explorer, light=True)

    def follow_handler(
        self, explorer: Explorer | None, seat_value: str, language: str | None = None, request: gr.Request | None = None
    ) -> Updates:
        """The page's hidden Follow, clicked by its script when the class's version changed (with the page's
        language: after a restart the server has no explorer for a page that went on as it was)."""
        return self.follow_seat(explorer, seat_value, drawn=True, request=request, language=language)

    def follow_seat(
        self,
        explorer: Explorer | None,
        seat_value: str,
        drawn: bool,
        request: gr.Request | None = None,
        language: str | None = None,
    ) -> Updates:
        seat = read_seat(seat_value)
        if seat.get("role") != "student":
            return {self.seat: gr.skip()}
        language = page_language(explorer, language)
        with speaking(language):
            try:
                return self.followed(explorer, seat, drawn=drawn, request=request, language=language)
            except ExplorerError as error:
                return self.failed(error)

    def switched(self, following: bool):
        """Explore on my own (False), or Back to the teacher (True)."""

        def handler(
            explorer: Explorer | None, seat_value: str, language: str | None = None, request: gr.Request | None = None
        ) -> Updates:
            seat = read_seat(seat_value)
            if seat.get("role") != "student":
                return {self.seat: gr.skip()}
            seat = seat_json(**{**seat, "following": following, "version": -1})
            return self.follow_seat(explorer, seat, drawn=False, request=request, language=language)

        return handler

    def left(self, explorer: Explorer | None, seat_value: str) -> Updates:
        """Leave the class (a student), or end it (the teacher)."""
        seat = read_seat(seat_value)
        with speaking(page_language(explorer)):
            if seat.get("role") == "teacher":
                try:
                    self.classroom.end(seat.get("code"), seat.get("secret"))
                except ClassroomError as error:
                    return self.failed(error)
                return self.shown({}) | {self.page.status: _("The class has ended.")}
            return self.shown({}) | self.noted(None, seat) | {self.page.status: _("You left the class.")}

    # Wiring

    @property
    def view_outputs(self) -> list:
        page = self.page
        return list(dict.fromkeys([page.tab_opener, *page.inputs[1:], *page.outputs, page.status, *self.mine]))

    def wire(self) -> None:
        page, hidden = self.page, {"api_visibility": "private"}
        mine = [*self.mine, page.status]
        started = self.teach.click(self.started, [page.explorer], mine, **hidden, **QUICK)
        started.then(None, None, None, js=scripts.fold_js("class-box"), **hidden)  # the class's bar says the rest
        reclaimed = uses_gpu(self.reclaimed)
        self.reopen_button.click(reclaimed, [page.explorer, self.reopen_box], self.view_outputs, **hidden, **QUICK)
        ticked = [self.banner, self.timer, self.questions.tally, self.questions.reveal]
        self.timer.tick(self.counted, [page.explorer, self.seat], ticked, **hidden, **QUICK)
        follow = uses_gpu(self.follow_handler)
        language = page.control("language")  # the page's, for a page the server lost (`page_language`)
        followed = self.follow.click(
            follow,
            [page.explorer, self.seat, language],
            self.view_outputs,
            trigger_mode="always_last",
            **hidden,
            **QUICK,
        )
        drawn = [block for block in self.view_outputs if not getattr(block, "stateful", False)]
        applied = self.apply.click(None, None, drawn, js=APPLY_JS, **hidden)
        if not APART:  # (ZeroGPU: a page's Follow runs in the GPU's worker, where a drawing must run too)
            self.follows = Follows(self, page.demo.fns[applied["id"]], page.demo.fns[followed["id"]])
            page.demo.before_event = self.follows.catch_up  # a page's session catches up before its next event
        page.demo.follows = self.follows  # for its route (`ui.class_follow.routes`; none: every page its Follow)
        joined = uses_gpu(self.joined)
        self.join.click(joined, [page.explorer, self.code], self.view_outputs, **hidden, **QUICK)
        self.code.submit(joined, [page.explorer, self.code], self.view_outputs, **hidden, **QUICK)
        for button, following in ((self.leave, False), (self.back, True)):
            handler = uses_gpu(self.switched(following))
            button.click(handler, [page.explorer, self.seat, language], self.view_outputs, **hidden, **QUICK)
        self.end.click(self.left, [page.explorer, self.seat], mine, **hidden, **QUICK)
        self.copy.click(None, None, None, js=copy_teacher_js(), **hidden)
        questions = self.questions
        asked = uses_gpu(self.ask_handler)
        ask_outputs = [questions.tally, questions.reveal, page.status]
        questions.ask.click(asked, [page.explorer, self.seat, questions.kind], ask_outputs, **hidden, **QUICK)
        revealed = uses_gpu(self.reveal_handler)
        questions.reveal.click(revealed, [page.explorer, self.seat], self.view_outputs, **hidden, **QUICK)
        questions.choice.input(
            self.answer_handler,
            [page.explorer, self.seat, questions.choice],
            [page.status, questions.said],
            **hidden,
            **QUICK,
        )

    def on_opened(self, event: Any) -> None:
        """A page opened on a class's link joins or drives it (`by_link`); a page opened on any other address sends
        no event for it: it answered nothing, for 117 outputs (with three more events for nothing, a quarter of the
        browser's work of an opening: docs/architecture.md)."""
        page = self.page
        self.by_link_button.click(
            self.by_link, [page.explorer, self.opened_with], self.view_outputs, api_visibility="private"
        )
        event.then(None, None, None, js=BY_LINK_JS, api_visibility="private")

    def by_link(self, explorer: Explorer | None, opened: dict, request: gr.Request) -> Updates:
        """When the page opens on a class's link: `?class=CODE` joins it, `?class=CODE&teacher=SECRET` drives it."""
        code, secret = opened.get("class", ""), opened.get("teacher", "")
        if not code or (opened.get("teach") and not secret):  # the teacher's tab reopens it (`SEAT_JS`)
            return {self.seat: gr.skip()}  # (an empty dict is no answer to gradio)
        with speaking(page_language(explorer)):
            if secret:
                return self.as_teacher(explorer, code, secret, request)
            seat = opened.get("seat", "")
            if seat and self.classroom.store.has_student(code, seat):  # the page's own seat, after a reload
                seat = {"role": "student", "code": code, "student": seat, "following": True}
                return self.followed(explorer, seat, request=request)
            return self.joined(explorer, code, request)


def routes(classroom: Classroom) -> list[Route]:
    """`POST /class/show`: the teacher's page shows the class its view (the share link's state), with its secret."""

    async def show(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"detail": "Send JSON."}, status_code=400)
        if not isinstance(body, dict):
            return JSONResponse({"detail": "Send a JSON object."}, status_code=400)
        address = request.client.host if request.client else ""
        try:
            row = classroom.teacher(body.get("class"), body.get("secret"), address)
            state = ExplorerState.from_link(body.get("state"))
        except ExplorerError as error:
            return JSONResponse({"detail": str(error)}, status_code=403)
        version = classroom.show(Teacher(row.code, body["secret"]), state, address)
        return JSONResponse({"version": version})

    return [Route("/class/show", show, methods=["POST"])]


def class_query(query: dict[str, str]) -> dict[str, str]:
    """What of a page's address concerns a class: `class` (a code), `teacher` (a secret), and `teach` (the
    teacher's page after its secret left the address bar: the browser's tab holds it, `SEAT_JS`)."""
    code = normal_code(query.get("class", ""))
    if not code:
        return {}
    return {
        "class": code,
        "teacher": query.get("teacher", "")[:256],
        "teach": query.get("teach", "")[:8],
        "seat": query.get("seat", "")[:32],
    }
