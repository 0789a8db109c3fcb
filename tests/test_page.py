"""What the page computes for an event: only what the user can see, and what two users ask alike only once."""

from __future__ import annotations

import pytest
import torch

from explorer import Explorer, ExplorerError, ExplorerState, cache, inside
from explorer.cache import SharedCache, size_of
from ui.decoding import DecodingPanel
from ui.page import build_page
from ui.settings import DEFAULTS, NAMES
from ui.tabs import AttentionTab, InsideTab, MasksTab, TwinsTab, WalkthroughTab
from ui.tabs import walkthrough as walkthrough_tab


def values(**changes) -> list:
    settings = DEFAULTS | {"model": "numbers-de", "source": "three hundred and forty-two"} | changes
    return [settings[name] for name in NAMES]


@pytest.fixture(scope="module")
def page(registry):
    page = build_page(registry)
    yield page
    page.close()


def panel_of(page, kind):
    return next(panel for panel in page.panels if isinstance(panel, kind))


@pytest.fixture
def counted(monkeypatch):
    """How often the worked step and the tour are computed (the two costly views of hidden tabs)."""
    calls = {"worked": 0, "tour": 0}
    real_worked, real_tour = Explorer.worked_step, walkthrough_tab.walkthrough.tour

    def worked(explorer):
        calls["worked"] += 1
        return real_worked(explorer)

    def tour(explorer, worked_step=None):
        calls["tour"] += 1
        return real_tour(explorer, worked_step)

    monkeypatch.setattr(Explorer, "worked_step", worked)
    monkeypatch.setattr(walkthrough_tab.walkthrough, "tour", tour)
    return calls


def test_a_settings_change_draws_no_hidden_tab_but_keeps_its_controls_in_range(page, counted):
    explorer = page.apply(None, *values())[page.explorer]
    assert explorer.state.tab == "attention"
    updates = page.apply(explorer, *values(layer=1, family="encoder"))
    tour, stage = panel_of(page, WalkthroughTab), panel_of(page, InsideTab)
    assert counted == {"worked": 0, "tour": 0}  # neither the walkthrough nor Inside a step was worked out
    assert not set(updates) & {*tour.outputs, *stage.outputs}
    assert set(stage.controls) <= set(updates)  # … but their sliders follow the model, open or not
    shown = panel_of(page, AttentionTab)
    assert set(shown.outputs) <= set(updates)  # the open tab is drawn


def test_opening_a_tab_draws_it_for_the_current_step(page, counted):
    explorer = page.apply(None, *values())[page.explorer]
    page.action(lambda e: e.step() and None, moves=True)(explorer, *values())
    tour = panel_of(page, WalkthroughTab)
    opened = page.opened("walkthrough")(explorer)
    assert counted == {"worked": 1, "tour": 1}
    assert set(tour.outputs) <= set(opened)
    assert "the one at position 1 " in opened[tour.sections[0].text]  # the tokens section, at the step taken


def test_a_step_with_the_walkthrough_open_works_the_step_out_once(page, counted):
    explorer = page.apply(None, *values())[page.explorer]
    page.opened("walkthrough")(explorer)
    counted.update(worked=0, tour=0)
    page.action(lambda e: e.step() and None, moves=True)(explorer, *values())
    assert counted == {"worked": 1, "tour": 1}


def test_two_users_at_the_same_step_share_the_snapshot_and_the_worked_step(registry, monkeypatch):
    shared = SharedCache(64 * 2**20)
    monkeypatch.setattr(cache, "SHARED", shared)
    monkeypatch.setattr("explorer.session.SHARED", shared)
    state = ExplorerState(model="numbers-de", source="ninety-seven")
    first, second = Explorer(registry, state), Explorer(registry, state)
    for explorer in (first, second):
        explorer.step()
    snapshots = [explorer.snapshot() for explorer in (first, second)]
    assert snapshots[0] is snapshots[1]  # one snapshot (and one forward pass in it), two users
    assert shared.stats()["hits"] == 1 and shared.stats()["misses"] == 2  # the snapshot, and its forward pass
    worked = [inside.worked_step(explorer) for explorer in (first, second)]
    assert worked[0] is worked[1]
    second.update(causal_mask=False)  # a different switch is a different computation
    assert second.snapshot().decoder_self is not snapshots[0].decoder_self
    assert first.snapshot() is snapshots[0]  # the same state again: the same snapshot, not even a look-up
    assert shared.stats()["hits"] == 2


