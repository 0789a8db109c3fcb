"""Lessons as files (issue 38 §4): read as untrusted input, edited, and the built-in lesson in both languages."""

from __future__ import annotations

import json

import pytest

from explorer import Explorer, ExplorerState
from explorer.i18n import speaking
from explorer.lessons import (
    FORMAT,
    MAX_BYTES,
    MAX_MOMENTS,
    Lesson,
    LessonError,
    Moment,
    built_in,
    note_html,
    read_lesson,
    read_lesson_path,
)
from explorer.questions import KINDS, ask

VIEW = {"model": "numbers-de", "source": "forty-two", "choices": [None]}


def lesson_file(**changes) -> dict:
    values = {"format": FORMAT, "version": 1, "title": "Numbers", "moments": [{"view": VIEW, "note": "Look."}]}
    return values | changes


def refused(values: object, language: str = "en") -> str:
    text = values if isinstance(values, (str, bytes)) else json.dumps(values)
    with speaking(language), pytest.raises(LessonError) as raised:
        read_lesson(text)
    return str(raised.value)


def test_a_lesson_goes_to_its_file_and_back_unchanged():
    lesson = read_lesson(json.dumps(lesson_file()))
    assert lesson.moments[0].state() == ExplorerState(model="numbers-de", source="forty-two", choices=(None,))
    assert read_lesson(lesson.to_json()) == lesson
    assert read_lesson(lesson.compact()) == lesson


def test_a_view_keeps_the_settings_of_a_link_but_not_the_viewers_own():
    state = ExplorerState(model="numbers-de", source="x", tab="beam", language="zh", presentation=True, layer=2)
    moment = Moment(view=state.settings())
    assert moment.view == {"model": "numbers-de", "source": "x", "layer": 2, "tab": "beam"}
    mine = ExplorerState(language="zh", presentation=True)
    assert moment.state(mine).language == "zh" and moment.state(mine).presentation
    assert moment.state().language == "en" and not moment.state().presentation


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ("{not json", "its JSON breaks at line 1, column 2"),
        ('{"moments": []}', 'it has no "format": "transformer-explorer-lesson"'),
        ("[1, 2]", "this is not a lesson file"),
        (b"\xff\xfe{}", "is text in UTF-8"),
        ("[" * 100_000 + "]" * 100_000, "too large"),
        ("[" * 20_000 + "]" * 20_000, "nested too deeply"),
        (lesson_file(colour="red"), "colour is not a setting of a lesson"),
        (lesson_file(version=2), "version must be one of: 1"),
        (lesson_file(title="x" * 201), "title is too long (at most 200 characters)"),
        (lesson_file(moments={"view": VIEW}), "moments must be a list"),
        (lesson_file(moments=[{"note": "no view"}]), "moment 1, view is missing"),
        (lesson_file(moments=[{"view": VIEW, "question": "why"}]), "moment 1, question must be one of"),
        (lesson_file(moments=[{"view": VIEW, "note": 3}]), "moment 1, note must be text"),
        (lesson_file(moments=[{"view": VIEW, "note": "x" * 2001}]), "moment 1, note is too long"),
        (lesson_file(moments=[{"view": VIEW}, {"view": {**VIEW, "strategy": "best"}}]), "moment 2, view: unknown"),
        (lesson_file(moments=[{"view": {**VIEW, "script": "alert(1)"}}]), "moment 1, view: the link holds unknown"),
        (lesson_file(moments=[{"view": {**VIEW, "choices": "all"}}]), "moment 1, view: invalid forced token"),
        (lesson_file(moments=[{"view": VIEW}] * (MAX_MOMENTS + 1)), "moments holds too many (at most 60)"),
    ],
)
def test_a_file_that_is_not_a_lesson_gets_a_clear_message(values, message):
    assert message in refused(values)


def test_a_10_mb_lesson_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.json"
    with path.open("wb") as file:
        file.truncate(10 * 1024 * 1024)
    with pytest.raises(LessonError, match=r"too large \(10.5 MB\); a lesson file is at most 48 KB"):
        read_lesson_path(path)
    with pytest.raises(LessonError, match="cannot be read"):
        read_lesson_path(tmp_path / "gone.json")


def test_the_messages_are_in_the_readers_language():
    assert "第 2 个时刻" in refused(lesson_file(moments=[{"view": VIEW}, {"view": {}, "note": 1}]), "zh")
    assert "不是" in refused("[1]", "zh")


