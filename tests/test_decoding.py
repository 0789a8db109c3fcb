"""Step-by-step decoding: greedy, sampling, beam search, forcing, stepping back. The tests that take
`device_model` decode with the model on each device present (conftest.py's `device`)."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.conftest import tiny_model
from transformer.decoding import BeamSearch, Decoding, Greedy, ModelSwitches, Sampling, generate, generate_batch

SRC = [5, 6, 7, 8, 9, 2]
EOS, START = 2, 1


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(3)
    m = tiny_model(seed=3)
    with torch.no_grad():  # livelier than the default init: varied, confident distributions
        for p in m.parameters():
            if p.dim() > 1:
                p.mul_(4.0)
    return m


@pytest.fixture
def device_model(model, device):
    """The module's model on `device`: the same weights."""
    return model if device == "cpu" else copy.deepcopy(model).to(device)


def assert_same_step(a, b, exact=True):
    """Two step records agree: token, probabilities, beams and attention (bit for bit when exact)."""
    tol = dict(atol=0, rtol=0) if exact else dict(atol=1e-5, rtol=1e-4)
    assert (a.index, a.token_id, a.forced, a.finished) == (b.index, b.token_id, b.forced, b.finished)
    assert [c.token_id for c in a.candidates] == [c.token_id for c in b.candidates]
    torch.testing.assert_close(
        torch.tensor([c.prob for c in a.candidates]), torch.tensor([c.prob for c in b.candidates]), **tol
    )
    assert [h.tokens for h in a.beams] == [h.tokens for h in b.beams] and a.parents == b.parents
    assert a.attention is not None and b.attention is not None  # (their decodings record it)
    for x, y in zip(
        a.attention.decoder_self + a.attention.cross, b.attention.decoder_self + b.attention.cross, strict=True
    ):
        torch.testing.assert_close(x, y, **tol)


def full_logits(model, prefix):
    device = next(model.parameters()).device
    with torch.no_grad():
        return model(torch.tensor([SRC], device=device), torch.tensor([prefix], device=device)).logits[0, -1]


def test_greedy_takes_the_argmax_of_full_recomputation_at_every_step(device_model):
    decoding = Decoding(device_model, SRC, Greedy(), max_new_tokens=12)
    prefix = [START]
    for record in decoding:
        logits = full_logits(device_model, prefix)
        logits[[0, START]] = -float("inf")  # pad and start are never generated
        if record.index < 11:
            assert record.token_id == int(logits.argmax())
        probs = logits.softmax(-1)
        model_prob = float(full_logits(device_model, prefix).softmax(-1)[record.token_id])
        assert record.prob == pytest.approx(model_prob, abs=1e-5)
        assert record.candidates[0].prob >= record.candidates[-1].prob
        assert len(record.candidates) == 10 and probs.numel() == 30
        prefix.append(record.token_id)
    assert decoding.finished and decoding.output_ids == prefix[1:]
    assert decoding.output_ids[-1] == EOS


def test_step_records_carry_the_attention_of_the_query_when_asked(model):
    assert Decoding(model, SRC, Greedy(), max_new_tokens=5).step().attention is None  # by default, nothing recorded
    decoding = Decoding(model, SRC, Greedy(), max_new_tokens=5, return_attention=True)
    first, second = decoding.step(), decoding.step()
    assert len(first.attention.decoder_self) == 2 and len(first.attention.cross) == 2
    assert first.attention.decoder_self[0].shape == (2, 1)  # (H, keys so far): only the start token
    assert second.attention.decoder_self[0].shape == (2, 2)
    assert second.attention.cross[1].shape == (2, len(SRC))
    torch.testing.assert_close(second.attention.cross[1].sum(-1), torch.ones(2))
    assert [a.shape for a in decoding.encoder_attention] == [(2, 6, 6)] * 2


def test_max_new_tokens_forces_end_of_sentence(model):
    decoding = Decoding(model, SRC, Greedy(), max_new_tokens=3)
    records = decoding.run()
    assert len(records) <= 3 and records[-1].token_id == EOS and records[-1].finished
    with pytest.raises(RuntimeError, match="finished"):
        decoding.step()


def test_forcing_a_token_then_continuing(device_model):
    decoding = Decoding(device_model, SRC, Greedy(), max_new_tokens=10)
    natural = decoding.upcoming()[0].token_id
    forced_token = 17 if natural != 17 else 18
    record = decoding.send(forced_token)
    assert record.forced and record.token_id == forced_token
    assert record.candidates[0].token_id == natural  # the candidates show what the model wanted
    next_record = decoding.step()
    logits = full_logits(device_model, [START, forced_token])
    logits[[0, START]] = -float("inf")
    assert next_record.token_id == int(logits.argmax())


