"""The scoring of the basics benchmark (`benchmarks.basics`) on a tiny in-memory set: no model, no training data."""

from __future__ import annotations

import sacrebleu

from benchmarks.basics import Sentence, reference_streams, scores, subsets

SET = [
    Sentence("zh-en-001", "你好！", ["Hello!", "Hi!"], "greeting", core=True),
    Sentence("zh-en-002", "谢谢！", ["Thank you!", "Thanks!", "Thank you very much!"], "thanks-apology", core=True),
    Sentence("zh-en-003", "今天零下八度。", ["It's minus eight degrees today."], "weather", core=False),
]
COLLIDING = {"zh-en-001", "zh-en-002"}


def test_reference_streams_are_padded_with_none():
    streams = reference_streams([s.references for s in SET])
    assert streams == [
        ["Hello!", "Thank you!", "It's minus eight degrees today."],
        ["Hi!", "Thanks!", None],
        [None, "Thank you very much!", None],
    ]
    # Any one reference of a sentence counts in full: the second wording scores as high as the first.
    assert sacrebleu.corpus_chrf(["Hi!", "Thanks!", "It's minus eight degrees today."], streams).score == 100


def test_subsets_split_core_and_non_colliding():
    assert subsets(SET, COLLIDING) == {"whole": [0, 1, 2], "core": [0, 1], "non-colliding": [2]}


def test_perfect_hypotheses_score_100_on_every_subset():
    perfect = ["Hello!", "Thanks!", "It's minus eight degrees today."]
    assert scores(SET, perfect, COLLIDING) == {"whole": 100.0, "core": 100.0, "non-colliding": 100.0}
    wrong = ["Goodbye.", "Thanks!", "It's minus eight degrees today."]
    assert scores(SET, wrong, COLLIDING)["non-colliding"] == 100.0  # the miss is a colliding core sentence
    assert scores(SET, wrong, COLLIDING)["core"] < 100.0
    assert scores(SET, wrong, set())["non-colliding"] < 100.0
