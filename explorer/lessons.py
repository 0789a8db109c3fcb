"""Lessons as files (issue 38 §4): an ordered list of moments, each a view of the explorer with an optional note
and an optional question for the class.

A lesson is saved as a small JSON file, which a teacher downloads, edits if they like, shares and loads again:

    {
      "format": "transformer-explorer-lesson",
      "version": 1,
      "title": "One sentence through the Transformer",
      "language": "en",
      "moments": [
        {"view": {"model": "en-de", "source": "Excuse me, where is the nearest pharmacy?", "choices": [null, null]},
         "note": "Which piece comes next? **Guess first**, then Step.",
         "question": "next"}
      ]
    }

A moment's `view` holds the settings of a share link that differ from a new page's (`ExplorerState.settings`):
`choices` has one entry per step taken (`null`: the model chose), `tab` the view open, and so on. `question` is one
of the kinds of `explorer.questions` (`next`, `look`, `silence`, `layer`), asked of the class when the lesson
reaches the moment.

A file that is loaded is untrusted input: it is read with a size limit, validated by pydantic, every view is
checked as a link's would be, and a note is Markdown shown with HTML escaped (`note_html`). Anything wrong is a
`LessonError` saying where and what, in the reader's language.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from markdown_it import MarkdownIt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .i18n import N_, _
from .state import ExplorerError, ExplorerState

FORMAT = "transformer-explorer-lesson"
# A lesson travels with the teacher's page (the browser keeps it, so that it outlives a restart of the server), in
# requests the server takes up to 64 KB (`ui.web`): 48 KB holds a lesson of 60 moments with a few lines of notes each
# (the built-in one, 16 moments, takes 9 KB).
MAX_BYTES = 48 * 1024
MAX_MOMENTS = 60
MAX_NOTE_CHARS = 2000
MAX_TITLE_CHARS = 200
BUILT_IN = Path(__file__).resolve().parent.parent / "lessons"  # `guide.<language>.json`: the teacher's guide

# What a student keeps of their own in a lesson's views, as in a class (`explorer.classroom.OWN_FIELDS`).
OWN_FIELDS = ("language", "presentation", "training")


class LessonError(ExplorerError):
    """A lesson file that cannot be used; the message says where and why, and is safe to show."""


class Moment(BaseModel):
    """One stop of a lesson: the view the class is shown, what the teacher says, and what the class is asked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    view: dict[str, Any]
    note: Annotated[str, Field(max_length=MAX_NOTE_CHARS)] = ""
    question: Literal["next", "look", "silence", "layer"] | None = None

    @field_validator("view")
    @classmethod
    def _a_view(cls, view: dict[str, Any]) -> dict[str, Any]:
        """A view is read as a share link's would be: every setting checked (`ExplorerState`), and kept as the
        settings that differ from a new page's, without the viewer's own (their language, their layout)."""
        try:
            state = ExplorerState.from_settings(view)
        except ExplorerError as error:
            raise ValueError(str(error)) from None
        return viewed(state)

    def state(self, own: ExplorerState | None = None) -> ExplorerState:
        """The moment's view as a page opens it: with the page's own language, layout and Train tab."""
        state = ExplorerState.from_settings(self.view)
        own = own or ExplorerState()
        return state.replace(**{name: getattr(own, name) for name in OWN_FIELDS})