def test_the_shared_cache_keeps_within_its_bytes_and_drops_the_least_recently_used():
    shared = SharedCache(3 * (4000 + 64))
    made = []

    def tensor(key):
        def compute():
            made.append(key)
            return torch.zeros(1000)  # 4,000 bytes

        return shared.get(key, compute)

    for key in "abc":
        tensor(key)
    tensor("a")  # used again: "b" is now the least recently used
    tensor("d")
    assert shared.stats()["entries"] == 3 and shared.bytes <= shared.max_bytes
    tensor("a"), tensor("c"), tensor("d")
    assert made == ["a", "b", "c", "d"]  # nothing recomputed but what was dropped
    tensor("b")
    assert made == ["a", "b", "c", "d", "b"]
    assert shared.stats()["hit_rate"] == pytest.approx(4 / 9, abs=1e-4)
    too_big = shared.get("big", lambda: torch.zeros(10_000))  # larger than the whole cache: computed, not kept
    assert too_big.numel() == 10_000 and "big" not in shared._entries


def test_size_of_counts_tensors_strings_and_what_dataclasses_hold():
    assert size_of(torch.zeros(10, dtype=torch.float32)) == 40 + 64
    assert size_of("abc") == 3 + 64
    assert size_of((torch.zeros(2), ["xy"])) == 64 + (8 + 64) + (64 + 2 + 64)


def test_the_walkthrough_is_written_once_for_every_user_at_the_same_step_and_never_enlarged_in_place(
    registry, monkeypatch
):
    from explorer import walkthrough as tour_of
    from ui.page import enlarged_for_presentation

    shared = SharedCache(64 * 2**20)
    for module in ("explorer.session", "explorer.walkthrough"):
        monkeypatch.setattr(f"{module}.SHARED", shared)
    state = ExplorerState(model="numbers-de", source="ninety-seven")
    first, second = Explorer(registry, state), Explorer(registry, state.replace(layer=1, tab="walkthrough"))
    for explorer in (first, second):
        explorer.step()
    sections = tour_of.tour(first)
    assert tour_of.tour(second) is sections  # a view setting changes nothing the tour says
    second.update(causal_mask=False)
    assert tour_of.tour(second) is not sections  # … a switch does
    plot = next(section.plot for section in sections if section.plot is not None)
    height = plot.layout.height
    shown = enlarged_for_presentation({"plot": plot}, state.replace(presentation=True))["plot"]
    assert shown.layout.height > height and plot.layout.height == height  # the shared figure is left as it was


# --- the device ------------------------------------------------------------------------------------------------------


def test_the_app_runs_where_the_environment_asks_else_on_a_gpu_where_there_is_one():
    from explorer.config import Config
    from ui.runtime import chosen_device

    assert chosen_device(Config.from_environ({}).device) == ("cuda" if torch.cuda.is_available() else "cpu")
    assert chosen_device(Config.from_environ({"EXPLORER_DEVICE": " CPU "}).device) == "cpu"
    for asked, said in [("gpu", "is not a device: choose cpu or cuda"), ("mps", "runs on cpu or cuda")]:
        with pytest.raises(SystemExit, match=said):  # stopped at the start, saying why, not at the first Step
            chosen_device(asked)
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="sees no CUDA GPU here: unset it to run on the CPU"):
            chosen_device("cuda")


def test_the_model_panel_says_which_device_runs_the_model():
    from explorer.i18n import speaking
    from ui.runtime import device_said

    assert device_said("cpu") == "Runs on the CPU."
    with speaking("zh"):
        assert device_said("cpu") == "运行在 CPU 上。"
    if torch.cuda.is_available():
        assert device_said("cuda:0").startswith("Runs on a GPU: ") and "(cuda:0)" in device_said("cuda:0")