@pytest.mark.parametrize(
    "note",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "[click](javascript:alert(1))",
        "[data](data:text/html;base64,PHNjcmlwdD4=)",
        "![x](http://elsewhere.example/track.png)",
        '<a href="http://x" onclick="alert(1)">x</a>',
    ],
)
def test_a_note_cannot_inject_html_or_script(note):
    shown = note_html(note)
    assert "<script" not in shown and "<img" not in shown and '<a href="http://x"' not in shown
    assert 'href="javascript:' not in shown and 'href="data:' not in shown


def test_a_note_is_markdown():
    shown = note_html("**Ask:** why *8*?\n\n- one\n- `two`\n\n[the paper](https://arxiv.org/abs/1706.03762)")
    assert "<strong>Ask:</strong>" in shown and "<em>8</em>" in shown and "<li><code>two</code></li>" in shown
    assert '<a target="_blank" rel="noopener noreferrer nofollow" href="https://arxiv.org/abs/1706.03762">' in shown


def test_moments_are_added_moved_changed_and_deleted():
    lesson = Lesson(title="mine")
    for steps in range(3):
        lesson = lesson.added(ExplorerState(model="numbers-de", source="one", choices=(None,) * steps), f"m{steps}")
    assert [m.note for m in lesson.moments] == ["m0", "m1", "m2"]
    lesson = lesson.added(ExplorerState(model="numbers-de", source="two"), "after the first", "next", at=0)
    assert [m.note for m in lesson.moments] == ["m0", "after the first", "m1", "m2"]
    assert lesson.moments[1].question == "next"
    assert [m.note for m in lesson.moved(3, -1).moments] == ["m0", "after the first", "m2", "m1"]
    assert lesson.moved(0, -1) == lesson and lesson.moved(3, 1) == lesson
    assert [m.note for m in lesson.removed(1).moments] == ["m0", "m1", "m2"]
    changed = lesson.changed(2, "new note", "layer")
    assert changed.moments[2].note == "new note" and changed.moments[2].question == "layer"
    assert changed.moments[2].view == lesson.moments[2].view
    with pytest.raises(LessonError, match="too long"):
        lesson.changed(0, "x" * 2001, None)


def test_a_lesson_stops_growing_at_its_limits():
    lesson = Lesson(moments=[Moment(view=VIEW)] * MAX_MOMENTS)
    with pytest.raises(LessonError, match="at most 60 moments"):
        lesson.added(ExplorerState())
    long = "x" * 2000
    lesson = Lesson()
    with pytest.raises(LessonError, match="the lesson is full"):
        for _ in range(MAX_MOMENTS):
            lesson = lesson.added(ExplorerState(source="y" * 500), long)
    assert len(lesson.to_json().encode()) <= MAX_BYTES


@pytest.mark.parametrize(
    ("language", "model", "sentence"), [("en", "en-de", "pharmacy"), ("zh", "zh-en", "今天天气真好")]
)
def test_the_built_in_lesson_opens_every_moment_and_asks_its_questions(registry, language, model, sentence):
    """The teacher's guide as a lesson: every view opens on the shipped model, and every question can be asked."""
    lesson = built_in(language)
    assert lesson.language == language and len(lesson.moments) >= 12
    assert {m.question for m in lesson.moments} >= set(KINDS)
    with speaking(language):
        for moment in lesson.moments:
            explorer = Explorer(registry, moment.state(ExplorerState(language=language)))
            assert explorer.state.model == model and sentence in explorer.state.source
            assert len(explorer.state.choices) == len(moment.view.get("choices", []))  # every step still fits
            if moment.question:
                question = ask(explorer, moment.question)
                assert question.answer in {c.key for c in question.choices}
    assert len(lesson.to_json().encode()) < MAX_BYTES / 4


# The page's lesson, without a browser: who may move the class, and the handout's route


@pytest.fixture(scope="module")
def lesson_page(registry):
    from ui.page import build_page

    page = build_page(registry)
    yield page
    page.close()


