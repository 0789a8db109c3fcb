"""A class's handlers on the page (issue 38), without a browser: who may drive it, what a follower gets (by its
Follow event, and fetched without one), and one answer per student."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from explorer import Explorer, ExplorerState
from ui.class_follow import FOLLOW, routes
from ui.class_panel import ClassPanel, read_seat, seat_json
from ui.gradio_patch import LeanSessionState
from ui.page import build_page

STATE = ExplorerState(model="numbers-de", source="three hundred and forty-two", choices=(None,))
REQUEST = SimpleNamespace(client=SimpleNamespace(host="10.1.2.3"), headers={"referer": "http://school:7860/?lang=en"})


@pytest.fixture(scope="module")
def page(registry):
    page = build_page(registry)
    yield page
    page.close()


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


def test_the_teachers_counts_redrawn_every_few_seconds_stay_in_the_teachers_language(panel, registry):
    """The projector's banner and tally, redrawn by the page's timer, in Chinese on a Chinese page (they came back
    in English a few seconds after the class started)."""
    explorer = Explorer(registry, STATE.replace(language="zh"))
    seat = panel.started(explorer, REQUEST)[panel.seat]
    panel.ask_handler(explorer, seat, "next", REQUEST)
    counted = panel.counted(explorer, seat, REQUEST)
    banner = counted[panel.banner]
    assert "加入网址" in banner and "Join at" not in banner and "Class code" not in banner
    tally = str(counted[panel.questions.tally])
    assert "answers" not in tally and "something else" not in tally
    assert "class-open" in tally  # until the reveal, the teacher's page covers the views too (assets/style.css)
    panel.reveal_handler(explorer, seat, REQUEST)
    assert "class-open" not in str(panel.counted(explorer, seat, REQUEST)[panel.questions.tally])


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


def test_a_page_the_server_lost_follows_in_the_language_its_switch_shows(panel, registry, teaching):
    """After a restart the server has no explorer for a page that went on as it was: its Follow sends the page's
    language, and the class's view comes in it (it came in English); a value that is no language is English."""
    explorer, seat = teaching
    _student, student_seat = joined(panel, registry, read_seat(seat)["code"])
    explorer.step()
    panel.classroom.publish(_seat_of(seat), explorer.state)
    for sent, language in (("zh", "zh"), ("en", "en"), ("klingon", "en"), (None, "en")):
        updates = panel.follow_handler(None, student_seat, sent)
        assert updates[panel.page.explorer].state.language == language, sent
        student_seat = seat_json(**{**json.loads(updates[panel.seat]), "version": -1})  # the next one draws it again


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
    answered = panel.answer_handler(None, student_seat, keys[0])
    said = answered[panel.page.status]
    assert answered[panel.questions.said] == said  # under the choices too, where a phone's student looks
    assert said.startswith("Your answer is in")
    panel.answer_handler(None, student_seat, keys[1])
    assert panel.classroom.store.tally(code, row.question) == {keys[1]: 1}
    updates = panel.reveal_handler(explorer, seat, REQUEST)
    assert "class-right" in updates[panel.questions.tally]
    assert panel.answer_handler(None, student_seat, keys[0])[panel.page.status] == "This question is closed."
    assert panel.classroom.store.tally(code, row.question) == {keys[1]: 1}


# A page takes what the teacher's move changes on it without a page event (`ui.class_follow`): drawn once for all the
# pages alike, the same outputs the page's Follow would draw, and the page's session brought up to it before its next
# event.


def session(name: str) -> SimpleNamespace:
    return SimpleNamespace(session_hash=name, client=REQUEST.client, headers=REQUEST.headers)


def a_class(panel, registry, students: int = 2, languages=("en", "en")):
    """A teacher's class at STATE after one Step, and `students` pages that joined it (in `languages`): the
    teacher's explorer, seat, and the students' (explorer, seat) before the Step."""
    teacher = Explorer(registry, STATE)
    seat = panel.started(teacher, REQUEST)[panel.seat]
    code = read_seat(seat)["code"]
    pages = []
    for i in range(students):
        mine = Explorer(registry, STATE.replace(language=languages[i]))
        updates = panel.joined(mine, code, session(f"page-{i}"))
        keeps(panel, f"page-{i}", updates[panel.page.explorer])
        pages.append((updates[panel.page.explorer], read_seat(updates[panel.seat])))
    teacher.step()
    panel.classroom.publish(_seat_of(seat), teacher.state)  # as the teacher page's /class/show does
    return teacher, seat, pages


