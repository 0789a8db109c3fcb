"""`transformer.explain`: contributions by integrated gradients, the census of the heads, the DecoderLens.

Each is held to a property that can fail: completeness, the linearity of the contrast, the census against the
silencing runs one by one, the lens against the encoder cut short by hand, and on a model trained to copy, the
aligned source piece."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import CHECKPOINTS, tiny_model

from transformer.explain import (
    GAP,
    contributions,
    decoder_lens,
    every_head,
    first_knowing,
    head_census,
)
from transformer.model import AS_TRAINED, ATTENTION_FAMILIES, ModelSwitches

SOURCE = [5, 9, 12, 7, 21, 4, 2]  # ending with </s> (id 2)
TARGET = [1, 14, 8, 17]  # the start token, then three pieces written


def model_on(device: str, **overrides):
    """A tiny model whose biases and LayerNorms are not at their first values (zero and one) either, as a trained
    model's are not: with every bias zero, an untrained post-norm model reads α·x as it reads x, so its score jumps
    where the path leaves zero."""
    model = tiny_model(seed=3, **overrides)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() == 1:
                parameter.add_(0.2 * torch.randn_like(parameter))
    return model.to(device)


def next_probabilities(model, switches=AS_TRAINED, source=SOURCE, target=TARGET) -> torch.Tensor:
    src = torch.tensor([source], device=next(model.parameters()).device)
    tgt = torch.tensor([target], device=src.device)
    with torch.no_grad():
        logits = model(src, tgt, switches=switches).logits
    return torch.softmax(logits[0, -1].float(), -1)


# ---- the model's two new arguments -----------------------------------------------------------------------------


def test_the_embedding_rows_given_are_the_tables_and_all_layers_are_the_encoder():
    model = model_on("cpu", norm_position="pre")
    src, tgt = torch.tensor([SOURCE]), torch.tensor([TARGET])
    with torch.no_grad():
        plain = model.encode(src)
        given = model.encode(src, token_vectors=model.src_embed.tokens(src), layers=model.config.n_encoder_layers)
        assert torch.equal(plain.memory, given.memory)
        decoded = model.decode(tgt, plain, token_vectors=model.tgt_embed.tokens(tgt)).logits
        assert torch.equal(decoded, model.decode(tgt, plain).logits)
        assert not torch.allclose(model.encode(src, layers=1).memory, plain.memory)


# ---- 1. contributions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_contributions_add_up_to_the_scores_change_from_the_baseline(device, norm_position):
    """For the three most probable tokens, and one of the least, whose scores the words change (by 0.1 or more:
    the gap is relative to that change)."""
    model = model_on(device, norm_position=norm_position)
    probabilities = next_probabilities(model)
    checked = 0
    for token in [*probabilities.argsort(descending=True)[:3].tolist(), int(probabilities.argmin())]:
        found = contributions(model, SOURCE, TARGET, token)
        assert found.source.shape == (len(SOURCE),) and found.target.shape == (len(TARGET),)
        assert math.isclose(found.score, math.log(float(probabilities[token])), rel_tol=1e-4)
        assert 0 < found.source_share < 1
        if abs(found.score - found.baseline) >= 0.1:
            assert found.gap <= GAP  # completeness, within 1%
            assert math.isclose(found.total, found.score - found.baseline, rel_tol=GAP)
            checked += 1
    assert checked >= 3


def test_where_the_score_jumps_the_adaptive_rule_closes_the_gap_that_even_points_leave():
    """The shipped en-de model's first step of "Where is the train station?": its score rises by about 10 over a
    few hundredths of the path, which 32 even points (Gauss–Legendre, Captum's default rule) miss."""
    from transformer.checkpoint import load_checkpoint

    checkpoint = load_checkpoint(CHECKPOINTS / "en-de")
    model, tokenizer = checkpoint.model.requires_grad_(False), checkpoint.tokenizer
    source = tokenizer.encode_source("Where is the train station?")
    target = [model.config.decoder_start_id]
    token = int(next_probabilities(model, source=source, target=target).argmax())
    even = contributions(model, source, target, token, segments=1, steps=32, rounds=0)
    assert even.gap == abs(even.total - (even.score - even.baseline)) / abs(even.score - even.baseline)
    adaptive = contributions(model, source, target, token)
    assert adaptive.gap <= GAP < even.gap and adaptive.score - adaptive.baseline > 5


def test_a_contrast_is_the_difference_of_the_two_tokens_contributions():
    """With the same points of the path, exactly (the integral is linear); with the points each score chooses for
    itself (the default), within the completeness gap."""
    model = model_on("cpu")
    probabilities = next_probabilities(model)
    first, second = probabilities.argsort(descending=True)[:2].tolist()
    fixed = {"segments": 1, "steps": 64, "rounds": 0}
    why = contributions(model, SOURCE, TARGET, first, versus=second, **fixed)
    one, other = (contributions(model, SOURCE, TARGET, t, **fixed) for t in (first, second))
    torch.testing.assert_close(why.source, one.source - other.source, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(why.target, one.target - other.target, rtol=1e-4, atol=1e-5)
    assert math.isclose(why.score, math.log(probabilities[first] / probabilities[second]), rel_tol=1e-4)
    why, one, other = (
        contributions(model, SOURCE, TARGET, t, versus=v) for t, v in ((first, second), (first, None), (second, None))
    )
    assert math.isclose(why.total, one.total - other.total, abs_tol=3 * GAP * abs(why.score - why.baseline))


def test_contributions_follow_the_pages_switches():
    model = model_on("cpu")
    switches = ModelSwitches(causal_mask_on=False, use_positions=False, silenced=frozenset({("cross", 1, 0)}))
    token = int(next_probabilities(model, switches).argmax())
    found = contributions(model, SOURCE, TARGET, token, switches=switches)
    assert math.isclose(found.score, math.log(float(next_probabilities(model, switches)[token])), rel_tol=1e-4)
    assert found.gap <= GAP


def test_contributions_run_inside_the_apps_inference_mode():
    model = model_on("cpu")
    with torch.inference_mode():
        found = contributions(model, SOURCE, TARGET, 6)
    assert found.gap <= GAP and found.source.abs().sum() > 0


# ---- 2. the census of the heads -----------------------------------------------------------------------------


def test_the_census_equals_the_silencing_runs_one_by_one(device):
    model = model_on(device)
    already = frozenset({("decoder_self", 0, 1)})
    switches = ModelSwitches(silenced=already)
    told = []
    census = head_census(model, SOURCE, TARGET, switches=switches, progress=lambda done, total: told.append(done))
    heads = every_head(model)
    assert [h.head for h in census.heads] == heads and len(heads) == len(ATTENTION_FAMILIES) * 2 * 2
    assert told == list(range(1, len(heads) + 1))
    first = next_probabilities(model, switches)
    assert census.token == int(first.argmax()) and math.isclose(
        census.probability, float(first[census.token]), rel_tol=1e-5
    )
    for silenced in census.heads:
        alone = next_probabilities(model, ModelSwitches(silenced=already | {silenced.head}))
        assert math.isclose(silenced.probability, float(alone[census.token]), rel_tol=1e-5, abs_tol=1e-7)
        assert silenced.choice == int(alone.argmax())
    ranked = census.ranked()
    assert set(ranked[: len(census.flips)]) == set(census.flips)
    moved = [abs(census.change(h)) for h in ranked[len(census.flips) :]]
    assert moved == sorted(moved, reverse=True)


# ---- 3. the DecoderLens -------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_the_lens_reads_each_encoder_layer_as_the_decoder_would(device, norm_position):
    model = model_on(device, norm_position=norm_position, n_encoder_layers=3)
    lens = decoder_lens(model, SOURCE, TARGET, top_k=3)
    assert [p.layer for p in lens] == [0, 1, 2]
    final = next_probabilities(model)
    assert lens[-1].top_ids[0] == int(final.argmax())  # the last layer is the model itself
    token = lens[-1].top_ids[0]
    src, tgt = torch.tensor([SOURCE], device=device), torch.tensor([TARGET], device=device)
    with torch.no_grad():
        for n, prediction in enumerate(lens):
            cut = model.encode(src, layers=n + 1)  # the encoder's first n + 1 layers, then its final norm
            probabilities = torch.softmax(model.decode(tgt, cut).logits[0, -1], -1)
            assert prediction.top_ids == probabilities.topk(3).indices.tolist()
            assert math.isclose(prediction.chosen_probability, float(probabilities[token]), rel_tol=1e-5)
    assert first_knowing(lens, token) == next(p.layer for p in lens if p.top_ids[0] == token)
    assert first_knowing(lens, -1) is None


def test_the_same_numbers_on_every_device(device):
    on_device, on_cpu = model_on(device), model_on("cpu")
    found, expected = (contributions(m, SOURCE, TARGET, 6, segments=4, rounds=0) for m in (on_device, on_cpu))
    torch.testing.assert_close(found.source, expected.source, rtol=1e-3, atol=1e-5)
    census, cpu_census = (head_census(m, SOURCE, TARGET) for m in (on_device, on_cpu))
    for a, b in zip(census.heads, cpu_census.heads, strict=True):
        assert math.isclose(a.probability, b.probability, rel_tol=1e-4, abs_tol=1e-6)
    lens, cpu_lens = (decoder_lens(m, SOURCE, TARGET) for m in (on_device, on_cpu))
    assert [p.top_ids[0] for p in lens] == [p.top_ids[0] for p in cpu_lens]


# ---- on a model that learned to copy ------------------------------------------------------------------------


@pytest.mark.slow
def test_on_a_model_that_copies_the_aligned_source_piece_carries_most_of_the_contribution():
    """A tiny model trained on the Train tab's copy task: the piece it writes at step t is the source's t-th, and
    integrated gradients give that source piece the largest share of the source's contribution. Asserted over many
    steps with a margin, not on one machine's exact numbers."""
    from transformer.training.live import LiveRun, LiveSetup, probe_example

    setup = LiveSetup(task="copy", layers=1, heads=2, d_model=32, batch_size=64, warmup=100, lr_factor=1.0, seed=1)
    run = LiveRun(setup)
    for _ in range(300):
        run.train_step()
    model = run.model.eval()
    tokenizer = run.tokenizer
    aligned, steps = 0, 0
    for seed in range(6):
        source_text, target_text = probe_example(setup.toy_task, seed)
        source = tokenizer.encode_source(source_text)
        target = tokenizer.encode_target(target_text)
        decoder_input = [model.config.decoder_start_id, *target]
        for t in range(len(target) - 1):  # each digit (not the final </s>)
            found = contributions(model, source, decoder_input[: t + 1], target[t])
            steps += 1
            aligned += int(found.source.abs().argmax()) == t
    assert aligned >= 0.8 * steps, f"{aligned} of {steps} steps"


def test_the_adaptive_integral_agrees_with_captums_own_on_a_fine_even_grid():
    """Our segments, each integrated by Captum, against Captum's IntegratedGradients over the whole path at 512
    points: the same attributions (the reference's own completeness gap is tiny there)."""
    from captum.attr import IntegratedGradients

    from transformer.explain import score_of

    model = model_on("cpu")
    token = next_probabilities(model).argsort(descending=True)[1].item()
    ours = contributions(model, SOURCE, TARGET, token)
    src, tgt = torch.tensor([SOURCE]), torch.tensor([TARGET])
    rows = (model.src_embed.tokens(src).detach(), model.tgt_embed.tokens(tgt).detach())

    def score(source_vectors, target_vectors, src, tgt):
        return score_of(model, src, tgt, token, None, AS_TRAINED, source_vectors, target_vectors)

    source, target = IntegratedGradients(score).attribute(
        rows, baselines=tuple(torch.zeros_like(r) for r in rows), additional_forward_args=(src, tgt), n_steps=512
    )
    torch.testing.assert_close(ours.source, source[0].sum(-1).detach(), rtol=0.02, atol=0.005)
    torch.testing.assert_close(ours.target, target[0].sum(-1).detach(), rtol=0.02, atol=0.005)
