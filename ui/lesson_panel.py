"""A lesson on the page (issue 38 §4): the teacher's guide as moments to step through, or a lesson of the teacher's
own, made while exploring, downloaded and loaded again.

- **Lesson** (beside Copy link) unfolds the lesson box: open the built-in lesson (the teacher's guide, in the page's
  language), load a lesson file, download the lesson, print a handout; add the view on the page as a moment, with a
  note and a question; move the current moment up or down, or delete it.
- Once a lesson is open, its bar shows where it stands ("Moment 3 of 16"), **Previous** and **Next**, and the
  moment's note. Each moves the page to the moment's view; in a class, the whole class, and a moment's question is
  asked of the class when the lesson reaches it. A student's page shows the note of the class's moment.

The lesson lives in the page (`data`, a hidden text box holding the lesson's JSON and where it stands), so that it
outlives a restart of the server, and, in a class, in the class's store, so that the teacher's page gets it back
from any browser. Whatever the page sends back is read as untrusted input (`explorer.lessons.read_lesson`).
"""

from __future__ import annotations

import functools
import html
import json
from pathlib import Path
from typing import Any

import gradio as gr

from explorer import Explorer, ExplorerError, ExplorerState
from explorer.class_store import ClassRow
from explorer.i18n import N_, _, speaking
from explorer.lessons import MAX_NOTE_CHARS, Lesson, LessonError, built_in, note_html, read_lesson, read_lesson_path
from explorer.questions import KINDS, TITLES

from . import scripts
from .class_panel import ClassPanel, address_of, page_language, read_seat
from .i18n import T, with_browser_words
from .panel import PageAccess, Panel, Updates, escaped
from .runtime import QUICK, uses_gpu

LESSON_INTRO = N_(
    "A **lesson** is a list of moments: views of the explorer, each with a note and a question for the class. Open "
    "the teacher's guide, or make your own: explore, and **Add this moment** at each stop."
)
TAB_NAMES = {
    "attention": N_("Attention"),
    "beam": N_("Beam search"),
    "inside": N_("Inside a step"),
    "walkthrough": N_("Walkthrough"),
    "experiments": N_("Experiments"),
    "masks": N_("Masks and heads"),
    "positions": N_("Positions"),
    "twins": N_("Trained vs untrained"),
    "train": N_("Train"),
}
NO_QUESTION = "none"

# What the page keeps of its lesson (`LessonPanel.data`), read in the browser; nothing to do without a lesson.
KEPT_LESSON = """
    const words = __WORDS__;
    const box = document.querySelector("#lesson-data textarea, #lesson-data input");
    let kept = null;
    try { kept = JSON.parse(box?.value || "null"); } catch (error) { kept = null; }
    if (!kept || !kept.lesson) { alert(words.none); return; }
"""

# Download: the page's lesson as a file, made in the browser (no request, no file on the server).
DOWNLOAD_JS = (
    "() => {"
    + KEPT_LESSON
    + """    const text = JSON.stringify(kept.lesson, null, 2) + "\\n";
    const name = (kept.lesson.title || "lesson").replace(/[^\\p{L}\\p{N}]+/gu, "-").replace(/^-|-$/g, "") || "lesson";
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
    link.download = `${name}.lesson.json`;
    document.body.appendChild(link); link.click(); link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}"""
)

# Print a handout: the lesson posted to /lesson/handout (`ui.handout`) in a new tab, which prints it to PDF.
HANDOUT_JS = (
    "() => {"
    + KEPT_LESSON
    + """    const form = document.createElement("form");
    form.method = "post"; form.action = "lesson/handout"; form.target = "_blank"; form.enctype = "multipart/form-data";
    const field = (name, value) => {
        const input = document.createElement("input");
        input.type = "hidden"; input.name = name; input.value = value; form.appendChild(input);
    };
    field("lesson", JSON.stringify(kept.lesson));
    field("language", document.documentElement.lang?.startsWith("zh") ? "zh" : "en");
    document.body.appendChild(form); form.submit(); form.remove();
}"""
)
NO_LESSON = {"none": N_("Open or make a lesson first.")}


@functools.lru_cache(maxsize=64)
def lesson_of(text: str) -> Lesson:
    """The lesson of a page's or a class's JSON, read once (a class's students all read the same)."""
    return read_lesson(text)