def test_back_restores_the_state_exactly(device_model):
    decoding = Decoding(device_model, SRC, Greedy(), max_new_tokens=10, return_attention=True)
    decoding.step()
    before = decoding.upcoming()
    second = decoding.step()
    decoding.step()
    assert decoding.back().index == 2
    assert decoding.back() is second
    assert decoding.upcoming() == before
    assert_same_step(decoding.step(), second)
    assert len(decoding.steps) == 2


def test_back_then_a_different_choice_is_a_branch(model):
    decoding = Decoding(model, SRC, Greedy(), max_new_tokens=10)
    decoding.step()
    original = decoding.step().token_id
    decoding.back()
    other = decoding.upcoming()[1].token_id
    assert decoding.send(other).token_id == other != original
    assert decoding.output_ids[-1] == other


def test_back_at_the_start_does_nothing(model):
    decoding = Decoding(model, SRC, Greedy())
    assert decoding.back() is None
    assert decoding.output_ids == []


def test_back_after_the_end_resumes(model):
    decoding = Decoding(model, SRC, Greedy(), max_new_tokens=8, return_attention=True)
    records = decoding.run()
    decoding.back()
    assert not decoding.finished
    assert_same_step(decoding.step(), records[-1])


def test_sampling_is_reproducible_from_the_seed_and_through_back(model, device_model):
    def draw(seed, model=device_model):
        return generate(model, SRC, Sampling(temperature=1.5, seed=seed), max_new_tokens=15)

    assert draw(7) == draw(7)
    assert draw(7) == draw(7, model)  # drawn on the CPU from the seed: the same tokens whatever the model's device
    assert len({tuple(draw(s)) for s in range(6)}) > 1
    decoding = Decoding(device_model, SRC, Sampling(temperature=1.5, seed=7), max_new_tokens=15)
    decoding.step()
    second = decoding.step()
    decoding.back()
    assert decoding.step().token_id == second.token_id  # the random generator was rewound too


def test_top_k_1_is_greedy_and_low_temperature_is_greedy(model):
    greedy = generate(model, SRC, Greedy(), max_new_tokens=12)
    assert generate(model, SRC, Sampling(top_k=1, seed=1), max_new_tokens=12) == greedy
    assert generate(model, SRC, Sampling(temperature=1e-4, seed=1), max_new_tokens=12) == greedy
    assert generate(model, SRC, Sampling(top_p=1e-6, seed=1), max_new_tokens=12) == greedy


def test_top_k_and_top_p_only_draw_from_the_allowed_tokens(model):
    def first_step(strategy):
        record = Decoding(model, SRC, strategy, max_new_tokens=5, top_k=30).step()
        probs = {c.token_id: c.prob for c in record.candidates if c.token_id not in (0, START)}  # never generated
        return record.token_id, sorted(probs, key=probs.get, reverse=True), probs

    drawn_k = set()
    for seed in range(20):
        token, ranked, _ = first_step(Sampling(top_k=3, temperature=3.0, seed=seed))
        assert token in ranked[:3]
        drawn_k.add(token)
        token, ranked, probs = first_step(Sampling(top_p=0.5, seed=seed))
        total, mass, nucleus = sum(probs.values()), 0.0, []
        for candidate in ranked:  # the smallest set of most probable tokens reaching 50% of the mass
            nucleus.append(candidate)
            mass += probs[candidate] / total
            if mass >= 0.5:
                break
        assert token in nucleus
    assert len(drawn_k) > 1  # it does sample


@pytest.mark.parametrize("bad", [dict(temperature=0), dict(top_k=-1), dict(top_p=0.0), dict(top_p=1.5)])
def test_invalid_sampling_parameters_are_rejected(bad):
    with pytest.raises(ValueError):
        Sampling(**bad)


def test_beam_width_1_is_greedy(model):
    assert generate(model, SRC, BeamSearch(1), max_new_tokens=12) == generate(model, SRC, Greedy(), max_new_tokens=12)


def test_beam_search_finds_a_hypothesis_at_least_as_likely_as_greedy(device_model):
    def logprob(tokens):
        """The model's log-probability, as beam search scores it (forced </s> at the limit counts 0)."""
        prefix, total = [START], 0.0
        for index, token in enumerate(tokens):
            if index < 29:
                total += float(full_logits(device_model, prefix).log_softmax(-1)[token])
            prefix.append(token)
        return total

    greedy = generate(device_model, SRC, Greedy(), max_new_tokens=30)
    beam = Decoding(device_model, SRC, BeamSearch(4, length_penalty=0.0), max_new_tokens=30)
    beam.run()
    best = beam.steps[-1].finished_beams[0]
    assert best.logprob == pytest.approx(logprob(best.tokens), abs=1e-4)
    assert best.logprob >= logprob(greedy) - 1e-5