class Lesson(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["transformer-explorer-lesson"] = FORMAT
    version: Literal[1] = 1
    title: Annotated[str, Field(max_length=MAX_TITLE_CHARS)] = ""
    language: Literal["en", "zh"] = "en"  # the language its notes are written in
    moments: Annotated[list[Moment], Field(max_length=MAX_MOMENTS)] = []

    def to_json(self) -> str:
        """The lesson as its file holds it: indented, in UTF-8 (Chinese stays readable)."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"

    def compact(self) -> str:
        """The lesson as the page keeps it: the same JSON on one line."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))

    def checked(self) -> Lesson:
        """This lesson, if its file would not be too large."""
        size = len(self.to_json().encode())
        if size > MAX_BYTES:
            raise LessonError(_("the lesson is full: its file would take {size}, more than {limit}").format(
                size=f"{size / 1e3:.0f} KB", limit=f"{MAX_BYTES // 1024} KB"))  # fmt: skip
        return self

    def added(self, state: ExplorerState, note: str = "", question: str | None = None, at: int | None = None) -> Lesson:
        """The lesson with a moment of `state` inserted after `at` (at the end when None)."""
        if len(self.moments) >= MAX_MOMENTS:
            raise LessonError(_("a lesson holds at most {count} moments").format(count=MAX_MOMENTS))
        moment = moment_of(state, note, question)
        where = len(self.moments) if at is None else max(0, min(at + 1, len(self.moments)))
        return self.model_copy(update={"moments": [*self.moments[:where], moment, *self.moments[where:]]}).checked()

    def moved(self, index: int, by: int) -> Lesson:
        """The lesson with moment `index` moved `by` places (-1: earlier, 1: later), within the lesson."""
        target = index + by
        if not (0 <= index < len(self.moments) and 0 <= target < len(self.moments)):
            return self
        moments = list(self.moments)
        moments[index], moments[target] = moments[target], moments[index]
        return self.model_copy(update={"moments": moments})

    def removed(self, index: int) -> Lesson:
        if not 0 <= index < len(self.moments):
            return self
        return self.model_copy(update={"moments": [m for i, m in enumerate(self.moments) if i != index]})

    def changed(self, index: int, note: str, question: str | None) -> Lesson:
        """The lesson with moment `index`'s note and question replaced (checked as a file's would be)."""
        if not 0 <= index < len(self.moments):
            return self
        moment = moment_of(self.moments[index].state(), note, question)
        moments = [moment if i == index else m for i, m in enumerate(self.moments)]
        return self.model_copy(update={"moments": moments}).checked()


def viewed(state: ExplorerState) -> dict[str, Any]:
    """What a lesson keeps of a view: its settings, without the viewer's own."""
    return {name: value for name, value in state.settings().items() if name not in OWN_FIELDS}


def moment_of(state: ExplorerState, note: str = "", question: str | None = None) -> Moment:
    """A moment of `state`; a note or question that cannot be kept is a LessonError."""
    try:
        return Moment(view=viewed(state), note=note or "", question=question or None)
    except ValidationError as error:
        raise LessonError(said(error)) from None


# Reading a file

WHAT = {  # pydantic's error types, said in the reader's language; `{where}`: the place in the file
    "missing": N_("{where} is missing"),
    "extra_forbidden": N_("{where} is not a setting of a lesson"),
    "string_type": N_("{where} must be text"),
    "string_too_long": N_("{where} is too long (at most {max_length} characters)"),
    "too_long": N_("{where} holds too many (at most {max_length})"),
    "list_type": N_("{where} must be a list"),
    "dict_type": N_("{where} must be an object of settings"),
    "model_type": N_("{where} must be an object"),
    "literal_error": N_("{where} must be one of: {expected}"),
}


def where(location: tuple) -> str:
    """A place in a lesson file, said to a teacher: "moment 3, note" rather than `moments.2.note`."""
    parts: list[str] = []
    items = list(location)
    while items:
        item = items.pop(0)
        if item == "moments" and items and isinstance(items[0], int):
            parts.append(_("moment {number}").format(number=items.pop(0) + 1))
        else:
            parts.append(str(item))
    return ", ".join(parts) or _("the lesson")


def said(error: ValidationError) -> str:
    """The first of pydantic's errors, as a sentence for a teacher."""
    first = error.errors(include_url=False)[0]
    place = where(first.get("loc", ()))
    if first["type"] == "value_error":  # a view that a link could not hold: its own message
        message = str(first.get("ctx", {}).get("error", first["msg"]))
        return _("{where}: {error}").format(where=place, error=message)
    template = WHAT.get(first["type"])
    if template is None:
        return _("{where} is not valid").format(where=place)
    return _(template).format(where=place, **{k: v for k, v in first.get("ctx", {}).items() if k != "where"})


def read_lesson(data: bytes | str) -> Lesson:
    """A lesson file's content, checked as untrusted input: a Lesson, or a LessonError saying what is wrong."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if len(data) > MAX_BYTES:
        raise LessonError(too_large(len(data)))
    try:
        values = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise LessonError(_("a lesson file is text in UTF-8; this file is not")) from None
    except json.JSONDecodeError as error:
        raise LessonError(
            _("this is not a lesson file: its JSON breaks at line {line}, column {column}").format(
                line=error.lineno, column=error.colno
            )
        ) from None
    except RecursionError:
        raise LessonError(_("this is not a lesson file: its JSON is nested too deeply")) from None
    if not isinstance(values, dict) or values.get("format") != FORMAT:
        raise LessonError(_("this is not a lesson file of Transformer Explorer (it has no \"format\": \"{format}\")")
                          .format(format=FORMAT))  # fmt: skip
    try:
        return Lesson.model_validate(values)
    except ValidationError as error:
        raise LessonError(said(error)) from None


def read_lesson_path(path: str | Path) -> Lesson:
    """A lesson file on disk (an upload): its size checked before it is read."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise LessonError(too_large(size))
        return read_lesson(path.read_bytes())
    except OSError:
        raise LessonError(_("the lesson file cannot be read: upload it again")) from None


def too_large(size: int) -> str:
    return _("the lesson file is too large ({size}); a lesson file is at most {limit}").format(
        size=f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} KB", limit=f"{MAX_BYTES // 1024} KB"
    )


def built_in(language: str) -> Lesson:
    """The teacher's guide as a lesson, in `language` ("en", or "zh" with zh-en)."""
    path = BUILT_IN / f"guide.{language}.json"
    return read_lesson_path(path if path.exists() else BUILT_IN / "guide.en.json")


# Notes

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).disable("image")


def note_html(note: str) -> str:
    """A note as HTML: its Markdown (emphasis, lists, code, links) rendered, any HTML in it shown as text. Links
    that could run code (`javascript:`, `data:`) are not made links (markdown-it's `validateLink`); the others open
    in a new tab, away from the lesson."""
    rendered = _MARKDOWN.render(note or "")
    return rendered.replace("<a href=", '<a target="_blank" rel="noopener noreferrer nofollow" href=')
