"""A class's handlers on the page (issue 38), without a browser: who may drive it, what a follower gets, and one
answer per student."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from explorer import Explorer, ExplorerState
from ui.class_panel import ClassPanel, read_seat, seat_json
from ui.page import build_page

STATE = ExplorerState(model="numbers-de", source="three hundred and forty-two", choices=(None,))
REQUEST = SimpleNamespace(client=SimpleNamespace(host="10.1.2.3"), headers={"referer": "http://school:7860/?lang=en"})


@pytest.fixture(scope="module")
def page(registry):
    return build_page(registry)


@pytest.fixture
def panel(page):
    return next(panel for panel in page.panels if isinstance(panel, ClassPanel))


@pytest.fixture
def teaching(panel, registry):
    """A class started by a teacher's page at STATE: (the teacher's explorer, its seat as the browser keeps it)."""
    explorer = Explorer(registry, STATE)
    updates = panel.started(explorer, REQUEST)
    return explorer, updates[panel.seat]


def joined(panel, registry, code: str) -> tuple[Explorer, str]:
    updates = panel.joined(None, code)
    return updates[panel.page.explorer], updates[panel.seat]


def test_the_teacher_gets_a_code_a_qr_code_and_a_link_for_students(panel, teaching):
    _explorer, seat = teaching
    seat = read_seat(seat)
    assert seat["role"] == "teacher" and len(seat["secret"]) >= 32
    assert seat["link"] == f"http://school:7860/?class={seat['code']}"
    banner = panel.banner_html(seat, REQUEST)
    assert seat["code"] in banner and "data:image/svg+xml" in banner and "0 connected · 0 following" in banner


def test_a_student_follows_the_teachers_view_in_its_own_language(panel, registry, teaching):
    explorer, seat = teaching
    code = read_seat(seat)["code"]
    student, student_seat = joined(panel, registry, code.lower())
    assert student.state.source == STATE.source and student.state.choices == STATE.choices
    explorer.step()
    panel.classroom.publish(_seat_of(seat), explorer.state)  # as the teacher page's /class/show does
    mine = Explorer(registry, student.state.replace(language="zh"))
    updates = panel.follow_handler(mine, student_seat)
    assert updates[panel.page.explorer].state.choices == (None, None)
    assert updates[panel.page.explorer].state.language == "zh"
    assert json.loads(updates[panel.seat])["version"] == panel.classroom.store.find(code).version


def _seat_of(seat_value: str):
    from explorer.classroom import Seat, Teacher

    seat = read_seat(seat_value)
    return Seat(seat["code"], teacher=Teacher(seat["code"], seat["secret"]))


def test_a_student_cannot_ask_reveal_or_end_and_a_forged_teacher_seat_is_refused(panel, registry, teaching):
    explorer, seat = teaching
    code = read_seat(seat)["code"]
    _student, student_seat = joined(panel, registry, code)
    forged = seat_json("teacher", code, secret="not the secret")
    for handler in (
        lambda s: panel.ask_handler(explorer, s, "next", REQUEST),
        lambda s: panel.reveal_handler(explorer, s, REQUEST),
    ):
        for seat_value in (student_seat, forged, "", "{not json"):
            said = handler(seat_value)[panel.page.status]
            assert "not valid" in said
    assert panel.classroom.store.find(code).question == 0  # nothing was asked
    assert "not valid" in panel.left(explorer, forged)[panel.page.status]
    assert panel.classroom.store.find(code) is not None  # nor ended


def test_one_answer_per_student_changeable_until_the_reveal(panel, registry, teaching):
    explorer, seat = teaching
    code = read_seat(seat)["code"]
    _student, student_seat = joined(panel, registry, code)
    panel.ask_handler(explorer, seat, "next", REQUEST)
    row = panel.classroom.store.find(code)
    question = panel.classroom.store.question(code, row.question)
    keys = [choice["key"] for choice in json.loads(question.body)["choices"]]
    said = panel.answer_handler(None, student_seat, keys[0])[panel.page.status]
    assert said.startswith("Your answer is in")
    panel.answer_handler(None, student_seat, keys[1])
    assert panel.classroom.store.tally(code, row.question) == {keys[1]: 1}
    updates = panel.reveal_handler(explorer, seat, REQUEST)
    assert "class-right" in updates[panel.questions.tally]
    assert panel.answer_handler(None, student_seat, keys[0])[panel.page.status] == "This question is closed."
    assert panel.classroom.store.tally(code, row.question) == {keys[1]: 1}