def test_beam_records_list_the_beams_and_their_parents(model):
    decoding = Decoding(model, SRC, BeamSearch(3), max_new_tokens=12)
    first = decoding.step()
    assert len(first.beams) == 3 and first.parents == (0, 0, 0)
    second = decoding.step()
    for beam, parent in zip(second.beams, second.parents, strict=True):
        assert beam.tokens[:-1] == first.beams[parent].tokens
    assert [b.score for b in second.beams] == sorted((b.score for b in second.beams), reverse=True)


def test_beam_search_back_and_forward_again_is_the_same(device_model):
    decoding = Decoding(device_model, SRC, BeamSearch(3), max_new_tokens=12, return_attention=True)
    records = [decoding.step() for _ in range(4)]
    decoding.back()
    decoding.back()
    again = [decoding.step(), decoding.step()]
    for a, b in zip(again, records[2:], strict=True):
        assert_same_step(a, b, exact=False)  # the beams' cache was recomputed in one pass: equal up to rounding


def test_beam_search_forcing_puts_the_token_on_every_beam(device_model):
    decoding = Decoding(device_model, SRC, BeamSearch(3), max_new_tokens=12)
    decoding.step()
    record = decoding.send(19)
    assert all(beam.tokens[-1] == 19 for beam in record.beams)


def test_switches_reach_the_model(model):
    plain = Decoding(model, SRC, Greedy(), max_new_tokens=6)
    silenced = Decoding(
        model, SRC, Greedy(), max_new_tokens=6, switches=ModelSwitches(silenced=frozenset({("cross", 0, 0)}))
    )
    assert plain.upcoming() != silenced.upcoming()
    with pytest.raises(ValueError, match="does not exist"):
        Decoding(model, SRC, switches=ModelSwitches(silenced=frozenset({("cross", 9, 0)})))


@pytest.mark.parametrize(
    "src, kwargs, message",
    [
        ([], {}, "empty"),
        ([5] * 65, {}, "at most 64"),
        ([99], {}, "outside the vocabulary"),
        (SRC, {"max_new_tokens": 0}, "max_new_tokens"),
    ],
)
def test_bad_inputs_are_clear_errors(model, src, kwargs, message):
    with pytest.raises(ValueError, match=message):
        Decoding(model, src, **kwargs)


def test_forcing_a_token_outside_the_vocabulary_is_an_error(model):
    with pytest.raises(ValueError, match="not in the target vocabulary"):
        Decoding(model, SRC).step(force=30)


def test_batched_greedy_equals_one_sentence_at_a_time(device_model):
    sources = [SRC, [7, 3], [9, 9, 8, 7, 6, 5, 4, 3, 2], [4, 2], SRC[::-1]]
    limits = [12, 3, 20, 1, 8]
    expected = [generate(device_model, s, Greedy(), max_new_tokens=n) for s, n in zip(sources, limits, strict=True)]
    assert len({len(e) for e in expected}) > 2, "the sentences should finish at different steps"
    assert generate_batch(device_model, sources, max_new_tokens=limits) == expected
    one_by_one = [generate(device_model, s, max_new_tokens=5) for s in sources]
    assert generate_batch(device_model, sources, max_new_tokens=5) == one_by_one
    assert generate_batch(device_model, []) == []


@pytest.mark.parametrize(
    "sources, limit", [([[]], None), ([SRC], 0), ([SRC], [3, 4]), ([list(range(3, 30)) * 3], None)]
)
def test_batched_greedy_rejects_bad_inputs(model, sources, limit):
    with pytest.raises(ValueError):
        generate_batch(model, sources, max_new_tokens=limit)


