"""Ask the class, then reveal (issue 38 §3): the teacher's Ask and Reveal with the tally for the projector, and a
student's question with its choices.

The teacher asks at the class's step (`explorer.questions`); the question goes into the class's store, and its
version tells every student's page, following or not. A student answers once, and may change the answer until
the reveal; the projector shows how many chose each answer, never who. Reveal closes the question, shows the
right answer with the view that proves it on the teacher's page, and so on every following page.
"""

from __future__ import annotations

import html
import random

import gradio as gr

from explorer import Explorer, ExplorerError
from explorer.class_store import ClassRow
from explorer.classroom import Classroom
from explorer.i18n import _, ngettext
from explorer.questions import KINDS, TITLES, Question, ask

from .i18n import T


def tally_html(question: Question, tally: dict[str, int], revealed: bool) -> str:
    """The question and a bar per choice with its count, for the projector; at the reveal, the right one marked
    and why. Until then it is marked open (`class-open`): the teacher's page, as a student's, covers what shows
    the answer."""
    most = max(tally.values(), default=0) or 1
    rows = []
    for choice in question.choices:
        count = tally.get(choice.key, 0)
        right = revealed and choice.key == question.answer
        mark = ' class="class-bar-row class-right"' if right else ' class="class-bar-row"'
        rows.append(
            f'<div{mark}><span class="class-choice">{"✓ " if right else ""}{html.escape(question.label(choice))}'
            f'</span><span class="class-bar" style="width:{100 * count / most:.0f}%"></span>'
            f'<span class="class-count">{count}</span></div>'
        )
    count = sum(tally.values())
    total = ngettext("{count} answer", "{count} answers", count).format(count=count)
    why = f'<p class="class-why">{html.escape(question.explanation())}</p>' if revealed else ""
    kind = "class-tally" if revealed else "class-tally class-open"
    return (
        f'<div class="{kind}" role="status"><p class="class-question"><b>{html.escape(question.title())}</b> '
        f'{html.escape(question.text())}</p>{"".join(rows)}<p class="class-total">{html.escape(total)}</p>{why}</div>'
    )


def answer_label(question: Question) -> str:
    return next(question.label(c) for c in question.choices if c.key == question.answer)


class Questions:
    """The components and handlers of asking, made inside the class's area (`ui.class_panel.ClassPanel`)."""

    def __init__(self, classroom: Classroom):
        self.classroom = classroom
        with gr.Row(elem_id="class-ask", visible=False) as self.ask_row:
            self.kind = gr.Dropdown(
                [(T(TITLES[kind]), kind) for kind in KINDS],
                value="next",
                label=T("Ask the class"),
                elem_id="class-kind",
                scale=2,
                min_width=240,
            )
            self.ask = gr.Button(T("Ask"), elem_id="class-ask-button", size="sm", scale=0, min_width=90)
            self.reveal = gr.Button(T("Reveal"), elem_id="class-reveal", size="sm", scale=0, min_width=90)
        self.tally = gr.HTML("", elem_id="class-tally")
        with gr.Group(visible=False, elem_id="class-question") as self.box:
            self.prompt = gr.HTML("", elem_id="class-prompt")
            self.choice = gr.Radio([], label=T("Your answer"), elem_id="class-choice")
            self.said = gr.Markdown("", elem_id="class-said")  # "Your answer is in", under the choices (on a phone too)

    # The teacher

    def asked(self, explorer: Explorer, code: str, kind: str) -> dict:
        """Ask the class a question of `kind` about the teacher's step: the tally, empty."""
        question = ask(explorer, kind if kind in KINDS else "next", seed=random.SystemRandom().randrange(10**6))
        self.classroom.store.ask(code, question.to_json(), self.classroom.clock())
        return {self.tally: tally_html(question, {}, revealed=False), self.reveal: gr.update(interactive=True)}

    def teacher_view(self, row: ClassRow) -> dict:
        """The tally of the class's question (at every tick of the teacher's counts)."""
        asked = self.classroom.store.question(row.code, row.question) if row.question else None
        if asked is None:
            return {self.tally: "", self.reveal: gr.update(interactive=False)}
        question = Question.from_json(asked.body)
        tally = self.classroom.store.tally(row.code, row.question)
        return {
            self.tally: tally_html(question, tally, asked.revealed),
            self.reveal: gr.update(interactive=not asked.revealed),
        }

    def closed(self, row: ClassRow) -> dict:
        """The class's question, if still open, revealed (the lesson moved on to a moment without one): the tally
        with the answer marked, and the students' pages uncovered."""
        asked = self.classroom.store.question(row.code, row.question) if row.question else None
        if asked is None or asked.revealed:
            return {}
        self.classroom.store.reveal(row.code, row.question, self.classroom.clock())
        found = self.classroom.store.find(row.code)
        return self.teacher_view(found) if found is not None else {}

    def revealing(self, row: ClassRow) -> Question:
        """Close the class's question: the question, for the view that proves its answer."""
        asked = self.classroom.store.question(row.code, row.question) if row.question else None
        if asked is None or asked.revealed:
            raise ExplorerError(_("there is no open question to reveal"))
        self.classroom.store.reveal(row.code, row.question, self.classroom.clock())
        return Question.from_json(asked.body)

    # A student

    def student_view(self, row: ClassRow, student: str) -> dict:
        """The class's question as a student sees it: its choices and their own answer; after the reveal, the
        answer and whether theirs was right."""
        asked = self.classroom.store.question(row.code, row.question) if row.question else None
        if asked is None:
            return {self.box: gr.update(visible=False)}
        question = Question.from_json(asked.body)
        mine = self.classroom.store.choice_of(row.code, row.question, student)
        prompt = f"<p><b>{html.escape(question.title())}</b> {html.escape(question.text())}</p>"
        if asked.revealed:
            said = _("The answer: {answer}.").format(answer=answer_label(question))
            if mine:
                said += " " + (_("You were right.") if mine == question.answer else _("Not this time."))
            prompt += f'<p class="class-why"><b>{html.escape(said)}</b> {html.escape(question.explanation())}</p>'
        choices = [(question.label(c), c.key) for c in question.choices]
        asking = [] if asked.revealed else ["asking"]  # until the reveal, the views that show the answer are covered
        return {
            self.box: gr.update(visible=True, elem_classes=asking),
            self.prompt: prompt,
            self.choice: gr.update(choices=choices, value=mine, interactive=not asked.revealed),
            self.said: "",
        }

    def answered(self, row: ClassRow | None, student: str, choice: str) -> str:
        """A student's answer: what to tell them."""
        if row is None or not row.question or not isinstance(choice, str):
            return _("There is no question to answer.")
        if not self.classroom.store.answer(row.code, row.question, student, choice[:64], self.classroom.clock()):
            return _("This question is closed.")
        return _("Your answer is in. You can change it until the teacher reveals the answer.")

    @property
    def student_outputs(self) -> list:
        return [self.box, self.prompt, self.choice, self.said]

    @property
    def teacher_outputs(self) -> list:
        return [self.ask_row, self.tally, self.reveal]