def test_next_moves_the_class_only_for_its_teacher_and_a_student_gets_the_note(lesson_page, registry):
    from types import SimpleNamespace

    from ui.class_panel import ClassPanel, read_seat, seat_json
    from ui.lesson_panel import LessonPanel, data_of

    classes = next(p for p in lesson_page.panels if isinstance(p, ClassPanel))
    lessons = next(p for p in lesson_page.panels if isinstance(p, LessonPanel))
    request = SimpleNamespace(client=SimpleNamespace(host="10.9.8.7"), headers={}, session_hash="s")
    teacher = Explorer(registry, ExplorerState(model="en-de", source="Hello!"))
    seat = classes.started(teacher, request)[classes.seat]
    code = read_seat(seat)["code"]
    lesson = built_in("en")
    opened = lessons.handled(lessons.from_guide)(teacher, "", seat, request)
    before = classes.classroom.store.find(code)
    assert before.moment == 0 and before.lesson and lesson.title in before.lesson  # the class holds the lesson now
    moved = lessons.handled(lessons.went(1))(teacher, opened[lessons.data], seat, request)
    row = classes.classroom.store.find(code)
    assert row.moment == 1 and row.question  # the class is at moment 2, and its question is asked
    assert "2 of 16" in moved[lessons.where]

    student = classes.joined(None, code)
    assert "Step: one next-token choice" in student[lessons.note]
    assert student[lessons.next]["visible"] is False

    student_seat = student[classes.seat]
    forged = seat_json("teacher", code, secret="guessed")
    for who in (student_seat, forged):
        said = lessons.handled(lessons.went(1))(teacher, data_of(lesson, 1), who, request)
        assert lessons.data not in said or classes.classroom.store.find(code).moment == 1
        assert classes.classroom.store.find(code).moment == 1  # neither moved the class


def test_moving_on_from_a_moments_question_reveals_it_so_that_no_page_stays_covered(lesson_page, registry):
    """The built-in lesson asks at moment 2; Next to moment 3 (no question of its own) reveals it: the students' and
    the projector's views were hidden by the open question for the rest of the lesson."""
    from types import SimpleNamespace

    from ui.class_panel import ClassPanel, read_seat
    from ui.lesson_panel import LessonPanel

    classes = next(p for p in lesson_page.panels if isinstance(p, ClassPanel))
    lessons = next(p for p in lesson_page.panels if isinstance(p, LessonPanel))
    request = SimpleNamespace(client=SimpleNamespace(host="10.9.8.6"), headers={}, session_hash="t")
    teacher = Explorer(registry, ExplorerState(model="en-de", source="Hello!"))
    seat = classes.started(teacher, request)[classes.seat]
    code = read_seat(seat)["code"]
    opened = lessons.handled(lessons.from_guide)(teacher, "", seat, request)
    at_two = lessons.handled(lessons.went(1))(teacher, opened[lessons.data], seat, request)
    asked = classes.classroom.store.find(code).question
    assert not classes.classroom.store.question(code, asked).revealed
    at_three = lessons.handled(lessons.went(1))(teacher, at_two[lessons.data], seat, request)
    assert classes.classroom.store.find(code).moment == 2
    assert classes.classroom.store.question(code, asked).revealed
    assert "class-open" not in at_three[classes.questions.tally] and "✓" in at_three[classes.questions.tally]


def test_the_handout_route_refuses_what_is_not_a_lesson(lesson_page, registry):
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from ui import handout

    client = TestClient(Starlette(routes=handout.routes(registry)))
    lesson = Lesson(title="<b>x</b>", moments=[Moment(view={"model": "numbers-de", "source": "two"}, note="<script>")])
    answer = client.post("/lesson/handout", files={"lesson": (None, lesson.compact()), "language": (None, "zh")})
    assert answer.status_code == 200 and "&lt;b&gt;x&lt;/b&gt;" in answer.text
    assert "<p>&lt;script&gt;</p>" in answer.text and answer.text.count("<script") == 3  # plotly, figures, its own
    assert "第 1 个时刻" in answer.text and 'id="figure-0"' in answer.text
    bad = client.post("/lesson/handout", files={"lesson": (None, "{nope"), "language": (None, "en")})
    assert bad.status_code == 400 and "its JSON breaks at line 1" in bad.text
    assert client.post("/lesson/handout", content=b"x" * 100).status_code == 400
    handout.BUSY.acquire()
    try:
        busy = client.post("/lesson/handout", files={"lesson": (None, lesson.compact())})
        assert busy.status_code == 429
    finally:
        handout.BUSY.release()
