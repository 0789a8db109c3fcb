"""From sentence pairs to batches: a token budget per batch, the decoder's input shifted behind <s>, and subword
regularisation drawn the same for the same batch."""

from __future__ import annotations

from tests.conftest import ENGLISH, GERMAN
from transformer.training.batches import (
    batches_from,
    collate,
    encoded_pairs,
    make_batches,
    prepare_tokenizer,
    resampler,
)
from transformer.training.settings import BOS, EOS, PAD, TrainSettings


def test_batches_respect_the_token_budget_and_cover_every_example_once():
    examples = [([5] * (i % 13 + 1), [6] * (i % 7 + 2)) for i in range(300)]
    batches = make_batches(examples, batch_tokens=120, seed=1, epoch=0)
    assert sorted(i for b in batches for i in b) == list(range(300))
    for batch in batches:
        longest = max(max(len(examples[i][0]), len(examples[i][1]) + 1) for i in batch)
        assert len(batch) * longest <= 120
    assert batches == make_batches(examples, 120, seed=1, epoch=0)
    assert batches != make_batches(examples, 120, seed=1, epoch=1)


def test_collate_shifts_the_target_right_behind_the_start_token():
    src, tgt_in, labels = collate([([7, 8, EOS], [9, 10, EOS]), ([7, EOS], [11, EOS])])
    assert src.tolist() == [[7, 8, EOS], [7, EOS, PAD]]
    assert tgt_in.tolist() == [[BOS, 9, 10], [BOS, 11, PAD]]
    assert labels.tolist() == [[9, 10, EOS], [11, EOS, PAD]]


def test_subword_regularisation_samples_segmentations_seeded_by_the_batch(tmp_path):
    """`subword_alpha` > 0: each batch's sentences are segmented by a seeded random draw (Kudo 2018), the same
    for the same (seed, epoch, batch), different from the usual one, and always decoding to the same text."""
    run = TrainSettings.from_dict({"out": str(tmp_path), "vocab_size": 90, "batch_tokens": 200, "subword_alpha": 0.2})
    pairs = list(zip(ENGLISH, GERMAN, strict=True)) * 4
    tokenizer = prepare_tokenizer(tmp_path, pairs, run)  # trained on these pairs, as a run's first call does
    kept = encoded_pairs(tokenizer, pairs, run.max_len)
    examples = [example for _, example in kept]
    resample = resampler(tokenizer, kept, run)
    first = next(batches_from(examples, run, 0, 0, resample))
    again = next(batches_from(examples, run, 0, 0, resample))
    usual = next(batches_from(examples, run, 0, 0))
    assert first == again  # the same draw for the same batch: resuming and every process agree
    assert first[2] != usual[2]  # a draw other than the most probable segmentation
    for (source, target), (usual_source, usual_target) in zip(first[2], usual[2], strict=True):
        assert tokenizer.decode_target(target[:-1]) == tokenizer.decode_target(usual_target[:-1])
        assert len(source) <= run.max_len and source[-1] == usual_source[-1]  # </s> still ends the source
    assert TrainSettings(out="x").subword_alpha == 0.0  # off unless asked for