def keeps(panel, name: str, explorer: Explorer) -> None:
    """The session `name` on the server holds `explorer`, as after the page's event."""
    holder = panel.page.demo.state_holder
    if not hasattr(holder, "blocks"):  # (set when the app launches)
        holder.set_blocks(panel.page.demo)
    holder[name][panel.page.explorer._id] = explorer


def fetched(panel, seat: dict, shown: str) -> bytes:
    """What `GET /class/view` answers a page with `seat` that shows the state `shown`."""
    marks = {"following": seat.get("following", False), "asked": seat.get("asked", ""), "noted": seat.get("noted", "")}
    return asyncio.run(panel.follows.view(seat["code"], seat["student"], seat.get("page", ""), marks, shown))


def ask(panel, shown, seat):
    return json.loads(fetched(panel, seat, shown))


def by_id(panel, answer: dict) -> dict:
    return {block.elem_id: value for block, value in zip(panel.follows.apply.outputs, answer["outputs"], strict=True)}


def value_of(output):
    return output.get("value") if isinstance(output, dict) and output.get("__type__") == "update" else output


def test_a_follower_gets_the_teachers_new_view_as_its_follow_would_draw_it(panel, registry):
    teacher, _seat, [(student, seat), _] = a_class(panel, registry)
    answer = ask(panel, student.state.to_link(), seat)
    row = panel.classroom.store.find(seat["code"])
    assert answer["version"] == row.version
    outputs = by_id(panel, answer)
    assert value_of(outputs["output-text"]) == teacher.snapshot().output_text
    assert "state=" in value_of(outputs["share-link"])
    shown = ExplorerState.from_link(value_of(outputs["share-link"]).split("state=")[1].split(")")[0].split('"')[0])
    assert shown.choices == teacher.state.choices
    # the seat's places are the page's to fill (its own student and version)
    assert [panel.follows.apply.outputs[i] for i in answer["seat"]] == [panel.seat, panel.stream]
    # the page's Follow draws the same text
    follow = panel.follow_handler(student, json.dumps(seat), request=session("page-0"))
    assert follow[panel.page.explorer].snapshot().output_text == teacher.snapshot().output_text


def test_the_view_is_drawn_once_for_every_page_that_shows_the_same(panel, registry, monkeypatch):
    _teacher, _seat, [(first, one), (second, two)] = a_class(panel, registry)
    drawn = []
    showing_from = panel.showing_from
    monkeypatch.setattr(panel, "showing_from", lambda *args: drawn.append(args) or showing_from(*args))
    bodies = [fetched(panel, one, first.state.to_link()), fetched(panel, two, second.state.to_link())]
    assert len(drawn) == 1 and bodies[0] is bodies[1]  # the second page's answer is the first's bytes
    # a page in Chinese is drawn for apart, in its language
    chinese = first.state.replace(language="zh").to_link()
    body = fetched(panel, one, chinese)
    assert len(drawn) == 2 and body != bodies[0] and drawn[1][1].language == "zh"