def test_the_tab_bar_holds_seven_tabs_and_nothing_else(page):
    """Issue 35: gradio numbers a tab by its place among everything the tab bar holds, and its bar by the tabs alone;
    two `gr.State`s made among the tabs shifted every later tab by two, so that a tab picked from the overflow menu
    took another's place (shown twice, Share gone). The bar holds tabs only, and seven of them fit one row."""
    config = page.demo.get_config_file()
    kinds = {component["id"]: component["type"] for component in config["components"]}

    def children_of(node, wanted):
        if node["id"] == wanted:
            return node["children"]
        return next((found for child in node.get("children", []) if (found := children_of(child, wanted))), None)

    held = children_of(config["layout"], page.tabs._id)
    assert [kinds[child["id"]] for child in held] == ["tabitem"] * 7
    assert list(page.tab_by_key) == ["attention", "inside", "why", "walkthrough", "experiments", "beam", "train"]
    assert page.tabs.overflow_behavior == "wrap"  # narrower than seven tabs, a second row, never a menu


def test_a_link_to_a_view_that_became_a_section_opens_its_tab(page):
    """Links made when Masks and heads, Positions and Trained vs untrained were tabs open the Experiments tab, which
    now holds them; a link to a view that no longer exists (Share) opens the Attention tab."""
    assert {key: page.tab_holding(key) for key in ("masks", "positions", "twins", "beam", "share", "nonsense")} == {
        "masks": "experiments",
        "positions": "experiments",
        "twins": "experiments",
        "beam": "beam",
        "share": "attention",
        "nonsense": "attention",
    }
    restore = next(fn.fn for fn in page.demo.fns.values() if fn.name == "restore")
    link = ExplorerState(model="numbers-de", source="twenty-one", tab="positions").to_link()
    updates = restore({"state": link}, None, *values())
    assert updates[page.tab_opener].split(" ")[0] == "experiments"
    assert updates[page.explorer].state.tab == "experiments"  # and the link made from it names the tab


def test_no_event_lists_the_tab_bar_or_a_tab_among_its_outputs(page):
    """Issue 35 §5: gradio's page works, at each change of an event's status, for every component that was ever an
    output and for everything inside it: with the tab bar an output (a link's tab, at every page load) that was the
    165 components of the views, three or four times an event. A handler opens a tab through `page.opening`."""
    layout = {page.tabs._id, *(tab._id for tab in page.tab_by_key.values())}
    listing = [fn.name for fn in page.demo.fns.values() if layout & {block._id for block in fn.outputs}]
    assert listing == []
    assert page.opening("positions")[page.tab_opener].split(" ")[0] == "experiments"
    first, again = page.opening("beam")[page.tab_opener], page.opening("beam")[page.tab_opener]
    assert first != again  # asked twice, opened twice


SILENCED = ["decoder_self · layer 0 · head 0"]


@pytest.mark.parametrize("kind", [TwinsTab, MasksTab])
def test_a_comparison_asked_for_follows_every_step_while_its_tab_is_open(page, kind):
    """Issue 35: Trained vs untrained (and the silenced heads' comparison) stayed drawn for the step of the button
    press after Step or Back, and nothing said so. Once asked for, it is drawn again for each new step, as long as
    its tab is open; before, no step computes it."""
    panel = panel_of(page, kind)
    figure = panel.trained if kind is TwinsTab else panel.compare_plot
    explorer = page.apply(None, *values(silenced=SILENCED, max_output_tokens=8))[page.explorer]
    page.opened("experiments")(explorer)
    step = page.action(lambda e: e.step() and None, moves=True)
    assert figure not in step(
        explorer, *values(silenced=SILENCED, max_output_tokens=8)
    )  # nobody asked: nothing computed
    asked = panel.asked(explorer)
    rows = len(asked[figure]["value"].data[-1].y) if kind is TwinsTab else None
    updates = step(explorer, *values(silenced=SILENCED, max_output_tokens=8))
    assert updates[figure]["visible"] is True
    if kind is TwinsTab:  # the twins' heatmaps gain the new step's row
        assert len(updates[figure]["value"].data[-1].y) == rows + 1
    else:  # the chart of the next token is the new step's
        assert updates[figure]["value"].layout.title.text != asked[figure]["value"].layout.title.text
    page.opened("attention")(explorer)
    assert figure not in step(explorer, *values(silenced=SILENCED, max_output_tokens=8))  # a closed tab is not drawn


