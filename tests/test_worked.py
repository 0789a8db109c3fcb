"""The worked computation (transformer/worked.py) is a second path to the model's own numbers: its logits and its
attention weights equal those of `Transformer.forward` for every architecture variant and for Marian, and on every
device present for the tests that take `device` (conftest.py)."""

from __future__ import annotations

import itertools

import pytest
import torch

from tests.conftest import tiny_model
from transformer.marian import load_marian
from transformer.model import ModelSwitches, Transformer
from transformer.worked import work_through

TOL = 1e-5
SRC = [5, 9, 7, 11, 3, 2, 0, 0]  # two padding positions at the end
TGT = [1, 6, 12, 4, 8]


def model_numbers(model: Transformer, src: list[int], tgt: list[int], **switches):
    device = next(model.parameters()).device
    src_ids, tgt_ids = (torch.tensor([ids], device=device) for ids in (src, tgt))
    with torch.no_grad():
        out = model(src_ids, tgt_ids, return_attention=True, switches=ModelSwitches(**switches))
    return out.logits[0], out.attention


def assert_same_as_the_model(model: Transformer, src=SRC, tgt=TGT, **switches):
    logits, attention = model_numbers(model, src, tgt, **switches)
    worked = work_through(model, src, tgt, switches=ModelSwitches(**switches))
    assert (worked.output.logits - logits[-1]).abs().max() <= TOL
    for mine, theirs in [
        ([layer.self_attention.weights for layer in worked.encoder], attention.encoder),
        ([layer.self_attention.weights for layer in worked.decoder], attention.decoder_self),
        ([layer.cross_attention.weights for layer in worked.decoder], attention.cross),
    ]:
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs, strict=True):
            assert a.shape == b[0].shape and (a - b[0]).abs().max() <= TOL
    return worked


VARIANTS = [
    dict(norm_position=norm, positional_encoding=positions, activation=activation, tie_output=tied)
    for norm, positions, activation, tied in itertools.product(
        ["post", "pre"], ["sinusoidal_interleaved", "sinusoidal_concat", "learned"], ["relu", "gelu", "silu"],
        [True, False],
    )
]  # fmt: skip


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(str(x) for x in v.values()))
def test_the_worked_logits_and_attention_equal_the_models_for_every_variant(variant):
    assert_same_as_the_model(tiny_model(seed=3, **variant))


@pytest.mark.parametrize(
    "switches",
    [
        dict(causal_mask_on=False),
        dict(padding_mask_on=False),
        dict(use_positions=False),
        dict(silenced=[("encoder", 0, 1), ("decoder_self", 1, 0), ("cross", 0, 0)]),
    ],
)
def test_the_worked_computation_follows_every_switch(switches, device):
    model = tiny_model(seed=4, share_embeddings=True, final_logits_bias=True).to(device)
    worked = assert_same_as_the_model(model, **switches)
    if "silenced" in switches:  # a silenced head's output is zeros before W^O
        assert (
            not worked.decoder[1].self_attention.kept[0] and worked.decoder[1].self_attention.heads[0].abs().sum() == 0
        )
        assert worked.decoder[1].self_attention.heads[1].abs().sum() > 0


def test_an_imported_marian_model_is_worked_through_to_its_own_numbers(marian):
    folder, _ = marian
    checkpoint = load_marian(folder)
    src = checkpoint.tokenizer.encode_source("The weather is nice today.")
    pad = checkpoint.model.config.pad_id
    assert_same_as_the_model(checkpoint.model, src, [pad, 5, 9, 7])


