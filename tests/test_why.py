"""The Why? tab: what made the next token (explorer.why, explorer.figures.contributions, ui.tabs.why), computed
only while it is shown, shared by every user at the same step, and in both languages."""

from __future__ import annotations

import math

import numpy as np
import pytest

from explorer import Explorer, ExplorerState, cache, inside, why
from explorer.figures import census_grid, contribution_bars
from explorer.i18n import speaking
from transformer.explain import GAP
from ui.page import build_page
from ui.settings import DEFAULTS, NAMES
from ui.tabs.why import CensusSection, ContributionsSection, LensSection

STATE = ExplorerState(model="numbers-de", source="three hundred and forty-two", choices=(None, None))


def values(**changes) -> list:
    settings = DEFAULTS | {"model": "numbers-de", "source": "three hundred and forty-two"} | changes
    return [settings[name] for name in NAMES]


@pytest.fixture
def explorer(registry) -> Explorer:
    return Explorer(registry, STATE)


@pytest.fixture(scope="module")
def page(registry):
    page = build_page(registry)
    yield page
    page.close()


def panel_of(page, kind):
    return next(panel for panel in page.panels if isinstance(panel, kind))


# ---- the step explained ---------------------------------------------------------------------------------------


def test_the_step_explained_is_the_next_token_or_the_last_one_written(registry, explorer):
    step = why.explained(explorer)
    config = explorer.checkpoint.model.config
    assert step.target == [config.decoder_start_id, *explorer.decoding.output_ids]
    assert step.token == explorer.snapshot().candidates[0].token_id
    finished = Explorer(registry, STATE.replace(choices=()))
    while not finished.at_end:
        finished.step()
    done = why.explained(finished)
    assert done.token == finished.decoding.output_ids[-1] and len(done.target) == len(finished.decoding.output_ids)


# ---- contributions ------------------------------------------------------------------------------------------


def test_the_contributions_view_has_a_bar_for_every_piece_the_split_and_the_gap(explorer):
    figure, text = why.contributions_view(explorer, None)
    snapshot = explorer.snapshot()
    bars = [trace for trace in figure.data if trace.type == "bar"]
    source = [trace for trace in bars if trace.yaxis == "y"]
    written = [trace for trace in bars if trace.yaxis == "y2"]
    assert all(len(trace.y) == len(snapshot.source_tokens) for trace in source)
    assert all(len(trace.y) == len(snapshot.target_tokens) for trace in written)
    shares = sum(np.abs(np.asarray(trace.x, dtype=float)).sum() for trace in bars)
    assert math.isclose(shares, 1.0, rel_tol=1e-4)  # the bars' magnitudes are the whole contribution
    found = why.contributions_of(explorer)
    assert f"{found.source_share:.0%} from the source sentence" in text and found.gap <= GAP
    assert "Integrated gradients" in text and "Completeness" in text
    marks = [trace for trace in figure.data if trace.type == "scatter"]
    assert len(marks) == 1 and math.isclose(float(np.sum(marks[0].x)), 1.0, rel_tol=1e-4)  # the heads' average


def test_a_contrast_names_both_tokens_and_an_unknown_one_is_no_contrast(explorer):
    (_label, other), *_rest = why.versus_choices(explorer)
    figure, _text = why.contributions_view(explorer, other)
    chosen = why.piece(explorer, why.explained(explorer).token)
    assert figure.layout.title.text == f"Why “{chosen}” and not “{why.piece(explorer, other)}”"
    found = why.contributions_of(explorer, other)
    assert found.score == pytest.approx(math.log(explorer.snapshot().candidates[0].prob / _prob(explorer, other)))
    plain, _text = why.contributions_view(explorer, 10**6)  # not a candidate: the token alone
    assert plain.layout.title.text.startswith("What made")


def _prob(explorer, token):
    return next(c.prob for c in explorer.snapshot().candidates if c.token_id == token)


def test_one_sentence_says_whether_attention_and_contribution_agree():
    pieces = ["▁a", "▁b", "▁c"]
    agree = why.disagreement(pieces, np.array([0.1, 0.6, -0.1]), np.array([0.2, 0.7, 0.1]))
    assert agree.startswith("Here attention and contribution agree") and "“▁b”" in agree
    differ = why.disagreement(pieces, np.array([0.05, -0.1, 0.6]), np.array([0.8, 0.1, 0.1]))
    assert differ.startswith("Here they disagree") and differ.index("“▁a”") < differ.index("“▁c”")
    with speaking("zh"):
        assert why.disagreement(pieces, np.array([0.05, -0.1, 0.6]), np.array([0.8, 0.1, 0.1])).startswith(
            "这里两者不一致"
        )


def test_the_views_are_shared_by_every_user_at_the_same_step(registry, explorer):
    why.contributions_of(explorer)
    hits = cache.SHARED.hits
    other = Explorer(registry, STATE)
    assert why.contributions_of(other) is why.contributions_of(explorer)
    assert cache.SHARED.hits >= hits + 2


# ---- the census and the lens -------------------------------------------------------------------------------


def test_the_census_view_draws_one_grid_per_family_and_ranks_the_heads(explorer):
    census = why.census_of(explorer)
    figure, text, choices = why.census_view(explorer, census)
    config = explorer.checkpoint.model.config
    grids = [trace for trace in figure.data if trace.type == "heatmap"]
    assert [np.asarray(g.z).shape for g in grids] == [(config.n_layers(f), config.n_heads) for f in why.FAMILIES]
    assert len(choices) == len(census.heads) and choices[0][1] == ":".join(map(str, census.ranked()[0].head))
    assert ("changes the choice" in text or "change the choice" in text) and f"{census.probability:.1%}" in text