def kept(value: object) -> tuple[Lesson | None, int]:
    """The lesson the page keeps (`LessonPanel.data`) and where it stands; (None, 0) for none or anything else."""
    if not isinstance(value, str) or not value:
        return None, 0
    try:
        values = json.loads(value)
        lesson = lesson_of(json.dumps(values["lesson"], ensure_ascii=False, separators=(",", ":")))
        at = values.get("at", 0)
    except (ValueError, KeyError, TypeError, LessonError, RecursionError):
        return None, 0
    at = at if isinstance(at, int) and 0 <= at < len(lesson.moments) else 0
    return lesson, at


def data_of(lesson: Lesson | None, at: int) -> str:
    if lesson is None:
        return ""
    return json.dumps({"lesson": lesson.model_dump(mode="json"), "at": at}, ensure_ascii=False, separators=(",", ":"))


def moment_label(lesson: Lesson, index: int) -> str:
    """A moment as the list shows it: its number, its view, its step and the start of its note (plain text)."""
    view = lesson.moments[index].view
    steps = len(view.get("choices", []))
    name = _(TAB_NAMES.get(view.get("tab", "attention"), TAB_NAMES["attention"]))
    note = " ".join(lesson.moments[index].note.replace("*", "").replace("`", "").split())
    note = note if len(note) <= 48 else note[:47] + "…"
    step = _("step {number}").format(number=steps)
    return f"{index + 1}. {name} · {step}" + (f" · {note}" if note else "")


