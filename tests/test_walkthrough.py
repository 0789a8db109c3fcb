"""The walkthrough (explorer/walkthrough.py): a tour of the Inside a step stages, written with the live sentence's
own numbers, following every Step and Back, each section leading to its stage; the tests that take
`explorer_on_device` on each device present (conftest.py)."""

from __future__ import annotations

import html
import re

import pytest

from explorer import Explorer, ExplorerState, ModelRegistry, inside, walkthrough
from explorer.state import STAGES
from tests.conftest import CHECKPOINTS, tiny_model
from transformer.checkpoint import load_checkpoint, save_checkpoint


def numbers(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"-?\d+\.\d+", text)]


def test_the_tour_has_every_section_in_order_each_leading_to_a_stage(explorer_on_device):
    sections = walkthrough.tour(explorer_on_device)
    assert [s.kind.key for s in sections] == list(walkthrough.KEYS)
    assert {"scores", "heads", "add_norm", "ffn", "stacks", "layers"} <= set(walkthrough.KEYS)  # issue 14's new ones
    for section in sections:
        assert section.text.startswith(f"## {section.kind.heading}\n")
        assert section.link.stage in STAGES
        assert (section.tensors is not None) == section.kind.tensors and (section.plot is not None) == section.kind.plot
    stages = [s.link.stage for s in sections]
    assert "stacks" in stages and "layers" in stages and "output" in stages
    assert stages.index("encoder.self_attention") < stages.index("decoder.cross_attention") < stages.index("output")


def test_the_scores_section_quotes_this_sentences_numbers(explorer):
    t = walkthrough.thread_of(explorer)
    section = walkthrough.tour(explorer)[walkthrough.KEYS.index("scores")]
    a = t.worked.encoder[0].self_attention
    scores, weights = a.scores[t.head, t.read], a.weights[t.head, t.read]
    best = int(scores.argmax())
    text = html.unescape(section.text)
    highest = f"{float(scores[best]):.2f}".replace("-", "−")
    assert f"head {t.head}, the query of “{t.source[t.read]}” has its highest score, {highest}, against" in text
    assert f"“{t.source[best]}” weight {float(weights[best]):.2f}" in text
    assert section.link == walkthrough.Link("encoder.self_attention", 0, t.head, t.read)
    # the section's figure is the head's whole map, with the query it talks about outlined
    heatmap = section.plot.data[0]
    assert heatmap.z.shape == tuple(a.weights[t.head].shape)


def test_the_thread_reads_the_source_piece_the_step_attends_to_most(explorer):
    t = walkthrough.thread_of(explorer)
    snapshot = explorer.snapshot()
    assert t.read == int(snapshot.cross[-1, :, -1].mean(0).argmax())
    assert t.source == snapshot.source_tokens and t.target == snapshot.target_tokens
    cross = walkthrough.tour(explorer)[walkthrough.KEYS.index("cross")]
    weight = float(snapshot.cross[-1, :, -1].mean(0)[t.read])
    assert f"reads “{t.source[t.read]}” with weight {weight:.2f}" in html.unescape(cross.text)


def test_the_output_section_gives_the_candidates_probabilities(explorer):
    section = walkthrough.tour(explorer)[walkthrough.KEYS.index("output")]
    bars = section.plot.data[0]
    snapshot = explorer.snapshot()
    ids, probabilities = walkthrough.thread_of(explorer).worked.output.top(inside.TOP)
    assert sorted(bars.x, reverse=True) == pytest.approx(probabilities.tolist(), abs=1e-6)
    by_id = {c.token_id: c.prob for c in snapshot.candidates}
    for token_id, p in zip(ids.tolist(), probabilities.tolist(), strict=True):
        if token_id in by_id:  # the candidate chart shows the same probabilities
            assert by_id[token_id] == pytest.approx(p, abs=1e-5)
    assert f"{float(probabilities[0]):.1%}" in section.text


def test_the_tour_follows_step_and_back(explorer_on_device):
    moved = Explorer(explorer_on_device.registry, explorer_on_device.state)
    before = walkthrough.tour(moved)
    moved.back()
    after_back = walkthrough.tour(moved)
    tokens = walkthrough.KEYS.index("tokens")
    assert f"the one at position {len(moved.snapshot().target_tokens) - 1} " in after_back[tokens].text
    assert after_back[tokens].text != before[tokens].text
    masks = walkthrough.KEYS.index("masks")
    assert len(after_back[masks].plot.data[-1].z) == len(before[masks].plot.data[-1].z) - 1  # one row fewer
    moved.step()
    assert [s.text for s in walkthrough.tour(moved)] == [s.text for s in before]


def test_the_masks_section_follows_the_switches(explorer):
    masks = walkthrough.KEYS.index("masks")
    on = walkthrough.tour(explorer)[masks]
    assert on.plot.data[0].name == "masked" and "causal mask on" in on.plot.layout.title.text
    assert "hides" in on.text
    off = walkthrough.tour(Explorer(explorer.registry, explorer.state.replace(causal_mask=False)))[masks]
    assert len(off.plot.data) == 1 and "causal mask is off" in off.text


