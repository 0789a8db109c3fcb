"""The basics test set's scoring and hand judgements (`transformer.training.basics`) on a tiny in-memory set: no
model, no training data."""

from __future__ import annotations

import pytest
import sacrebleu

from transformer.training.basics import (
    Judgements,
    Sentence,
    judgements_for,
    measure,
    reference_streams,
    scores,
    subsets,
)

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


JUDGED = """id\toutput\tverdict\treason
zh-en-001\tHi there!\tright\ta greeting a native speaker accepts
zh-en-001\tYou're good!\twrong\t你好 read word for word
zh-en-002\tPlease thank!\twrong\tnot English
"""


def _judgements(tmp_path, text: str = JUDGED) -> Judgements:
    path = tmp_path / "judged" / "zh-en.tsv"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    assert judgements_for(tmp_path / "zh-en.tsv") == path
    return Judgements.read(path)


def test_a_reference_is_right_and_anything_else_needs_a_judgement(tmp_path):
    judged = _judgements(tmp_path)
    assert judged.verdict(SET[0], "Hi!") is True  # a reference
    assert judged.verdict(SET[0], "Hi there!") is True
    assert judged.verdict(SET[0], "You're good!") is False
    assert judged.verdict(SET[0], "Howdy!") is None
    assert judged.verdict(SET[1], "Hi there!") is None  # a judgement belongs to one sentence


def test_the_count_is_of_the_core_and_names_what_is_not_judged(tmp_path):
    judged = _judgements(tmp_path)
    count = judged.count(SET, ["Hi there!", "Thanks a million!", "wrong, but not core"])
    assert (count.right, count.of, count.unjudged) == (1, 2, [("zh-en-002", "Thanks a million!")])
    assert str(count) == "1/2 (1 not judged)"
    assert str(judged.count(SET, ["Hello!", "Please thank!", ""])) == "1/2"


def test_beam_broke_lists_what_greedy_gets_right_and_beam_wrong(tmp_path):
    judged = _judgements(tmp_path)
    greedy = ["Hello!", "Please thank!", "x"]
    beam = ["You're good!", "Thanks!", "y"]
    assert judged.beam_broke(SET, greedy, beam) == ["zh-en-001"]
    numbers = measure(SET, {"greedy": greedy, "beam": beam}, judged)
    assert numbers["judged"]["greedy"] == {"right": 1, "of": 2, "unjudged": []}
    assert numbers["judged"]["beam"] == {"right": 1, "of": 2, "unjudged": []}
    assert numbers["beam_broke"] == ["zh-en-001"]
    assert set(numbers["chrf"]["beam"]) == {"whole", "core"}


@pytest.mark.parametrize(
    ("row", "message"),
    [("zh-en-001\tHi!\tfine\t", "the verdict must be right or wrong"), ("zh-en-001\tHi there!\twrong\t", "twice")],
)
def test_a_bad_judgement_file_is_an_error_that_names_the_line(tmp_path, row, message):
    with pytest.raises(ValueError, match=message) as error:
        _judgements(tmp_path, JUDGED + row + "\n")
    assert ":5:" in str(error.value)


def test_no_judgement_file_judges_nothing(tmp_path):
    assert Judgements.read(tmp_path / "judged" / "en-de.tsv").verdicts == {}
