"""A class with no accounts (issue 38 §1): codes, the teacher's secret, limits, expiry, and one class shared by
two processes through the SQLite store."""

from __future__ import annotations

import multiprocessing
import string

import pytest

from explorer.class_store import ClassFull, ClassRow, SQLiteStore
from explorer.classroom import ALPHABET, CODE_LENGTH, Classroom, ClassroomError, Limits, new_code, normal_code
from explorer.state import ExplorerState


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def classroom(tmp_path, clock):
    return Classroom(SQLiteStore(tmp_path / "classes.db"), Limits(classes=3, students=2, idle_s=100), clock)


def test_a_code_has_six_characters_none_of_them_a_look_alike():
    assert set(ALPHABET).isdisjoint("0O1IL")
    codes = {new_code() for _ in range(200)}
    assert len(codes) == 200 and all(len(c) == CODE_LENGTH and set(c) <= set(ALPHABET) for c in codes)
    assert normal_code(" ab2-c3 ") is None  # five characters once spaces and dashes are dropped
    assert normal_code("ab-2c3d") == "AB2C3D"
    for bad in ("AB2C3O", "AB2C3", "", None, 123456, "A" * 40):
        assert normal_code(bad) is None


def test_the_teacher_secret_is_long_stored_hashed_and_drives_only_its_class(classroom, tmp_path):
    first = classroom.start(ExplorerState(source="Hello!"))
    second = classroom.start()
    assert len(first.secret) >= 32 and set(first.secret) <= set(string.ascii_letters + string.digits + "-_")
    assert first.code != second.code
    raw = (tmp_path / "classes.db").read_bytes() + (tmp_path / "classes.db-wal").read_bytes()
    assert first.secret.encode() not in raw  # only its hash is stored
    assert classroom.teacher(first.code, first.secret, "a").code == first.code
    assert classroom.teacher(first.code.lower(), first.secret, "a").code == first.code
    for code, secret in [(first.code, second.secret), (second.code, first.secret), (first.code, ""), (first.code, 7)]:
        with pytest.raises(ClassroomError, match="this teacher link is not valid"):
            classroom.teacher(code, secret, "b")


def test_an_address_that_guesses_too_often_is_refused_for_a_while(tmp_path, clock):
    limits = Limits(guesses=3, guess_window_s=60)
    classroom = Classroom(SQLiteStore(tmp_path / "c.db"), limits, clock)
    teacher = classroom.start()
    for _ in range(3):
        with pytest.raises(ClassroomError, match="not valid"):
            classroom.teacher(teacher.code, "guess", "10.0.0.9")
    with pytest.raises(ClassroomError, match="too many wrong teacher links"):
        classroom.teacher(teacher.code, teacher.secret, "10.0.0.9")  # even the right secret, until they age out
    assert classroom.teacher(teacher.code, teacher.secret, "10.0.0.8")  # another address is not held back
    clock.now += 61
    assert classroom.teacher(teacher.code, teacher.secret, "10.0.0.9")


def test_students_join_by_code_and_follow_the_teachers_view_in_their_own_language(classroom):
    teacher = classroom.start(ExplorerState(source="Hello!"))
    row = classroom.join(teacher.code.lower(), "page-1")
    assert classroom.view(row, "zh").source == "Hello!" and classroom.view(row, "zh").language == "zh"
    shown = ExplorerState(source="Good morning!", layer=1, head=2)
    version = classroom.show(teacher, shown)
    assert version == row.version + 1
    news = classroom.news(teacher.code, "page-1", following=True)
    assert news.version == version and classroom.view(news, "en") == shown
    with pytest.raises(ClassroomError, match="there is no class with this code"):
        classroom.join("ZZZZZZ", "page-2")
    with pytest.raises(ClassroomError, match="this teacher link is not valid"):
        classroom.show(type(teacher)(teacher.code, "not the secret"), shown)


def test_the_limits_each_have_a_clear_message(classroom, clock):
    teachers = [classroom.start() for _ in range(3)]
    with pytest.raises(ClassroomError, match="already runs 3 classes, its limit"):
        classroom.start()
    classroom.join(teachers[0].code, "a")
    classroom.join(teachers[0].code, "b")
    classroom.join(teachers[0].code, "a")  # joining again is not a new student
    with pytest.raises(ClassroomError, match=r"this class is full \(2 students\)"):
        classroom.join(teachers[0].code, "c")
    clock.now += 101  # every class idle longer than idle_s: gone, and its place free
    with pytest.raises(ClassroomError, match="there is no class with this code"):
        classroom.join(teachers[1].code, "a")
    assert classroom.start() and classroom.store.count_classes() == 1