def test_each_stage_has_the_tutorials_shapes_and_values():
    model = tiny_model(seed=5)
    config = model.config
    worked = work_through(model, SRC, TGT)
    S, T, H, d, d_k, F = len(SRC), len(TGT), config.n_heads, config.d_model, config.d_head, config.d_ff
    embedding = worked.target_embedding
    assert embedding.token_vectors.shape == (T, d) and embedding.scale == pytest.approx(d**0.5)
    torch.testing.assert_close(embedding.out, embedding.token_vectors * d**0.5 + model.tgt_embed.positions(T))
    layer = worked.decoder[0]
    self_attention, cross = layer.self_attention, layer.cross_attention
    assert self_attention.q.shape == (H, T, d_k) and self_attention.k.shape == (H, T, d_k)
    assert self_attention.scores.shape == (H, T, T) and cross.scores.shape == (H, T, S)
    assert self_attention.masked_scores[0, 1, 2] == float("-inf")  # the future is masked: −∞ before the softmax
    assert self_attention.weights[:, 1, 2:].abs().max() == 0 and (cross.weights[..., -2:] == 0).all()  # padding
    torch.testing.assert_close(self_attention.weights.sum(-1), torch.ones(H, T))
    assert self_attention.concat.shape == (T, d) and self_attention.out.shape == (T, d)
    after = layer.self_attention_add_norm  # post-norm: LayerNorm(x + sublayer)
    torch.testing.assert_close(after.total, embedding.out + self_attention.out)
    assert after.normalised.mean(-1).abs().max() < 1e-5  # γ = 1, β = 0 at initialisation
    assert layer.ffn.hidden.shape == (T, F) and layer.ffn.exactly_zero(T - 1) == int(
        (layer.ffn.pre_activation[-1] <= 0).sum()
    )
    assert worked.output.logits.shape == (config.tgt_vocab_size,)
    torch.testing.assert_close(worked.output.probabilities.sum(), torch.tensor(1.0))


def test_the_cross_attention_keys_and_values_are_the_ones_cached_at_the_first_step(device):
    model = tiny_model(seed=6).to(device)
    worked = work_through(model, SRC, TGT)
    with torch.no_grad():
        cache = model.init_cache(model.encode(torch.tensor([SRC], device=device)))
    for layer, cached in zip(worked.decoder, cache.layers, strict=True):
        assert (layer.cross_attention.k - cached.cross_kv.k[0]).abs().max() <= TOL
        assert (layer.cross_attention.v - cached.cross_kv.v[0]).abs().max() <= TOL


def test_what_each_layer_would_say_ends_with_the_models_own_prediction():
    model = tiny_model(seed=7, norm_position="pre")
    worked = work_through(model, SRC, TGT, top_k=3)
    chosen = int(worked.output.probabilities.argmax())
    last = worked.layer_predictions[-1]
    assert len(worked.layer_predictions) == model.config.n_decoder_layers
    assert last.top_ids[0] == chosen and last.chosen_probability == pytest.approx(
        float(worked.output.probabilities[chosen])
    )
    assert all(len(p.top_ids) == 3 and p.top_probabilities == sorted(p.top_probabilities, reverse=True)
               for p in worked.layer_predictions)  # fmt: skip


def test_the_model_is_only_read():
    model = tiny_model(seed=8)
    before = {name: p.clone() for name, p in model.state_dict().items()}
    work_through(model, SRC, TGT, switches=ModelSwitches(silenced=[("cross", 1, 1)]))
    assert all(torch.equal(before[name], p) for name, p in model.state_dict().items())
    assert not any(module._forward_hooks or module._forward_pre_hooks for module in model.modules())


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_the_residual_stream_goes_from_the_embedding_to_what_leaves_each_stack(norm):
    model = tiny_model(seed=9, norm_position=norm)
    worked = work_through(model, SRC, TGT)
    n_enc, n_dec = model.config.n_encoder_layers, model.config.n_decoder_layers
    encoder = worked.residual_stream("encoder", 3)
    decoder = worked.residual_stream("decoder", worked.position)
    pre = norm == "pre"
    assert len(encoder) == 1 + 2 * n_enc + pre and len(decoder) == 1 + 3 * n_dec + pre
    assert [name for name, _ in decoder[:4]] == ["embedding", "L0 self-attn", "L0 cross-attn", "L0 FFN"]
    assert torch.equal(encoder[0][1], worked.source_embedding.out[3])
    assert torch.equal(encoder[-1][1], worked.memory[3])  # the encoder's output, the memory
    assert torch.equal(decoder[-1][1], worked.output.final)  # what the output projection reads
    assert torch.equal(decoder[3][1], worked.decoder[0].out[-1])
    earlier = worked.residual_stream("decoder", 1)  # an earlier position has no output projection
    assert len(earlier) == 1 + 3 * n_dec and torch.equal(earlier[-1][1], worked.decoder[-1].out[1])
    with pytest.raises(ValueError, match="unknown stack"):
        worked.residual_stream("middle", 0)