def test_what_is_switched_off_is_said_whichever_view_is_open_and_one_click_switches_it_back(page):
    """Issue 35: silenced heads stayed in effect in every view with nothing to say so (a wrong translation looked
    normal). Beside the output, whichever tab is open: what is off, and a button that switches all of it back on."""
    from ui.switches import SwitchedOffPanel

    panel = panel_of(page, SwitchedOffPanel)
    explorer = page.apply(None, *values())[page.explorer]
    assert page.apply(explorer, *values())[panel.row]["visible"] is False  # nothing off, nothing said
    off = values(silenced=SILENCED, causal_mask=False, positions=False)
    updates = page.apply(explorer, *off)
    assert updates[panel.row]["visible"] is True
    assert updates[panel.text] == (
        "**Switched off:** the causal mask, the positional encodings, 1 head silenced. Every view shows the model "
        "without them."
    )
    page.opened("beam")(explorer)  # another view: still said (it is not a panel of a tab)
    assert page.shown(panel, explorer.state.tab)
    back = panel.switched_on(explorer, *off)
    state = back[page.explorer].state
    assert (state.causal_mask, state.positions, state.padding_mask, state.silenced) == (True, True, True, frozenset())
    assert back[panel.row]["visible"] is False
    assert back[page.control("causal_mask")] is True and back[page.control("silenced")]["value"] == []


def test_captions_point_at_what_the_page_shows_where_it_shows_it(page):
    """Issue 35: the candidates' caption said "Pick one on the right" while the list is below it at every width; the
    beam tree drew hollow and filled diamonds and its caption did not say why."""
    from explorer import render
    from ui.decoding import DecodingPanel

    force = panel_of(page, DecodingPanel).force_choice
    assert "on the right" not in render.CANDIDATES_CAPTION
    assert f"**{force.label.key}**" in render.CANDIDATES_CAPTION  # the control named as its label reads
    assert "hollow" in render.BEAM_CAPTION and "filled" in render.BEAM_CAPTION


def test_the_failures_among_the_examples_say_why_in_full(page, registry):
    """Issue 35: gradio cuts an example's label after about fifty characters, so the three ✗ examples lost their
    reason, and a teacher could not tell what ✗ means. Under the examples, each failure is written out whole."""
    from ui.sentence import SentencePanel

    panel = panel_of(page, SentencePanel)
    explorer = page.apply(None, *values(model="en-de", source="Hello!"))[page.explorer]
    failures = page.apply(explorer, *values(model="en-de", source="Hello!"))[panel.failures].splitlines()
    labels = [label for _sentence, label in registry.examples("en-de") if label.startswith("✗")]
    assert len(failures) == len(labels) == 3
    assert all(
        line == f"- {label}" and "a failure to study: " in line for line, label in zip(failures, labels, strict=True)
    )


def move_events(page, move: str) -> dict[str, dict]:
    """The page's events of the move `move` (step, back), by the elem_id of the button that triggers each."""
    config = page.demo.get_config_file()
    elem_ids = {component["id"]: component["props"].get("elem_id") for component in config["components"]}
    return {
        elem_ids[target]: dependency
        for dependency in config["dependencies"]
        for target, trigger in dependency["targets"]
        if trigger == "click" and str(elem_ids.get(target)).startswith(move)
    }


@pytest.mark.parametrize("move", ["step", "back"])
def test_a_step_lists_only_what_the_open_tab_and_the_page_around_it_show(page, move):
    """Issue 35 §5: a Step listed every tab's outputs (48), and gradio's page works for each of them at every event,
    shown or not. The page's button now clicks the move's own button for the open tab; the API keeps every output."""
    events = move_events(page, move)
    assert events[f"{move}-btn"]["backend_fn"] is False and events[f"{move}-btn"]["js"]  # it only routes
    for key in page.tab_by_key:
        routed = events[f"{move}-on-{key}"]
        assert routed["outputs"] == [component._id for component in page.moving_outputs_on(key)]
    assert len(events[f"{move}-on-attention"]["outputs"]) <= 12 < len(page.moving_outputs)
    assert events[f"{move}-api"]["api_name"] == move  # gradio_client's `/step` and `/back`, as before
    assert events[f"{move}-api"]["outputs"] == [component._id for component in page.moving_outputs]


