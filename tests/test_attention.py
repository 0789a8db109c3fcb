"""The attention core against PyTorch's own implementations."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from transformer.model import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention


@pytest.fixture
def qkv():
    torch.manual_seed(0)
    return torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)


def test_matches_torch_without_mask(qkv):
    q, k, v = qkv
    out, weights = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5))


def test_matches_torch_with_padding_mask(qkv):
    q, k, v = qkv
    ids = torch.tensor([[4, 5, 6, 7, 8, 0, 0], [4, 5, 6, 7, 8, 9, 10]])
    mask = padding_mask(ids, pad_id=0)  # (B, 1, 1, K), True = may attend: the same convention as torch's sdpa
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-6, rtol=1e-5)
    assert torch.all(weights[0, :, :, 5:] == 0)


def test_matches_torch_with_causal_mask():
    torch.manual_seed(1)
    q, k, v = torch.randn(3, 2, 6, 4), torch.randn(3, 2, 6, 4), torch.randn(3, 2, 6, 4)
    out, weights = scaled_dot_product_attention(q, k, v, causal_mask(6, 6))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-6, rtol=1e-5)
    assert torch.all(weights.triu(diagonal=1) == 0)


def test_causal_mask_for_cached_queries_is_the_bottom_of_the_full_mask():
    full = causal_mask(5, 5)
    torch.testing.assert_close(causal_mask(2, 5), full[..., 3:, :])
    assert causal_mask(1, 4).all()  # the newest position sees everything before it


def test_multi_head_attention_matches_torch_nn_multihead_attention():
    torch.manual_seed(2)
    d, h = 16, 4
    ours = MultiHeadAttention(d, h).eval()
    theirs = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)
    x, memory = torch.randn(2, 5, d), torch.randn(2, 7, d)
    ids = torch.tensor([[3] * 7, [3] * 4 + [0] * 3])
    out, weights, _ = ours(x, memory, padding_mask(ids, 0))
    # torch.nn uses the opposite boolean convention: True = blocked
    ref_out, ref_weights = theirs(x, memory, memory, key_padding_mask=ids == 0, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, ref_weights, atol=1e-6, rtol=1e-5)
