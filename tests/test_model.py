"""Model-level behaviour: masks, head ablation, cached decoding, config, every variant trains. The tests that take
`device` run the model on each device present (conftest.py)."""

from __future__ import annotations

import copy
import dataclasses
import itertools

import pytest
import torch

from tests.conftest import tiny_config, tiny_model
from transformer.model import ModelSwitches, Transformer, TransformerConfig

SRC = torch.tensor([[5, 6, 7, 8, 9, 2], [10, 11, 12, 2, 0, 0]])  # second row padded (pad_id 0)
TGT = torch.tensor([[1, 20, 21, 22, 23], [1, 24, 25, 26, 27]])  # start token 1
PAST = torch.ones(5, 5, dtype=torch.bool).tril()  # (T, T): key position <= query position


def run(model, src=SRC, tgt=TGT, **kw):
    device = next(model.parameters()).device
    with torch.no_grad():
        return model(src.to(device), tgt.to(device), return_attention=True, switches=ModelSwitches(**kw))


# ---- masks ----------------------------------------------------------------------------------------------


def test_causal_mask_zeroes_the_future_exactly(device):
    out = run(tiny_model().to(device))
    past = PAST.to(device)
    for weights in out.attention.decoder_self:
        assert torch.all(weights[..., ~past] == 0)
        assert torch.all(weights[..., past] > 0)


def test_with_the_causal_mask_changing_a_future_token_leaves_earlier_outputs_alone():
    model = tiny_model()
    changed = TGT.clone()
    changed[:, 3] = 28
    a, b = run(model), run(model, tgt=changed)
    torch.testing.assert_close(a.logits[:, :3], b.logits[:, :3], atol=0, rtol=0)
    assert not torch.allclose(a.logits[:, 3:], b.logits[:, 3:])


def test_without_the_causal_mask_the_future_leaks_into_earlier_outputs():
    model = tiny_model()
    changed = TGT.clone()
    changed[:, 3] = 28
    a, b = run(model, causal_mask_on=False), run(model, tgt=changed, causal_mask_on=False)
    assert (a.logits[:, :3] - b.logits[:, :3]).abs().max() > 1e-4
    assert all(torch.all(w[..., ~PAST] > 0) for w in a.attention.decoder_self)


def test_padded_source_positions_get_exactly_zero_weight(device):
    out = run(tiny_model().to(device))
    for weights in out.attention.encoder + out.attention.cross:
        assert torch.all(weights[1, ..., 4:] == 0)
        assert torch.all(weights[0] > 0)


def test_padding_mask_off_lets_queries_attend_to_padding():
    model = tiny_model()
    out = run(model, padding_mask_on=False)
    for weights in out.attention.encoder + out.attention.cross:
        assert torch.all(weights[1, ..., 4:] > 0)
    # and the real tokens' outputs change, for the padded sentence only
    on = run(model)
    assert not torch.allclose(on.logits[1], out.logits[1])
    torch.testing.assert_close(on.logits[0], out.logits[0], atol=1e-6, rtol=0)


def test_padding_does_not_change_the_result_with_the_mask_on(device):
    model = tiny_model().to(device)
    alone = run(model, src=SRC[1:, :4], tgt=TGT[1:])
    padded = run(model)
    torch.testing.assert_close(alone.logits[0], padded.logits[1], atol=1e-5, rtol=1e-5)


# ---- head ablation -----------------------------------------------------------------------------------------


def test_silencing_every_cross_attention_head_makes_the_output_independent_of_the_source():
    model = tiny_model()
    all_cross = [("cross", layer, head) for layer in range(2) for head in range(2)]
    other_src = torch.tensor([[13, 14, 15, 16, 17, 2], [18, 19, 2, 0, 0, 0]])
    a = run(model, silenced=all_cross)
    b = run(model, src=other_src, silenced=all_cross)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-6, rtol=0)
    assert not torch.allclose(run(model).logits, run(model, src=other_src).logits)


@pytest.mark.parametrize("family, layer, head", [("encoder", 1, 0), ("decoder_self", 0, 1), ("cross", 1, 1)])
def test_silencing_one_head_equals_cutting_its_columns_of_the_output_projection(family, layer, head, device):
    """Only what flows through that head changes: same as zeroing its slice of W^O (and nothing else)."""
    model = tiny_model().to(device)
    surgery = copy.deepcopy(model)
    modules = {
        "encoder": surgery.encoder_layers[layer].self_attn,
        "decoder_self": surgery.decoder_layers[layer].self_attn,
        "cross": surgery.decoder_layers[layer].cross_attn,
    }
    d_head = model.config.d_head
    with torch.no_grad():
        modules[family].out_proj.weight[:, head * d_head : (head + 1) * d_head] = 0
    silenced = run(model, silenced=[(family, layer, head)])
    torch.testing.assert_close(silenced.logits, run(surgery).logits, atol=1e-6, rtol=1e-5)
    assert not torch.allclose(silenced.logits, run(model).logits)


def test_silencing_a_head_leaves_earlier_layers_and_its_own_weights_untouched():
    model = tiny_model()
    plain, silenced = run(model), run(model, silenced=[("encoder", 1, 0)])
    torch.testing.assert_close(plain.attention.encoder[0], silenced.attention.encoder[0], atol=0, rtol=0)
    torch.testing.assert_close(plain.attention.encoder[1], silenced.attention.encoder[1], atol=0, rtol=0)
    assert not torch.allclose(plain.attention.cross[0], silenced.attention.cross[0])