def test_a_tabs_own_step_draws_that_tab_whatever_the_state_says(page, counted):
    """A Step clicked just after opening the Walkthrough can reach the server before the tab's own event: it draws
    the walkthrough (its event lists nothing else), not the tab the state still has open."""
    explorer = page.apply(None, *values())[page.explorer]
    assert explorer.state.tab == "attention"
    step = page.action(DecodingPanel.step, moves=True, tab="walkthrough")
    updates = step(explorer, *values())
    tour = panel_of(page, WalkthroughTab)
    assert counted["tour"] == 1 and set(tour.outputs) <= set(updates)
    assert set(updates) <= set(page.moving_outputs_on("walkthrough"))
    assert not set(updates) & set(panel_of(page, AttentionTab).outputs)


def test_the_positions_are_drawn_once_and_again_only_when_what_they_show_changes(page, monkeypatch):
    """Issue 35 §5: Experiments drew the Positions section (three figures, 130 KB) at every opening of the tab; and
    at every change of the model, whichever tab was open (a shared link's model, as the page opened)."""
    from explorer import render
    from ui.tabs import PositionsTab

    drawn = []
    real = render.positional_figures
    monkeypatch.setattr(render, "positional_figures", lambda *args: drawn.append(args[1:]) or real(*args))
    section = panel_of(page, PositionsTab)
    draw = page.view_handler(section.figures, lambda error: {})
    explorer = page.apply(None, *values())[page.explorer]
    another_model = page.view_handler(section.figures_if_shown, lambda error: {})
    hidden = another_model(explorer, *values(), 50, "", "")  # chosen on the Attention tab, or by a link as it opens
    assert hidden == {section.drawn_for: ""} and drawn == []  # nothing drawn for nobody: drawn as the tab opens

    first = draw(explorer, *values(), 50, "", "")
    assert {section.table, section.curves, section.similarity} <= set(first) and len(drawn) == 1
    again = draw(explorer, *values(), 50, "", first[section.drawn_for])  # the tab opened again
    assert set(again) == {section.drawn_for} and len(drawn) == 1
    for changed in ((20, "", first[section.drawn_for]), (50, "0, 1", first[section.drawn_for])):
        assert section.table in draw(explorer, *values(), *changed)  # positions shown, dimensions typed
    chinese = draw(explorer, *values(language="zh"), 50, "", first[section.drawn_for])
    assert section.table in chinese and len(drawn) == 4  # the captions and the note in the user's language
    explorer.update(tab=section.tab)  # the tab open (`Page.opened`): another model is drawn at once
    assert section.table in another_model(explorer, *values(model="en-de"), 50, "", first[section.drawn_for])