def test_counts_are_of_pages_heard_from_recently_and_of_those_that_follow(classroom, clock):
    teacher = classroom.start()
    for student in ("a", "b"):
        classroom.join(teacher.code, student)
    classroom.news(teacher.code, "a", following=True)
    classroom.news(teacher.code, "b", following=False)
    assert classroom.counts(teacher.code) == (2, 1)
    clock.now += classroom.limits.connected_s + 1
    classroom.news(teacher.code, "b", following=True)
    assert classroom.counts(teacher.code) == (1, 1)  # "a" has not asked for news since


def test_one_answer_per_student_per_question_changeable_until_the_reveal(tmp_path):
    store = SQLiteStore(tmp_path / "c.db")
    store.open_class(ClassRow("ABCDEF", b"h", 0, 0, 1, "", "", 0, 0), max_classes=5)
    store.open_class(ClassRow("GHJKMN", b"i", 0, 0, 1, "", "", 0, 0), max_classes=5)
    number = store.ask("ABCDEF", '{"kind": "next"}', 1)
    assert number == 1 and store.find("ABCDEF").question == 1 and store.find("ABCDEF").version == 2
    assert store.answer("ABCDEF", 1, "a", "Haus", 2) and store.answer("ABCDEF", 1, "b", "Haus", 2)
    assert store.answer("ABCDEF", 1, "a", "Hause", 3)  # "a" changes its mind: still one answer
    assert store.tally("ABCDEF", 1) == {"Haus": 1, "Hause": 1}
    assert store.tally("GHJKMN", 1) == {} and not store.answer("GHJKMN", 1, "a", "x", 3)  # another class's
    assert store.reveal("ABCDEF", 1, 4) == 3 and store.question("ABCDEF", 1).revealed
    assert not store.answer("ABCDEF", 1, "c", "Haus", 5)  # closed by the reveal
    assert store.tally("ABCDEF", 1) == {"Haus": 1, "Hause": 1}
    assert store.ask("ABCDEF", "{}", 6) == 2 and store.ask("GHJKMN", "{}", 6) == 1


def test_the_store_refuses_what_is_over_its_limits(tmp_path):
    store = SQLiteStore(tmp_path / "c.db")
    store.open_class(ClassRow("ABCDEF", b"h", 0, 0, 1, "", "", 0, 0), max_classes=1)
    with pytest.raises(ClassFull):
        store.open_class(ClassRow("GHJKMN", b"i", 0, 0, 1, "", "", 0, 0), max_classes=1)
    assert store.expire(before=1) == ["ABCDEF"] and store.find("ABCDEF") is None


def test_a_class_survives_a_restart_of_the_store(tmp_path, clock):
    path = tmp_path / "classes.db"
    classroom = Classroom(SQLiteStore(path), clock=clock)
    teacher = classroom.start(ExplorerState(source="Hello!"))
    classroom.join(teacher.code, "a")
    number = classroom.store.ask(teacher.code, '{"kind": "next"}', clock.now)
    classroom.store.answer(teacher.code, number, "a", "Hallo", clock.now)
    classroom.store.close()
    again = Classroom(SQLiteStore(path), clock=clock)  # a new process, the same file
    row = again.teacher(teacher.code, teacher.secret, "a")
    assert again.view(row, "en").source == "Hello!" and row.question == number
    assert again.store.tally(teacher.code, number) == {"Hallo": 1}


def _student_process(path: str, code: str, versions, done) -> None:
    """Another app process: joins the class, and records each new version it sees until told to stop."""
    classroom = Classroom(SQLiteStore(path))
    row = classroom.join(code, "page-in-process-2")
    seen = row.version
    versions.put((seen, classroom.view(row, "zh").source))
    while not done.is_set():
        row = classroom.news(code, "page-in-process-2", following=True)
        if row.version != seen:
            seen = row.version
            versions.put((seen, classroom.view(row, "zh").source))