def test_a_question_reaches_each_page_with_its_own_answer_and_what_cannot_be_served_goes_to_the_follow_event(
    panel, registry
):
    teacher, seat, [(student, mine), (_, other)] = a_class(panel, registry)
    shown = student.state.to_link()
    panel.ask_handler(teacher, seat, "next", REQUEST)  # a question: every page gets it with the view
    answer = by_id(panel, ask(panel, shown, mine))
    row = panel.classroom.store.find(mine["code"])
    assert answer["class-question"]["visible"] is True and answer["class-choice"]["interactive"] is True
    assert ask(panel, shown, mine)["asked"] == panel.marks(row)[0] == str(row.question)
    key = answer["class-choice"]["choices"][0][1]
    panel.answer_handler(student, json.dumps(mine), key)
    panel.reveal_handler(teacher, seat, REQUEST)
    revealed = [by_id(panel, ask(panel, shown, s)) for s in (mine, other)]
    assert revealed[0]["class-choice"]["value"] == key and revealed[1]["class-choice"]["value"] is None
    assert revealed[0]["class-prompt"] != revealed[1]["class-prompt"]  # "You were right." or "Not this time."
    # a page that has more drawn than its move needs (other states than the one it shows): its Follow event
    chinese = [student.state.replace(language="zh", presentation=p).to_link() for p in (False, True)]
    assert [fetched(panel, other, shown) != FOLLOW for shown in (shown, *chinese)] == [True, True, True]
    assert fetched(panel, other, student.state.replace(source="Hello.").to_link()) == FOLLOW
    assert fetched(panel, other, shown) != FOLLOW  # (what is drawn already costs nothing)
    # a page this process has not seen (after a restart), a broken state, a class that ended: the Follow event
    assert fetched(panel, {**mine, "student": "a stranger"}, shown) == FOLLOW
    assert fetched(panel, mine, "%%%") == FOLLOW
    panel.left(teacher, seat)
    assert fetched(panel, mine, shown) == FOLLOW


def test_two_pages_of_one_seat_each_have_their_own_session_and_a_page_with_models_of_its_own_draws_its_own(
    panel, registry, monkeypatch
):
    _teacher, _seat, [(student, mine), _] = a_class(panel, registry)
    again = {"role": "student", "code": mine["code"], "student": mine["student"], "following": True}
    updates = panel.followed(Explorer(registry, STATE), again, request=session("page-0-tab-2"))  # the seat's link
    keeps(panel, "page-0-tab-2", updates[panel.page.explorer])
    twin, shown, follows = read_seat(updates[panel.seat]), student.state.to_link(), panel.follows
    assert twin["student"] == mine["student"] and twin["page"] != mine["page"]
    assert fetched(panel, mine, shown) != FOLLOW and "page-0" in follows.behind and "page-0-tab-2" not in follows.behind
    assert fetched(panel, twin, shown) != FOLLOW and "page-0-tab-2" in follows.behind
    assert fetched(panel, {**mine, "page": "0" * 24}, shown) == FOLLOW  # a page key this process never gave
    assert fetched(panel, {**mine, "student": "someone else"}, shown) == FOLLOW  # another seat's page
    monkeypatch.setattr(panel.page, "registry_of", lambda explorer: object())  # a model of its own (Train tab)
    assert fetched(panel, mine, shown) == FOLLOW


def test_the_pages_session_catches_up_before_its_next_event(panel, registry):
    teacher, seat, [(student, mine), _] = a_class(panel, registry)
    panel.ask_handler(teacher, seat, "next", REQUEST)
    follows, page = panel.follows, panel.page
    fetched(panel, mine, student.state.to_link())
    assert "page-0" in follows.behind
    state = LeanSessionState(page.demo)
    state[page.explorer._id] = student  # the session still holds the view before the Step
    asyncio.run(follows.catch_up(follows.apply, state, "page-0"))  # (the Apply event itself never reaches it)
    assert state[page.explorer._id] is student
    asyncio.run(follows.catch_up(follows.follow, state, "page-0"))
    caught = state[page.explorer._id]
    assert caught is not student and caught.state.choices == teacher.state.choices
    assert caught.snapshot().output_text == teacher.snapshot().output_text and "page-0" not in follows.behind
    # and the session's components hold what the page shows: the question's choices, which an answer is checked
    # against (the page's own component has none)
    choice = panel.questions.choice
    assert len(state[choice._id].choices) == 5 and not choice.choices
    assert page.demo.before_event == follows.catch_up


def test_the_route_answers_follow_for_anything_it_cannot_serve(panel):
    client = TestClient(Starlette(routes=routes(panel.follows)))
    for query in ("", "?class=!!!", "?class=ABCDEF&student=nobody&shown=x"):
        reply = client.get(f"/class/view{query}")
        assert reply.status_code == 200 and reply.json() == {"follow": True}
        assert reply.headers["cache-control"] == "no-store"