@pytest.mark.parametrize(
    "bad, message",
    [
        (("encoder", 2, 0), "layer 2 does not exist"),
        (("cross", 0, 5), "head 5 does not exist"),
        (("x", 0, 0), "family"),
    ],
)
def test_silencing_a_head_that_does_not_exist_is_an_error(bad, message):
    with pytest.raises(ValueError, match=message):
        run(tiny_model(), silenced=[bad])


def test_switches_are_per_call_not_state():
    model = tiny_model()
    before = run(model).logits
    run(model, causal_mask_on=False, padding_mask_on=False, silenced=[("cross", 0, 0)], use_positions=False)
    torch.testing.assert_close(run(model).logits, before, atol=0, rtol=0)


# ---- incremental decoding ---------------------------------------------------------------------------------


@pytest.mark.parametrize("norm, positions", [("post", "sinusoidal_concat"), ("pre", "learned")])
def test_cached_incremental_decoding_equals_full_recomputation_step_by_step(norm, positions, device):
    model = tiny_model(norm_position=norm, positional_encoding=positions).to(device)
    full = run(model)
    src, tgt = SRC.to(device), TGT.to(device)
    with torch.no_grad():
        encoded = model.encode(src)
        cache = model.init_cache(encoded)
        for t in range(tgt.size(1)):
            step = model.decode(tgt[:, t : t + 1], encoded, cache=cache, return_attention=True)
            cache = step.cache
            assert cache.length == t + 1
            torch.testing.assert_close(step.logits[:, 0], full.logits[:, t], atol=1e-5, rtol=1e-5)
            for layer in range(2):
                torch.testing.assert_close(
                    step.self_attention[layer][:, :, 0], full.attention.decoder_self[layer][:, :, t, : t + 1]
                )
                torch.testing.assert_close(step.cross_attention[layer][:, :, 0], full.attention.cross[layer][:, :, t])


def test_cross_attention_keys_are_computed_once():
    model = tiny_model()
    with torch.no_grad():
        encoded = model.encode(SRC)
        cache = model.init_cache(encoded)
        after = model.decode(TGT[:, :2], encoded, cache=cache).cache
    for before_layer, after_layer in zip(cache.layers, after.layers, strict=True):
        assert after_layer.cross_kv is before_layer.cross_kv
        assert after_layer.self_kv.k.shape == (2, 2, 2, 8)  # (B, H, T, d_k) grew from nothing to 2 positions


# ---- configuration --------------------------------------------------------------------------------------------


def test_config_is_frozen_and_changed_with_replace():
    config = tiny_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 32  # type: ignore[misc]
    assert dataclasses.replace(config, d_model=32, n_heads=4).d_head == 8


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(d_model=15), "divisible"),
        (dict(n_heads=0), "positive"),
        (dict(activation="tanh"), "activation"),
        (dict(positional_encoding="rotary"), "positional_encoding"),
        (dict(share_embeddings=True, tgt_vocab_size=31), "share_embeddings"),
        (dict(pad_id=30), "outside the vocabulary"),
        (dict(dropout=1.0), "dropout"),
    ],
)
def test_invalid_configs_are_rejected_with_a_message(change, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**change)


def test_config_round_trips_through_a_dict_and_rejects_unknown_keys():
    config = tiny_config(activation="gelu")
    assert TransformerConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown key"):
        TransformerConfig.from_dict({**config.to_dict(), "rope": True})


def test_shared_and_tied_embeddings_are_one_matrix():
    model = tiny_model(share_embeddings=True, tie_output=True)
    assert model.src_embed.tokens.weight is model.tgt_embed.tokens.weight
    assert model.output_proj is None
    separate = tiny_model(share_embeddings=False, tie_output=False, final_logits_bias=True)
    assert separate.num_parameters() > model.num_parameters()


def test_embeddings_are_scaled_by_sqrt_d_model():
    scaled, unscaled = tiny_model(), tiny_model(scale_embedding=False)
    ids = torch.tensor([[5]])
    with torch.no_grad():
        ratio = scaled.src_embed(ids, use_positions=False) / unscaled.src_embed(ids, use_positions=False)
    torch.testing.assert_close(ratio, torch.full_like(ratio, 4.0))  # √16


VARIANTS = list(
    itertools.product(
        ["post", "pre"], ["sinusoidal_interleaved", "sinusoidal_concat", "learned"], ["relu", "gelu", "silu"]
    )
)


@pytest.mark.slow
@pytest.mark.parametrize("norm, positions, activation", VARIANTS)
def test_every_variant_learns_to_copy(norm, positions, activation):
    """A few dozen Adam steps on a copy task lower the loss a lot: every combination can be trained."""
    torch.manual_seed(0)
    config = tiny_config(
        norm_position=norm, positional_encoding=positions, activation=activation, share_embeddings=True
    )
    model = Transformer(config).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    src = torch.randint(3, 30, (16, 6))
    tgt_in = torch.cat([torch.ones(16, 1, dtype=torch.long), src], dim=1)
    tgt_out = torch.cat([src, torch.full((16, 1), 2)], dim=1)
    losses = []
    for _ in range(60):
        logits = model(src, tgt_in).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 30), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] > 2.5  # about ln(30) = 3.4 at the start: the initialisation is sane
    assert losses[-1] < 0.5 * losses[0]


def test_same_architecture_ignores_only_the_dropout_rates():
    config = TransformerConfig(src_vocab_size=50, tgt_vocab_size=50, d_model=16, n_heads=2, d_ff=32)
    assert config.same_architecture(dataclasses.replace(config, dropout=0.3, attention_dropout=0.1))
    assert not config.same_architecture(dataclasses.replace(config, d_ff=64))