def test_one_class_is_served_by_two_processes(tmp_path):
    path = str(tmp_path / "classes.db")
    classroom = Classroom(SQLiteStore(path))
    teacher = classroom.start(ExplorerState(source="one"))
    context = multiprocessing.get_context("spawn")
    versions, done = context.Queue(), context.Event()
    process = context.Process(target=_student_process, args=(path, teacher.code, versions, done))
    process.start()
    try:
        assert versions.get(timeout=30) == (1, "one")
        for n, sentence in enumerate(["two", "three", "four"], start=2):
            assert classroom.show(teacher, ExplorerState(source=sentence)) == n
            assert versions.get(timeout=10) == (n, sentence)
        assert classroom.counts(teacher.code) == (1, 1)  # the other process's page, counted here
    finally:
        done.set()
        process.join(timeout=10)
    assert process.exitcode == 0


def test_the_teachers_page_publishes_only_changes_and_never_its_own_language_or_layout(classroom):
    from explorer.classroom import Seat, join_link, qr_svg

    teacher = classroom.start()
    seat = Seat(teacher.code, teacher=teacher)
    mine = ExplorerState(source="Hello!", language="zh", presentation=True, layer=1)
    assert classroom.publish(seat, mine) and seat.version == 2
    assert not classroom.publish(seat, mine.replace(language="en"))  # the teacher's own language: nothing to show
    assert not classroom.publish(Seat(teacher.code, student="page"), mine.replace(layer=2))  # a student cannot
    row = classroom.join(teacher.code, "page")
    assert row.version == 2
    phone = ExplorerState(language="en", presentation=False, training='{"task": "copy"}')
    followed = classroom.view(row, phone)
    assert followed == ExplorerState(source="Hello!", layer=1, training='{"task": "copy"}')  # their own kept
    assert classroom.publish(seat, mine.replace(layer=2)) and classroom.store.find(teacher.code).version == 3
    link = join_link("http://10.0.0.5:7860/?state=abc", teacher.code)
    assert link == f"http://10.0.0.5:7860/?class={teacher.code}"
    assert qr_svg(link).startswith("data:image/svg+xml;charset=utf-8,%3Csvg")


def test_only_the_teachers_secret_shows_the_class_a_view_through_the_api(classroom):
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from ui.class_panel import routes

    teacher = classroom.start(ExplorerState(source="one"))
    client = TestClient(Starlette(routes=routes(classroom)))
    view = ExplorerState(source="two").to_link()
    for body in (
        {"class": teacher.code, "secret": "guess", "state": view},  # a student's guess
        {"class": teacher.code, "state": view},
        {"class": "ZZZZZZ", "secret": teacher.secret, "state": view},
    ):
        answer = client.post("/class/show", json=body)
        assert answer.status_code == 403 and "not valid" in answer.json()["detail"]
    assert client.post("/class/show", content=b"not json").status_code == 400
    assert client.post("/class/show", json=["a list"]).status_code == 400
    bad_view = client.post("/class/show", json={"class": teacher.code, "secret": teacher.secret, "state": "!!"})
    assert bad_view.status_code == 403 and "link" in bad_view.json()["detail"]
    assert classroom.store.find(teacher.code).version == 1  # nothing changed the class
    good = client.post("/class/show", json={"class": teacher.code, "secret": teacher.secret, "state": view})
    assert good.json() == {"version": 2} and classroom.view(classroom.store.find(teacher.code), "en").source == "two"


def test_two_classes_never_see_each_others_views_or_answers(classroom):
    first, second = classroom.start(ExplorerState(source="first")), classroom.start(ExplorerState(source="second"))
    classroom.join(first.code, "a")
    classroom.join(second.code, "b")
    now = classroom.clock()
    one, two = classroom.store.ask(first.code, "{}", now), classroom.store.ask(second.code, "{}", now)
    classroom.store.answer(first.code, one, "a", "x", now)
    classroom.store.answer(second.code, two, "b", "y", now)
    assert classroom.store.tally(first.code, one) == {"x": 1} and classroom.store.tally(second.code, two) == {"y": 1}
    assert not classroom.store.answer(second.code, two + 5, "a", "x", now)
    assert classroom.view(classroom.news(second.code, "b", True), "en").source == "second"
    assert classroom.counts(first.code) == (1, 1) and classroom.counts(second.code) == (1, 1)
