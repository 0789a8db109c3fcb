"""Golden tests on the checkpoints shipped in checkpoints/: fixed inputs, expected outputs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import CHECKPOINTS
from transformer.checkpoint import load_checkpoint
from transformer.decoding import BeamSearch, translate
from transformer.training.synthetic import exact_match, make_split

MB = 1024 * 1024


@pytest.fixture(scope="module")
def numbers_de():
    return load_checkpoint(CHECKPOINTS / "numbers-de")


@pytest.mark.parametrize(
    "source, expected",
    [
        ("seven", "sieben"),
        ("twenty-one", "einundzwanzig"),
        ("ninety-seven", "siebenundneunzig"),
        ("one hundred and twenty-one", "einhunderteinundzwanzig"),
        ("seven thousand, three hundred and eighty-five", "siebentausenddreihundertfünfundachtzig"),
    ],
)
def test_numbers_de_golden(numbers_de, source, expected):
    assert translate(numbers_de, source) == expected
    assert translate(numbers_de, source, BeamSearch(4)) == expected


def test_numbers_de_is_exact_on_held_out_numbers(numbers_de):
    pairs = make_split("numbers-de", "test", n=100, seed=1)
    predictions = [translate(numbers_de, source) for source, _ in pairs]
    assert exact_match(predictions, [target for _, target in pairs]) >= 0.99


@pytest.fixture(scope="module")
def en_de():
    return load_checkpoint(CHECKPOINTS / "en-de")


@pytest.mark.parametrize(
    "source, greedy, beam",
    [
        # none of the first three is in the training data
        ("The weather is nice today.", "Das Wetter ist heute schön.", None),
        ("The children are playing in the garden.", "Die Kinder spielen im Garten.", None),
        ("Where is the train station?", "Wo ist der Zug?", None),  # "Zug": the train, not the station
        ("Can you help me?", "Kannst du mir helfen?", None),
        # from the everyday test set: never trained on
        ("Excuse me, where is the nearest pharmacy?", "Entschuldigung, wo ist die nächste Apotheke?", None),
        ("My brother lives in a small town near the sea.", "Mein Bruder wohnt in einer kleinen Stadt am Meer.", None),
        # the first things a class types (issue 37; the basics test set, never trained on)
        ("Thank you very much.", "Vielen Dank.", None),  # beam search with length penalty 2.0 made it longer
        ("What time is it?", "Wie spät ist es?", None),
        ("Hello!", "Hallo!", None),
        ("You're welcome.", "Bitte schön.", "Gern geschehen."),
    ],
)
def test_en_de_golden(en_de, source, greedy, beam):
    assert translate(en_de, source) == greedy
    assert en_de.generation["length_penalty"] == 1.0
    assert translate(en_de, source, BeamSearch(4, en_de.generation["length_penalty"])) == (beam or greedy)


def test_en_de_examples_come_from_the_test_sets_and_are_labelled_honestly(en_de):
    from transformer.training.corpus.tsv import load_corpus

    references = dict(load_corpus(CHECKPOINTS.parent / "data" / "en-de")["everyday-test"])
    examples = json.loads((CHECKPOINTS / "en-de" / "examples.json").read_text(encoding="utf-8"))["examples"]
    assert sum(e["works"] for e in examples) >= 5 and 2 <= sum(not e["works"] for e in examples) <= 3
    assert any(e["sentence"] == "Thank you very much." for e in examples)  # a first lesson's sentence too
    for example in examples:
        reference = references.get(example["sentence"]) or example["translation"]
        output = translate(en_de, example["sentence"])
        assert (output == reference) == example["works"], example["sentence"]
        assert example["works"] or example["why"]


@pytest.fixture(scope="module")
def zh_en():
    return load_checkpoint(CHECKPOINTS / "zh-en")


@pytest.mark.parametrize(
    "source, greedy",
    [
        ("今天天气真好。", "The weather is really nice today."),  # the tutorials' own example
        ("火车站在哪儿？", "Where's the train station?"),
        ("孩子们在花园里玩。", "The kids are playing in the garden."),
        # from the everyday test set: never trained on
        ("你能借我一支笔吗？", "Can you lend me a pen?"),
        ("如果你累了，就早点睡吧。", "If you're tired, go to bed early."),
        ("这张全家福是去年拍的。", "This family photo was taken last year."),
        # the first things a class types (issue 37; the basics test set, never trained on)
        ("你好！", "Hi!"),  # was "You're good!"
        ("谢谢！", "Thank you!"),  # was "Thanks for you!" until stage 5
        ("我是学生。", "I'm a student."),  # was "I'm students."
        ("现在几点？", "What time is it now?"),
        ("很高兴认识你。", "Nice to meet you."),
    ],
)
def test_zh_en_golden(zh_en, source, greedy):
    assert translate(zh_en, source) == greedy
    assert zh_en.generation["length_penalty"] == 1.5  # at 2.0, beam search turned 你能帮我吗？ into "…help me fix it?"
    beam = BeamSearch(4, zh_en.generation["length_penalty"])
    assert translate(zh_en, source, beam)  # beam search writes English too (its choice is measured, not pinned)


def test_zh_en_reads_chinese_pieces_and_writes_english_ones(zh_en):
    pieces = zh_en.tokenizer.source_pieces("今天天气真好。")
    assert pieces == ["▁今天", "天气", "真好", "。"]  # words of Chinese, not bytes or single strokes
    assert not zh_en.tokenizer.shared_vocabulary  # Chinese and English each have their own 8,000 pieces
    assert zh_en.model.config.src_vocab_size == zh_en.model.config.tgt_vocab_size == 8000


def test_zh_en_examples_are_the_tutorials_and_everyday_test_sentences_labelled_honestly(zh_en):
    from transformer.training.corpus.tsv import load_corpus

    references = dict(load_corpus(CHECKPOINTS.parent / "data" / "zh-en")["everyday-test"])
    examples = json.loads((CHECKPOINTS / "zh-en" / "examples.json").read_text(encoding="utf-8"))["examples"]
    assert examples[0]["sentence"] == "今天天气真好。" and examples[0]["works"]
    assert sum(e["works"] for e in examples) >= 5 and 2 <= sum(not e["works"] for e in examples) <= 3
    for example in examples:
        reference = references.get(example["sentence"]) or example["translation"]
        output = translate(zh_en, example["sentence"])
        assert (output == reference) == example["works"], example["sentence"]
        assert example["works"] or example["why"]


def test_zh_en_untrained_twin_has_the_same_shape(zh_en):
    twin = load_checkpoint(CHECKPOINTS / "zh-en-untrained")
    assert twin.model.config.same_architecture(zh_en.model.config)
    assert translate(twin, "今天天气真好。", max_new_tokens=8) != translate(zh_en, "今天天气真好。")


def test_en_de_untrained_twin_has_the_same_shape_and_says_nothing_useful(en_de):
    twin = load_checkpoint(CHECKPOINTS / "en-de-untrained")
    assert twin.model.config.same_architecture(en_de.model.config)
    assert twin.tokenizer.encode_source("Where is the train station?") == en_de.tokenizer.encode_source(
        "Where is the train station?"
    )
    sentence = "Where is the train station?"
    assert translate(twin, sentence, max_new_tokens=8) != translate(en_de, sentence)


def test_every_shipped_file_is_small_enough_for_a_space_without_lfs():
    files = [f for f in CHECKPOINTS.rglob("*") if f.is_file()]
    assert files
    assert all(f.stat().st_size <= 10 * MB for f in files), [f.name for f in files if f.stat().st_size > 10 * MB]
    assert sum(f.stat().st_size for f in files) <= 60 * MB


def test_every_shipped_checkpoint_has_a_model_card_with_measured_numbers():
    for folder in (p for p in CHECKPOINTS.iterdir() if p.is_dir()):
        card = (folder / "MODEL_CARD.md").read_text()
        assert "## Evaluation" in card or "randomly initialised" in card, folder.name


def _weights_digest(model) -> str:
    return hashlib.sha256(b"".join(t.numpy().tobytes() for t in model.state_dict().values())).hexdigest()


def test_untrained_twins_cost_no_disk():
    for twin in ("en-de-untrained", "numbers-de-untrained", "zh-en-untrained"):
        assert sorted(f.name for f in (CHECKPOINTS / twin).iterdir()) == ["MODEL_CARD.md", "twin.json"]


@pytest.mark.slow
def test_a_twin_has_the_same_weights_on_every_machine():
    """The twin's weights are pinned bit for bit, and stay so when PyTorch's CPU kernels are the plain ones (no
    AVX2), which draw other random numbers than the AVX2 kernels of most machines."""
    numbers_twin = load_checkpoint(CHECKPOINTS / "numbers-de-untrained").model
    assert _weights_digest(numbers_twin) == "868e8f87dad8bea4470c454d3e1e4810e754b1e029fa7363ca9cfd7db4c7f681"
    script = (
        "import hashlib, sys; from transformer.checkpoint import load_checkpoint; "
        "m = load_checkpoint(sys.argv[1]).model; "
        "print(hashlib.sha256(b''.join(t.numpy().tobytes() for t in m.state_dict().values())).hexdigest())"
    )
    twin = CHECKPOINTS / "en-de-untrained"
    plain = subprocess.run(
        [sys.executable, "-c", script, str(twin)],
        env={**os.environ, "ATEN_CPU_CAPABILITY": "default"},
        capture_output=True,
        text=True,
        check=True,
        cwd=CHECKPOINTS.parent,
    )
    assert plain.stdout.strip() == _weights_digest(load_checkpoint(twin).model)
