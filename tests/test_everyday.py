"""The project's own sentences: the committed authored corpus and everyday test set are clean and kept apart."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer.training.corpus.cleaning import norm_key
from transformer.training.corpus.tsv import load_corpus
from transformer.training.everyday import (
    AUTHORED_DIR,
    AUTHORED_TOPICS,
    EVERYDAY_FILE,
    TOPICS,
    ZH_EN,
    ZH_EN_AUTHORED_DIR,
    ZH_EN_EVERYDAY_FILE,
    NearDuplicateIndex,
    Row,
    jaccard,
    overlapping,
    problems,
    read_authored,
    read_rows,
    split_everyday,
    word_set,
)

ROOT = AUTHORED_DIR.parent.parent


@pytest.fixture(scope="module")
def authored() -> list[Row]:
    return read_authored()


@pytest.fixture(scope="module")
def everyday() -> list[Row]:
    return read_rows(EVERYDAY_FILE)


# --- the committed files ---------------------------------------------------------------------------------------------


def test_the_authored_corpus_is_large_and_clean(authored):
    assert len(authored) >= 10_000
    assert problems(authored) == []  # no empty side, known topics and tags, 3–25 words, final punctuation, ratios


def test_the_authored_corpus_has_no_duplicates_across_files(authored):
    english = [norm_key(row.first) for row in authored]
    german = [norm_key(row.second) for row in authored]
    assert len(set(english)) == len(english)
    assert len(set(german)) == len(german)


def test_the_authored_corpus_covers_the_grid(authored):
    tags = {tag for row in authored for tag in row.tags}
    for needed in ("verb-final", "relative", "separable", "perfect-haben", "perfect-sein", "modal", "um-zu"):
        assert needed in tags
    for needed in ("w-question", "yes-no-question", "negation-nicht", "negation-kein", "reflexive", "passive"):
        assert needed in tags
    topics = {row.topic for row in authored}
    assert set(TOPICS) - {"family", "school", "travel", "work"} <= topics  # the others are split finer
    lengths = [len(row.first.split()) for row in authored]
    assert min(lengths) >= 3 and max(lengths) <= 25 and sum(n >= 16 for n in lengths) > 1000


def test_the_everyday_set_is_balanced_and_clean(everyday):
    assert len(everyday) >= 300
    assert problems(everyday, (6, 20)) == []
    per_topic = {topic: sum(row.topic == topic for row in everyday) for topic in TOPICS}
    assert min(per_topic.values()) >= 30 and set(per_topic) == {row.topic for row in everyday}


def test_no_authored_pair_is_in_the_everyday_set(authored, everyday):
    """Exact matches are never allowed; near-duplicates are removed from the training split by the builder."""
    held_out_english = {norm_key(row.first) for row in everyday}
    held_out_german = {norm_key(row.second) for row in everyday}
    assert not [row for row in authored if norm_key(row.first) in held_out_english]
    assert not [row for row in authored if norm_key(row.second) in held_out_german]


@pytest.mark.slow
@pytest.mark.parametrize(("pair", "everyday_file"), [("en-de", EVERYDAY_FILE), ("zh-en", ZH_EN_EVERYDAY_FILE)])
def test_the_corpus_train_split_has_no_everyday_sentence_or_near_duplicate(pair, everyday_file):
    corpus = load_corpus(ROOT / "data" / pair)
    dev, test = split_everyday(read_rows(everyday_file), seed=0)
    assert corpus["everyday-dev"] == [row.pair for row in dev]
    assert corpus["everyday-test"] == [row.pair for row in test]
    assert not any(overlapping(corpus["train"], [*corpus["everyday-dev"], *corpus["everyday-test"]]))


def test_files_are_valid_utf8_without_stray_whitespace():
    for path in [*sorted(AUTHORED_DIR.glob("*.tsv")), EVERYDAY_FILE, *sorted(ZH_EN_AUTHORED_DIR.glob("*.tsv"))]:
        text = path.read_bytes().decode("utf-8")  # raises on invalid UTF-8
        assert "\r" not in text and "\u00a0" not in text and text.endswith("\n")


# --- the dev/test split ---------------------------------------------------------------------------------------------


def _rows(n: int) -> list[Row]:
    return [Row(f"Sentence {i} is here.", f"Satz {i} ist hier.", TOPICS[i % 3], ("present",)) for i in range(n)]


def test_split_everyday_halves_every_topic_deterministically():
    rows = _rows(30)
    dev, test = split_everyday(rows, seed=0)
    assert sorted(dev + test, key=rows.index) == rows
    for topic in TOPICS[:3]:
        assert sum(r.topic == topic for r in dev) == sum(r.topic == topic for r in test) == 5
    assert split_everyday(rows, seed=0) == (dev, test)
    assert split_everyday(rows, seed=1) != (dev, test)


# --- near-duplicates ------------------------------------------------------------------------------------------------


def test_word_set_and_jaccard():
    assert word_set("It's late, Tom!") == {"it", "s", "late", "tom"}
    assert jaccard(word_set("a b c d"), word_set("a b c e")) == pytest.approx(3 / 5)


VOCABULARY = ["the", "a", "cat", "dog", "sat", "ran", "on", "in", "mat", "park", "big", "red"]
words = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(words, min_size=1, max_size=12), words, st.sampled_from([0.5, 0.8, 1.0]))
def test_the_prefix_filtered_index_finds_what_brute_force_finds(corpus, query, threshold):
    sentences = [" ".join(sentence) for sentence in corpus]
    index = NearDuplicateIndex(sentences, threshold)
    found = index.match(" ".join(query))
    expected = [i for i, s in enumerate(sentences) if jaccard(word_set(s), word_set(" ".join(query))) >= threshold]
    assert (found is None) == (not expected)
    if found is not None:
        assert found in expected


def test_overlapping_checks_both_sides():
    held_out = [("We went to the cinema on Friday evening.", "Wir sind am Freitagabend ins Kino gegangen.")]
    pairs = [
        ("We went to the cinema on Friday evening!", "Ganz anders."),  # English near
        ("Something else entirely.", "Wir sind am Freitagabend ins Kino gegangen!"),  # German near
        ("We went to the theatre.", "Wir sind ins Theater gegangen."),  # neither
    ]
    assert overlapping(pairs, held_out) == [True, True, False]


def test_problems_names_what_is_wrong():
    good = Row("I like tea.", "Ich mag Tee.", "food", ("present",))
    bad = [
        good,
        Row("I like tea!", "Ich trinke gern Tee!", "food", ("present",)),  # the same English up to punctuation
        Row("Tea.", "Tee.", "food", ("present",)),  # too short
        Row("I like milk", "Ich mag Milch.", "food", ("present",)),  # no final punctuation
        Row("I like coffee.", "Ich mag Kaffee.", "space", ("warp",)),  # unknown topic and tag
    ]
    found = problems(bad)
    assert len(found) == 5
    assert any("duplicate" in p for p in found) and any("1 words" in p for p in found)
    assert any("unknown topic" in p for p in found) and any("unknown or missing tags" in p for p in found)
    assert problems([good]) == []


def test_read_rows_refuses_malformed_lines(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("I like tea.\tIch mag Tee.\tfood\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv:1: expected 4 tab-separated columns, got 3"):
        read_rows(path)


def test_the_index_finds_every_everyday_sentence_and_no_two_share_all_their_words(everyday):
    index = NearDuplicateIndex(row.first for row in everyday)
    hits = sum(index.match(row.first) is not None for row in everyday)
    assert hits == len(everyday)  # each finds itself
    assert all(
        jaccard(word_set(a.first), word_set(b.first)) < 1.0
        for a, b in itertools.islice(itertools.combinations(everyday, 2), 2000)
    )


# --- the Chinese sentences (zh-en) ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def authored_zh() -> list[Row]:
    return read_authored(ZH_EN_AUTHORED_DIR)


@pytest.fixture(scope="module")
def everyday_zh() -> list[Row]:
    return read_rows(ZH_EN_EVERYDAY_FILE)


def test_the_chinese_authored_corpus_is_large_clean_and_covers_the_grid(authored_zh):
    assert len(authored_zh) >= 10_000
    assert problems(authored_zh, spec=ZH_EN) == []  # lengths in characters, full-width stops, no Chinese in English
    tags = {tag for row in authored_zh for tag in row.tags}
    for needed in ("measure-word", "le", "guo", "zhe", "ba", "bei", "bi", "shi-de", "yinwei-suoyi", "ruguo-jiu"):
        assert needed in tags
    for needed in ("question-ma", "question-word", "a-not-a", "resultative", "directional", "potential"):
        assert needed in tags
    assert {row.topic for row in authored_zh} == set(AUTHORED_TOPICS)
    lengths = [ZH_EN.length(row.first) for row in authored_zh]
    assert sum(n >= 26 for n in lengths) > 1000 and sum(n <= 8 for n in lengths) > 1000


def test_the_chinese_everyday_set_is_balanced_clean_and_apart_from_training(authored_zh, everyday_zh):
    assert len(everyday_zh) >= 600
    assert problems(everyday_zh, (6, 30), spec=ZH_EN) == []
    assert {row.topic: sum(r.topic == row.topic for r in everyday_zh) for row in everyday_zh} == dict.fromkeys(
        TOPICS, 60
    )
    held_out = {side: {norm_key(row.pair[side]) for row in everyday_zh} for side in (0, 1)}
    assert not [row for row in authored_zh if any(norm_key(row.pair[side]) in held_out[side] for side in (0, 1))]
    firsts = [norm_key(row.first) for row in authored_zh]
    assert len(set(firsts)) == len(firsts)  # no duplicates across the writers' files