def test_the_inference_output_matrix_follows_the_weights(model):
    """Without gradients the output projection reads a (d, V) copy of the weights: it must never be stale."""
    src, tgt = torch.tensor([SRC]), torch.tensor([[START, 5, 6]])
    with torch.no_grad():
        before = model(src, tgt).logits
        torch.testing.assert_close(before, model(src, tgt).logits, atol=0, rtol=0)
        weight = model.tgt_embed.tokens.weight
        original = weight[7].clone()
        weight[7] = torch.linspace(-1.0, 1.0, weight.size(1))  # (a constant shift would vanish in LayerNorm)
        changed = model(src, tgt).logits
        weight[7] = original
    with_grad = model(src, tgt).logits  # the plain (V, d) product, with gradients
    assert not torch.allclose(before, changed)
    torch.testing.assert_close(before, with_grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("strategy", [Greedy(), BeamSearch(width=3)])
def test_without_the_causal_mask_each_step_recomputes_the_whole_prefix(device_model, strategy):
    """Off, earlier positions see every new token: the next-token distribution is that of one non-causal pass
    over the whole prefix (the cache, valid only with the mask on, is not reused)."""
    model = device_model
    decoding = Decoding(model, SRC, strategy, switches=ModelSwitches(causal_mask_on=False), max_new_tokens=6)
    src = torch.tensor([SRC], device=next(model.parameters()).device)
    for _ in range(4):
        if decoding.finished:
            break
        next(decoding)
        tokens = decoding._state.tokens  # every running hypothesis, from the start token
        with torch.no_grad():
            unmasked = ModelSwitches(causal_mask_on=False)
            logits = model(src.expand(tokens.size(0), -1), tokens, switches=unmasked).logits[:, -1]
        torch.testing.assert_close(decoding._next_logprobs, logits.float().log_softmax(-1), atol=1e-5, rtol=1e-5)
    causal = Decoding(model, SRC, strategy, max_new_tokens=6)
    causal_probs = [c.prob for c in causal.upcoming()]
    first = Decoding(model, SRC, strategy, switches=ModelSwitches(causal_mask_on=False), max_new_tokens=6)
    assert [c.prob for c in first.upcoming()] == pytest.approx(causal_probs)  # one position: nothing to hide


def test_padding_and_a_separate_start_token_are_never_generated():
    """One rule for decoding, batch translation and the Hugging Face export (`banned_tokens`): even a model that
    scores them highest never writes them."""
    from tests.conftest import tiny_config
    from transformer.decoding import banned_tokens

    assert banned_tokens(tiny_config()) == [0, 1]  # padding, and the start token
    assert banned_tokens(tiny_config(pad_id=5, decoder_start_id=5, eos_id=0)) == [5]  # Marian starts from padding
    model = tiny_model(0, final_logits_bias=True)
    with torch.no_grad():
        model.logits_bias[[0, 1]] = 100.0  # the two banned tokens score highest at every step
    greedy = [step.token_id for step in Decoding(model, [4, 5, 2], Greedy(), max_new_tokens=6)]
    assert greedy and not {0, 1} & set(greedy)
    assert not {0, 1} & set(generate_batch(model, [[4, 5, 2]], max_new_tokens=6)[0])


def test_the_generation_rules_ban_tokens_and_end_rows_at_their_limit():
    """`GenerationRules.constrain`, the one place the rules are written: banned tokens never, and a row at its last
    allowed token can only end; the other rows keep their scores."""
    from tests.conftest import tiny_config
    from transformer.decoding import GenerationRules

    rules = GenerationRules.of(tiny_config())
    scores = torch.randn(3, 12, generator=torch.Generator().manual_seed(0))
    constrained = rules.constrain(scores, torch.tensor([False, True, False]))
    assert torch.isinf(constrained[:, list(rules.banned)]).all()
    assert constrained[1].argmax() == rules.eos_id and torch.isinf(constrained[1]).sum() == 11
    kept = [i for i in range(12) if i not in rules.banned]
    assert torch.equal(constrained[[0, 2]][:, kept], scores[[0, 2]][:, kept])
    assert torch.equal(rules.constrain(scores, False), rules.constrain(scores, torch.zeros(3, dtype=torch.bool)))
    assert torch.equal(scores, torch.randn(3, 12, generator=torch.Generator().manual_seed(0)))  # a copy, not in place
    assert rules.limit(None) == tiny_config().max_positions - 1 and rules.limit(3) == 3
    with pytest.raises(ValueError, match="max_new_tokens must be between 1 and"):
        rules.limit(rules.longest + 1)


def test_a_strategy_chooses_from_a_row_or_from_many():
    """The strategies are objects: Greedy takes the best; Sampling narrowed to one token (top-k 1, or a tiny top-p)
    takes it too, on one row or on a batch; and one seed draws the same tokens again."""
    scores = torch.randn(4, 50, generator=torch.Generator().manual_seed(1)).log_softmax(-1)
    best = scores.argmax(-1)
    assert torch.equal(Greedy().choose(scores), best) and int(Greedy().choose(scores[2])) == int(best[2])
    for narrow in (Sampling(top_k=1, seed=3), Sampling(top_p=1e-6, seed=3)):
        assert torch.equal(narrow.choose(scores, narrow.generator()), best)
        assert int(narrow.choose(scores[1], narrow.generator())) == int(best[1])
    wide = Sampling(temperature=2.0, seed=7)
    assert torch.equal(wide.choose(scores, wide.generator()), wide.choose(scores, wide.generator()))