# What a link or a user could send to write in the app's voice (issue 36 §3).
PAYLOADS = [
    "![x](http://127.0.0.1:9/beacon.png) [Log in here](http://evil.example/)",
    "<img src=x onerror=alert(1)> <a href='http://evil.example'>here</a> &amp; &lt;",
    "**bold** _em_ `code` ~~gone~~ $x^2$ | a | b | \\*not\\* a\\_b",
    "<http://evil.example/> www.evil.example mail@evil.example",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_text_a_user_sent_is_shown_as_text_in_markdown(payload):
    """Issue 36 §3: a link's model, family or view, or text typed in the force box, the picker or the dimensions box,
    was rendered as Markdown in the app's messages: an image fetched from anywhere, a live "Log in here" link. Here
    rendered by CommonMark with raw HTML on (gradio's own renderer, with its autolinks, in tests/test_browser.py)."""
    import html
    import re

    from markdown_it import MarkdownIt

    from ui.panel import escaped

    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(f"Said: {escaped(payload)}")
    for tag in ("<img", "<a ", "<strong", "<em", "<code", "<s>", "<table"):
        assert tag not in rendered, (tag, rendered)
    text = re.sub(r"<[^>]+>", "", rendered)  # what the reader sees: the payload itself
    assert html.unescape(text).split() == ["Said:", *payload.split()]


def test_a_messages_own_words_are_left_as_they_are():
    from ui.panel import escaped

    assert escaped("Stopped at step 3 (of 64). Back took off </s>.") == (
        "Stopped at step 3 (of 64). Back took off &lt;/s&gt;."
    )


def test_a_model_file_is_loaded_only_by_the_page_that_uploaded_it(page, tmp_path):
    """Issue 36 §2: gradio takes any file of its shared upload folder by its path; a page could load another page's
    upload by naming it. The first page that loads a file owns it."""
    from ui.tabs.train import TrainTab

    train = panel_of(page, TrainTab)
    upload = tmp_path / "model.safetensors"
    upload.write_bytes(b"not a model")
    mine = train.loaded(str(upload), None, "page-a")[train.message]
    theirs = train.loaded(str(upload), None, "page-b")[train.message]
    assert "uploaded by another page" not in mine and "not a safetensors file" in mine  # read, and refused as such
    assert "uploaded by another page" in theirs
    assert "uploaded by another page" not in train.loaded(str(upload), None, "page-a")[train.message]


@pytest.mark.parametrize("choice", [None, "abc", "²", 2.5, True, ["1"]])
def test_a_forced_choice_that_is_not_a_token_id_is_a_message(page, explorer, choice):
    """Issue 36 §4: a null forced choice through the API was an unhandled error."""

    decoding = panel_of(page, DecodingPanel)
    with pytest.raises(ExplorerError, match="the forced token must be a token id"):
        decoding.forced_candidate(explorer, choice)


def test_a_forced_choice_as_the_page_sends_it_is_taken(page, explorer):
    decoding = panel_of(page, DecodingPanel)
    token = explorer.snapshot().candidates[1].token_id
    decoding.forced_candidate(explorer, str(token))
    assert explorer.state.choices[-1] == token


def test_a_follower_shows_the_teachers_step_from_the_cache_and_replays_only_when_it_moves(registry, monkeypatch):
    """A class's follower (`Explorer.showing`) reads the snapshot the teacher's page computed, without a decoding of
    its own; its first Step replays the teacher's steps, then takes its own."""
    shared = SharedCache(64 * 2**20)
    monkeypatch.setattr("explorer.session.SHARED", shared)
    state = ExplorerState(model="numbers-de", source="ninety-seven")
    teacher = Explorer(registry, state)
    teacher.step()
    shown = teacher.snapshot()
    follower = Explorer.showing(registry, teacher.state)
    assert follower.snapshot() is shown and not follower.finished and follower._decoding is None
    follower.step()
    assert follower.state.choices == (None, None) and follower._decoding is not None
    assert follower.snapshot().output_text == Explorer(registry, follower.state).snapshot().output_text
    with pytest.raises(ExplorerError, match="layer 9 does not exist"):
        Explorer.showing(registry, state.replace(layer=9))


def test_a_controls_change_sends_back_no_value_the_browser_sent(page):
    """Found by the teacher's guide test on two busy workers: the answer to unticking the causal mask came after the
    user had ticked a head, set every control back as it was sent, and so unticked the head (the next event then
    carried none). The answer to a control's change now leaves the controls' values to the browser, and still sends
    what the server changed (a layer the model has not got) and what else a control shows (its choices)."""
    explorer = page.apply(None, *values())[page.explorer]
    updates = page.applied_input(explorer, *values(causal_mask=False, layer=1))
    for name in ("silenced", "layer", "head"):
        assert "value" not in updates[page.control(name)]
    assert updates[page.control("silenced")]["choices"] and updates[page.control("layer")]["maximum"] == 1
    assert updates[page.explorer].state.causal_mask is False  # applied all the same
    corrected = page.applied_input(explorer, *values(layer=40))
    assert "layer 40 does not exist" in corrected[page.status]
    assert corrected[page.control("layer")]["value"] == 1  # the layer it stays on
    assert page.apply(explorer, *values())[page.control("silenced")]["value"] == []  # other events: every value


def test_the_training_link_and_the_sentence_box_redraw_the_page_only_when_they_bring_another_value(page):
    """The page's opening sets the Train tab's link from the explorer it restored; applying it again redrew every view
    (the attention, the candidates: 18 KB) for nothing, late, over the user's first action. A new run's setup is
    applied; so is the sentence box, left with another sentence, and not when left as it was."""
    import gradio as gr

    from explorer.training import LiveSetup

    explorer = page.apply(None, *values())[page.explorer]
    for name, other in (("training", LiveSetup().to_json()), ("source", "twenty-one")):
        handler = page.apply_if_changed(name)
        assert handler(explorer, *values()) == {page.explorer: gr.skip()}
        applied = handler(explorer, *values(**{name: other}))
        assert getattr(applied[page.explorer].state, name) == other
        assert set(applied) >= set(page.moving_outputs_on("attention"))  # every view redrawn for it