class LessonPanel(Panel):
    """Made in the header, under the class's area (`ui.presentation.Header`)."""

    def __init__(self, page: PageAccess, classes: ClassPanel):
        super().__init__(page)
        self.classes = classes
        self.data = gr.Textbox("", visible="hidden", elem_id="lesson-data")  # {"lesson": …, "at": i}, or ""
        with gr.Column(elem_id="lesson-bar", visible=False) as self.bar:
            with gr.Row(elem_id="lesson-nav"):
                small = {"size": "sm", "scale": 0, "min_width": 110}
                self.previous = gr.Button(T("Previous"), elem_id="lesson-previous", **small)
                self.where = gr.HTML("", elem_id="lesson-where")
                self.next = gr.Button(T("Next"), elem_id="lesson-next", variant="primary", **small)
            self.note = gr.HTML("", elem_id="lesson-note")
        classes.noted = self.class_note  # a class's moment, on its pages (`ClassPanel.followed`)

    def make_box(self, row: gr.Row) -> None:
        """The Lesson button in `row` (the share link's), and the box it unfolds, made here."""
        with row:
            toggle = gr.Button(T("Lesson"), elem_id="lesson-toggle", size="sm", scale=0, min_width=90)
        toggle.click(None, None, None, js=scripts.toggle_js("lesson-box"), api_visibility="private")
        small = {"size": "sm", "scale": 0, "min_width": 120}
        with gr.Column(elem_id="lesson-box", elem_classes="folded"):
            gr.Markdown(T(LESSON_INTRO), elem_classes="caption")
            with gr.Row(elem_id="lesson-files"):
                self.guide = gr.Button(T("Open the teacher's guide"), elem_id="lesson-guide", **small)
                self.upload = gr.UploadButton(
                    T("Load a lesson file"), file_types=[".json"], type="filepath", elem_id="lesson-upload", **small
                )
                self.download = gr.Button(T("Download the lesson"), elem_id="lesson-download", **small)
                self.handout = gr.Button(T("Print a handout"), elem_id="lesson-handout", **small)
                self.close = gr.Button(T("Close the lesson"), elem_id="lesson-close", **small)
            self.title = gr.Textbox(label=T("Title"), max_lines=1, max_length=200, elem_id="lesson-title")
            self.moments = gr.Dropdown([], label=T("Go to moment"), elem_id="lesson-moments")
            with gr.Row(elem_id="lesson-moment"):
                wide = {"min_width": 280}  # side by side on a laptop, one under the other on a phone
                self.note_box = gr.Textbox(
                    label=T("Note (Markdown)"),
                    lines=2,
                    max_length=MAX_NOTE_CHARS,
                    elem_id="lesson-note-box",
                    scale=3,
                    **wide,
                )
                questions = [(T("No question"), NO_QUESTION), *((T(TITLES[kind]), kind) for kind in KINDS)]
                self.question = gr.Dropdown(
                    questions,
                    value=NO_QUESTION,
                    label=T("Question for the class"),
                    elem_id="lesson-question",
                    scale=2,
                    **wide,
                )
            with gr.Row(elem_id="lesson-edit"):
                self.add = gr.Button(T("Add this moment"), elem_id="lesson-add", variant="primary", **small)
                self.save = gr.Button(T("Save the note and question"), elem_id="lesson-save", **small)
                self.up = gr.Button(T("Move up"), elem_id="lesson-up", **small)
                self.down = gr.Button(T("Move down"), elem_id="lesson-down", **small)
                self.delete = gr.Button(T("Delete"), elem_id="lesson-delete", variant="stop", **small)
        self.classes.lesson_outputs = [*self.mine, *self.editor]  # what `class_note` draws

    @property
    def mine(self) -> list:
        return [self.data, self.bar, self.previous, self.where, self.next, self.note]

    @property
    def editor(self) -> list:
        return [self.title, self.moments, self.note_box, self.question]

    # What the page shows

    def drawn(self, lesson: Lesson | None, at: int, *, leading: bool = True) -> Updates:
        """The lesson's bar and box for `lesson` at moment `at` (`leading`: this page moves through it; a
        following student's page only shows the note)."""
        if lesson is None or not lesson.moments:
            shown = {self.bar: gr.update(visible=False), self.note: "", self.where: ""}
            return shown | {self.data: data_of(lesson, 0)}
        moment = lesson.moments[at]
        where = _("Moment {number} of {count}").format(number=at + 1, count=len(lesson.moments))
        title = f"<b>{html.escape(lesson.title)}</b> · " if lesson.title else ""
        return {
            self.data: data_of(lesson, at) if leading else gr.skip(),
            self.bar: gr.update(visible=True),
            self.where: f'<span class="lesson-where" role="status">{title}{html.escape(where)}</span>',
            self.note: f'<div class="lesson-note">{note_html(moment.note)}</div>' if moment.note else "",
            self.previous: gr.update(visible=leading, interactive=at > 0),
            self.next: gr.update(visible=leading, interactive=at + 1 < len(lesson.moments)),
        }

    def edited(self, lesson: Lesson | None, at: int) -> Updates:
        """The lesson box: the title, the list of moments with the current one chosen, and its note and question."""
        if lesson is None or not lesson.moments:
            title = lesson.title if lesson is not None else ""
            return {self.title: title, self.moments: gr.update(choices=[], value=None), self.note_box: ""}
        choices = [(moment_label(lesson, i), str(i)) for i in range(len(lesson.moments))]
        moment = lesson.moments[at]
        return {
            self.title: lesson.title,
            self.moments: gr.update(choices=choices, value=str(at)),
            self.note_box: moment.note,
            self.question: moment.question or NO_QUESTION,
        }

    def class_note(self, row: ClassRow | None, seat: dict) -> Updates:
        """A page in a class: the class's moment. The teacher's page gets the lesson back (after a reload, or
        from another browser); a student's shows the note."""
        lesson = None
        if row is not None and row.lesson:
            try:
                lesson = lesson_of(row.lesson)
            except LessonError:
                lesson = None
        at = row.moment if lesson is not None and 0 <= row.moment < len(lesson.moments) else 0
        if seat.get("role") == "teacher":
            return self.drawn(lesson, at) | self.edited(lesson, at) if lesson is not None else {}
        return self.drawn(lesson, at, leading=False)

    # Moving through the lesson

    def going(self, explorer: Explorer | None, lesson: Lesson, at: int, seat: dict, request: Any) -> Updates:
        """The page at moment `at` of `lesson`: its view, its note; in a class, the class with it, and the moment's
        question asked."""
        own = explorer.state if isinstance(explorer, Explorer) else ExplorerState()
        moment = lesson.moments[at]
        state = moment.state(own)
        moved, updates = self.classes.showing_with(explorer, state)
        updates |= self.drawn(lesson, at) | self.edited(lesson, at) | {self.page.status: ""}
        if seat.get("role") == "teacher":
            row = self.classes.classroom.teacher(seat.get("code"), seat.get("secret"), address_of(request))
            self.classes.classroom.lead(row, moved.state, lesson.compact(), at)
            if moment.question:
                updates |= self.classes.questions.asked(moved, row.code, moment.question)
            else:  # a question left open is answered as the lesson moves on: no page stays covered by it
                updates |= self.classes.questions.closed(row)
        return updates

    def kept_in_class(self, lesson: Lesson | None, at: int, explorer: Explorer | None, seat: dict, request) -> None:
        """After an edit: the class's store holds the teacher's lesson as it now is (for the teacher's page after a
        reload), the view unchanged."""
        if seat.get("role") != "teacher" or not isinstance(explorer, Explorer):
            return
        row = self.classes.classroom.teacher(seat.get("code"), seat.get("secret"), address_of(request))
        self.classes.classroom.lead(row, explorer.state, lesson.compact() if lesson else "", at)

    def handled(self, act, values: int = 0):
        """A handler of the lesson's controls, with `values` inputs after the page's explorer, lesson and seat:
        `act(explorer, lesson, at, seat, request, *values)` in the page's language; a LessonError or ExplorerError is
        the page's message, the lesson unchanged."""

        def run(explorer, data, seat_value, values, request) -> Updates:
            language = page_language(explorer)
            with speaking(language):
                lesson, at = kept(data)
                try:
                    return act(explorer, lesson, at, read_seat(seat_value), request, *values)
                except ExplorerError as error:
                    return {self.page.status: escaped(str(error))}

        # gradio gives a handler the request by its parameter's type, and counts its inputs by its parameters
        if values == 0:

            def handler(explorer, data, seat_value, request: gr.Request) -> Updates:
                return run(explorer, data, seat_value, (), request)
        elif values == 1:

            def handler(explorer, data, seat_value, value, request: gr.Request) -> Updates:
                return run(explorer, data, seat_value, (value,), request)
        else:

            def handler(explorer, data, seat_value, title, note, question, request: gr.Request) -> Updates:
                return run(explorer, data, seat_value, (title, note, question), request)

        handler.__name__ = handler.__qualname__ = f"lesson_{act.__name__}"
        return handler

    def from_guide(self, explorer, lesson, at, seat, request) -> Updates:
        language = page_language(explorer)
        return self.going(explorer, built_in(language), 0, seat, request)

    def loaded(self, explorer, lesson, at, seat, request, path) -> Updates:
        from .tabs.train import UPLOADS  # which page uploaded a file (gradio takes any upload by its path)

        if not path:
            return {self.page.status: gr.skip()}
        name = escaped(Path(path).name)
        if not UPLOADS.claim(path, request.session_hash if request is not None else None):
            said = _("**{file}** cannot be loaded: it was uploaded by another page")
            return {self.page.status: said.format(file=name)}
        try:
            lesson = read_lesson_path(path)
        except LessonError as error:
            said = _("**{file}** is not a lesson that can be opened: {error}")
            return {self.page.status: said.format(file=name, error=escaped(str(error)))}
        if not lesson.moments:
            said = _("The lesson has no moments yet.")
            return self.drawn(lesson, 0) | self.edited(lesson, 0) | {self.page.status: said}
        return self.going(explorer, lesson, 0, seat, request)

    def went(self, by: int):
        def went(explorer, lesson, at, seat, request) -> Updates:
            if lesson is None or not 0 <= at + by < len(lesson.moments):
                return {self.page.status: gr.skip()}
            return self.going(explorer, lesson, at + by, seat, request)

        went.__name__ = "next" if by > 0 else "previous"
        return went

    def chosen(self, explorer, lesson, at, seat, request, choice) -> Updates:
        index = int(choice) if isinstance(choice, str) and choice.isdigit() else -1
        if lesson is None or not 0 <= index < len(lesson.moments) or index == at:
            return {self.page.status: gr.skip()}
        return self.going(explorer, lesson, index, seat, request)

    def closed(self, explorer, lesson, at, seat, request) -> Updates:
        self.kept_in_class(None, 0, explorer, seat, request)
        return self.drawn(None, 0) | self.edited(None, 0) | {self.page.status: _("The lesson is closed.")}

    # Making a lesson

    def added(self, explorer, lesson, at, seat, request, title, note, question) -> Updates:
        if not isinstance(explorer, Explorer):
            raise ExplorerError(_("type a sentence to translate"))
        language = explorer.state.language
        lesson = lesson or Lesson(title=title or "", language=language)
        question = question if question in KINDS else None
        lesson = lesson.model_copy(update={"title": (title or "")[:200]}).added(explorer.state, note, question, at)
        at = min(at + 1, len(lesson.moments) - 1) if len(lesson.moments) > 1 else 0
        self.kept_in_class(lesson, at, explorer, seat, request)
        said = _("Moment {number} added.").format(number=at + 1)
        return self.drawn(lesson, at) | self.edited(lesson, at) | {self.page.status: said}

    def saved(self, explorer, lesson, at, seat, request, title, note, question) -> Updates:
        if lesson is None:
            return {self.page.status: _("Open or make a lesson first.")}
        lesson = lesson.model_copy(update={"title": (title or "")[:200]})
        lesson = lesson.changed(at, note, question if question in KINDS else None) if lesson.moments else lesson
        self.kept_in_class(lesson, at, explorer, seat, request)
        return self.drawn(lesson, at) | self.edited(lesson, at) | {self.page.status: _("Saved.")}

    def moved(self, by: int):
        def moved(explorer, lesson, at, seat, request) -> Updates:
            if lesson is None or not 0 <= at + by < len(lesson.moments):
                return {self.page.status: gr.skip()}
            lesson = lesson.moved(at, by)
            self.kept_in_class(lesson, at + by, explorer, seat, request)
            return self.drawn(lesson, at + by) | self.edited(lesson, at + by) | {self.page.status: ""}

        moved.__name__ = "up" if by < 0 else "down"
        return moved

    def deleted(self, explorer, lesson, at, seat, request) -> Updates:
        if lesson is None or not lesson.moments:
            return {self.page.status: gr.skip()}
        lesson = lesson.removed(at)
        at = min(at, len(lesson.moments) - 1) if lesson.moments else 0
        self.kept_in_class(lesson, at, explorer, seat, request)
        said = _("Moment deleted.")
        return self.drawn(lesson, at) | self.edited(lesson, at) | {self.page.status: said}

    # Wiring

    def wire(self) -> None:
        page, hidden = self.page, {"api_visibility": "private"}
        seat = self.classes.seat
        given = [page.explorer, self.data, seat]
        editing = [*self.mine, *self.editor, page.status]
        moving = list(dict.fromkeys([*self.classes.view_outputs, *editing, *self.classes.questions.teacher_outputs]))
        events = {}
        for button, act in (
            (self.guide, self.from_guide),
            (self.previous, self.went(-1)),
            (self.next, self.went(1)),
        ):
            events[button] = button.click(uses_gpu(self.handled(act)), given, moving, **hidden, **QUICK)
        self.moments.input(uses_gpu(self.handled(self.chosen, 1)), [*given, self.moments], moving, **hidden, **QUICK)
        loaded = self.upload.upload(
            uses_gpu(self.handled(self.loaded, 1)), [*given, self.upload], moving, **hidden, **QUICK
        )
        for opened in (loaded, events[self.guide]):  # the box folds: the moment's view is what the class looks at
            opened.then(None, None, None, js=scripts.fold_js("lesson-box"), **hidden)
        fields = [self.title, self.note_box, self.question]
        self.add.click(self.handled(self.added, 3), [*given, *fields], editing, **hidden, **QUICK)
        self.save.click(self.handled(self.saved, 3), [*given, *fields], editing, **hidden, **QUICK)
        for button, act in (
            (self.up, self.moved(-1)),
            (self.down, self.moved(1)),
            (self.delete, self.deleted),
            (self.close, self.closed),
        ):
            button.click(self.handled(act), given, editing, **hidden, **QUICK)
        self.download.click(None, None, None, js=with_browser_words(DOWNLOAD_JS, NO_LESSON), **hidden)
        self.handout.click(None, None, None, js=with_browser_words(HANDOUT_JS, NO_LESSON), **hidden)