def test_a_silenced_head_is_named_in_the_heads_section(explorer):
    silenced = Explorer(explorer.registry, explorer.state.replace(silenced=frozenset({("encoder", 0, 1)})))
    heads = walkthrough.KEYS.index("heads")
    assert "Head 1 is silenced: its 32 numbers are zeros here." in walkthrough.tour(silenced)[heads].text  # d_k = 32
    assert walkthrough.thread_of(silenced).worked.encoder[0].self_attention.kept.tolist() == [True, False, True, True]
    assert "silenced" not in walkthrough.tour(explorer)[heads].text


def test_the_layers_and_stacks_sections_quote_the_worked_step(explorer):
    t = walkthrough.thread_of(explorer)
    sections = walkthrough.tour(explorer)
    layers = html.unescape(sections[walkthrough.KEYS.index("layers")].text)
    for p in t.worked.layer_predictions:
        assert f"layer {p.layer}" in layers and walkthrough.percent(p.chosen_probability) in layers
    assert "is ranked first" in layers or "ranks" in layers
    stacks = sections[walkthrough.KEYS.index("stacks")]
    assert stacks.tensors.count('class="tensor') >= 4 and "residual stream" in stacks.text


def test_a_finished_translation_is_toured_to_its_last_step(registry, explorer):
    done = Explorer(registry, explorer.state)
    for _ in done.run():
        pass
    assert done.finished
    output = walkthrough.tour(done)[walkthrough.KEYS.index("output")]
    assert "the translation is finished" in output.text
    colours = list(output.plot.data[0].marker.color)
    assert len(set(colours)) == 2  # the piece it wrote, </s>, in the accent colour


def test_a_pre_norm_model_is_toured_in_its_own_order(tmp_path):
    tokenizer = load_checkpoint(CHECKPOINTS / "numbers-de").tokenizer
    size = tokenizer.source.size
    model = tiny_model(
        seed=3, norm_position="pre", src_vocab_size=size, tgt_vocab_size=size, pad_id=tokenizer.pad_id,
        eos_id=tokenizer.eos_id, decoder_start_id=tokenizer.bos_id,
    )  # fmt: skip
    save_checkpoint(model=model, tokenizer=tokenizer, folder=tmp_path / "pre-norm")
    e = Explorer(ModelRegistry(tmp_path), ExplorerState(model="pre-norm", source="twenty-one"))
    e.step()
    sections = {s.kind.key: s for s in walkthrough.tour(e)}
    assert "**pre-norm**" in sections["add_norm"].text
    assert "(with the final LayerNorm)" in sections["layers"].text
    assert "final norm" in sections["stacks"].tensors


@pytest.mark.parametrize("key", walkthrough.KEYS)
def test_each_link_opens_its_stage_at_the_sections_position(explorer, key):
    link = walkthrough.link(explorer, key)
    opened = Explorer(explorer.registry, explorer.state.replace(**link.state_fields()))
    if key == "explained":  # the last section opens the Why? tab, as it is
        assert link.state_fields() == {"tab": "why"} and opened.state.stage == explorer.state.stage
        return
    assert opened.state.tab == "inside"
    _, text = inside.stage_view(opened)
    assert text
    if (link.stage.startswith("encoder") and link.stage != "encoder.embedding") or key == "embedding":
        assert f"position {link.position}" in text
    with pytest.raises(KeyError):
        walkthrough.link(explorer, "nowhere")


def test_an_imported_marian_model_is_toured_without_sending_its_vocabulary(marian, tmp_path):
    from transformer.marian import load_marian

    folder, _ = marian
    save_checkpoint(load_marian(folder), tmp_path / "marian")
    e = Explorer(ModelRegistry(tmp_path), ExplorerState(model="marian", source="The weather is nice today."))
    e.step()
    sections = {s.kind.key: s for s in walkthrough.tour(e)}
    assert len(sections["output"].plot.data[0].x) == inside.TOP  # the top ten, never the vocabulary
    vocabulary = e.checkpoint.model.config.tgt_vocab_size
    assert f"{vocabulary:,} pieces" in sections["output"].text
    for section in sections.values():  # every figure is sentence-sized
        assert section.plot is None or all(t.x is None or len(t.x) <= 64 for t in section.plot.data)


def test_the_last_section_sets_the_piece_the_tour_followed_against_what_made_the_token(explorer):
    """Section 12: the source piece read most, its share of the contribution, and the largest share."""
    from explorer import why

    section = next(s for s in walkthrough.tour(explorer) if s.kind.key == "explained")
    thread = walkthrough.thread_of(explorer)
    found = why.contributions_of(explorer)
    assert f"“{thread.source[thread.read]}”" in section.text and "Integrated" in section.text
    assert ("the two agree" in section.text) == (int(found.source.abs().argmax()) == thread.read)
    bars = [trace for trace in section.plot.data if trace.type == "bar"]
    assert bars and all(len(trace.y) == len(explorer.snapshot().source_tokens) for trace in bars[:2])
