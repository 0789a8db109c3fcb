"""Positional encodings: the paper's formula in both layouts, and the worked example of the tutorials."""

from __future__ import annotations

import math

import pytest
import torch

from tests.conftest import tiny_model
from transformer.model import sinusoidal_position_encoding


def test_worked_example_seq_len_4_d_model_4_base_100():
    # From the classic tutorials (machinelearningmastery's "A Gentle Introduction to Positional Encoding").
    expected = torch.tensor(
        [
            [0.0, 1.0, 0.0, 1.0],
            [0.84147098, 0.54030231, 0.09983342, 0.99500417],
            [0.90929743, -0.41614684, 0.19866933, 0.98006658],
            [0.14112001, -0.9899925, 0.29552021, 0.95533649],
        ]
    )
    torch.testing.assert_close(sinusoidal_position_encoding(4, 4, "interleaved", base=100), expected)


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
def test_matches_the_formula(layout):
    n, d, base = 50, 12, 10000.0
    table = sinusoidal_position_encoding(n, d, layout, base)
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / base ** (2 * i / d)
            sin_col, cos_col = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + d // 2)
            assert table[pos, sin_col].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, cos_col].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_layouts_are_permutations_of_each_other():
    inter = sinusoidal_position_encoding(10, 8, "interleaved")
    concat = sinusoidal_position_encoding(10, 8, "concat")
    torch.testing.assert_close(concat, torch.cat([inter[:, 0::2], inter[:, 1::2]], dim=1), atol=0, rtol=0)


@pytest.mark.parametrize("kind", ["sinusoidal_interleaved", "sinusoidal_concat", "learned"])
def test_the_model_adds_exactly_its_encoding(kind):
    model = tiny_model(positional_encoding=kind)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        with_positions = model.src_embed(ids)
        without = model.src_embed(ids, use_positions=False)
    expected = model.src_embed.positions(4)
    if kind != "learned":
        layout = "interleaved" if kind == "sinusoidal_interleaved" else "concat"
        torch.testing.assert_close(expected, sinusoidal_position_encoding(64, 16, layout)[:4], atol=0, rtol=0)
    torch.testing.assert_close(with_positions - without, expected[None], atol=1e-6, rtol=0)


def test_too_long_input_is_a_clear_error():
    model = tiny_model(max_positions=8)
    with pytest.raises(ValueError, match="longer than max_positions=8"):
        model.encode(torch.ones(1, 9, dtype=torch.long))