def test_the_lens_view_has_a_row_per_encoder_layer_and_says_where_the_token_first_appears(explorer):
    text = why.lens_view(explorer, inside.worked_step(explorer))
    n = explorer.checkpoint.model.config.n_encoder_layers
    encoder_rows = text.split("| encoder layer read |")[1].split("\n\n")[0].strip().splitlines()[2:]
    assert len(encoder_rows) == n
    assert "DecoderLens" in text and ("Reading encoder layer" in text or "Whichever encoder layer" in text)
    with speaking("zh"):
        assert "每个编码器层已经知道什么" in why.lens_view(explorer, inside.worked_step(explorer))


# ---- the figures --------------------------------------------------------------------------------------------


def test_the_figures_show_what_users_typed_as_text_and_check_their_shapes():
    figure = contribution_bars(["<b>x</b>", "y"], [0.5, -0.5], ["<s>"], [0.0], attention=[0.9, 0.1])
    assert all("<b>" not in label for trace in figure.data for label in trace.y)
    with pytest.raises(ValueError, match="one per piece"):
        contribution_bars(["a"], [0.5, 0.5], ["<s>"], [0.0])
    grid = census_grid([("encoder", np.zeros((2, 3)), np.zeros((2, 3), dtype=bool))])
    assert np.asarray(grid.data[0].z).shape == (2, 3)
    with pytest.raises(ValueError, match="shape"):
        census_grid([("encoder", np.zeros((2, 3)), np.zeros((3, 2), dtype=bool))])


# ---- the page -----------------------------------------------------------------------------------------------


def test_the_tab_is_drawn_only_when_open_and_the_census_only_when_asked(page):
    sections = [panel_of(page, kind) for kind in (ContributionsSection, CensusSection, LensSection)]
    explorer = page.apply(None, *values())[page.explorer]
    updates = page.apply(explorer, *values(layer=1))
    assert not set(updates) & {output for section in sections for output in section.outputs}  # the tab is closed
    opened = page.opened("why")(explorer)
    contributions, census, lens = sections
    assert opened[contributions.plot] is not None and "from the source sentence" in opened[contributions.text]
    assert "DecoderLens" in opened[lens.text]
    assert census.plot not in opened  # not asked for yet: nobody pays for 18 reruns
    asked = census.asked(explorer)
    assert asked[census.plot]["visible"] and asked[census.head]["choices"]
    stepped = page.action(lambda e: e.step() and None, moves=True)(explorer, *values())
    assert census.plot in stepped  # once asked, it follows every step


def test_a_head_from_the_census_opens_its_heatmap_silenced(page):
    census = panel_of(page, CensusSection)
    explorer = page.apply(None, *values())[page.explorer]
    head = "cross:1:0"
    updates = census.opening(page.action(census.opened_head, extra=1)(explorer, head, *values()))
    state = updates[page.explorer].state
    assert (state.tab, state.family, state.layer, state.head) == ("attention", "cross", 1, 0)
    assert ("cross", 1, 0) in state.silenced and "silenced" in updates[page.explorer].following
    assert updates[page.tab_opener].startswith("attention ")
    failed = page.action(census.opened_head, extra=1)(explorer, None, *values())
    assert failed[page.status] == "choose a head first"


def test_every_view_works_for_an_imported_marian_model_and_a_model_trained_in_the_train_tab(marian, tmp_path):
    """opus-mt (a tiny Marian model built with transformers: both embedding layouts) and a Train tab run's model,
    each through every view of the tab; completeness holds where the score changes."""
    from explorer import ModelRegistry
    from transformer.checkpoint import save_checkpoint
    from transformer.marian import load_marian
    from transformer.training.live import LiveRun, LiveSetup

    folder, _ = marian
    save_checkpoint(load_marian(folder), tmp_path / "marian")
    run = LiveRun(LiveSetup(task="copy", layers=1, heads=2, d_model=32, batch_size=16, seed=2))
    for _ in range(5):
        run.train_step()
    save_checkpoint(run.checkpoint(name="copy"), tmp_path / "copy")
    registry = ModelRegistry(tmp_path)
    for name, source in (("marian", "The weather is nice today."), ("copy", "31415")):
        explorer = Explorer(registry, ExplorerState(model=name, source=source))
        explorer.step()
        figure, text = why.contributions_view(explorer, None)
        found = why.contributions_of(explorer)
        assert figure.data and "from the source sentence" in text
        assert found.gap <= GAP or abs(found.score - found.baseline) < 0.1
        census_figure, _text, choices = why.census_view(explorer, why.census_of(explorer))
        assert len(choices) == len(why.census_of(explorer).heads) and census_figure.data
        assert "DecoderLens" in why.lens_view(explorer, inside.worked_step(explorer))


def test_the_census_button_reports_its_progress_head_by_head(page, registry):
    """Gradio gives the button's handler a `gr.Progress` (its parameter's default): it hears every head."""
    import inspect

    import gradio as gr

    census = panel_of(page, CensusSection)
    handler = census.asked_handler()
    assert isinstance(inspect.signature(handler).parameters["progress"].default, gr.Progress)
    heard = []
    explorer = Explorer(registry, STATE.replace(source="seven hundred and one"))
    handler(explorer, lambda fraction, desc: heard.append((fraction, desc)), *values(source="seven hundred and one"))
    assert heard[-1] == (1.0, f"head {len(heard)} of {len(heard)}") and len(heard) == 24
