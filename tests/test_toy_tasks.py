"""The Train tab's tasks (transformer.training.toy_tasks): exact answers, fixed pieces, held-out sources."""

from __future__ import annotations

import pytest

from transformer.training.synthetic import get_task, make_split, split_of
from transformer.training.toy_tasks import RULES, SPECIALS, TOY_TASKS, draw, get_toy_task


@pytest.mark.parametrize(
    "name, source, target",
    [
        ("copy", "31415", "31415"),
        ("reverse", "31415", "51413"),
        ("sort", "31415", "11345"),
        ("count", "31415", "12121"),
        ("count", "777", "333"),
    ],
)
def test_the_digit_tasks_answer_exactly(name, source, target):
    task = get_toy_task(name)
    assert RULES[name](source) == target
    for pair_source, pair_target in draw(task, "train", 200, seed=0):
        assert 3 <= len(pair_source) <= 8 and pair_source.isdigit() and pair_target == RULES[name](pair_source)


def test_the_word_tasks_are_the_synthetic_tasks():
    numbers = draw(get_toy_task("numbers-de"), "test", 200, seed=3)
    held_out = dict(make_split("numbers-de", "test"))  # the shipped numbers-de model's test pairs
    assert all(held_out[source] == target for source, target in numbers)
    dates = draw(get_toy_task("dates-de"), "test", 20, seed=0)
    assert all(target[0].isdigit() and "." in target for _, target in dates)  # the day first: "8. Juli 2024"


@pytest.mark.parametrize(
    "name, text, pieces",
    [
        ("reverse", "31415", ["3", "1", "4", "1", "5"]),
        ("numbers-de", "twenty-one", ["twenty", "-", "one"]),
        ("numbers-de", "einundzwanzig", ["ein", "und", "zwanzig"]),
        ("numbers-de", "sechzehn", ["sech", "zehn"]),  # not "sechs" and something
        ("numbers-de", "one thousand, one hundred", ["one", "▁thousand", ",", "▁one", "▁hundred"]),
        ("numbers-de", "siebzig", ["siebzig"]),
        ("dates-de", "July 8, 2024", ["July", "▁8", ",", "▁2", "0", "2", "4"]),
        ("dates-de", "8. Juli 2024", ["8", ".", "▁Juli", "▁2", "0", "2", "4"]),
    ],
)
def test_a_task_cuts_text_into_its_own_pieces(name, text, pieces):
    tokenizer = get_toy_task(name).tokenizer
    assert tokenizer.source_pieces(text) == pieces
    assert tokenizer.decode_target(tokenizer.encode_target(text)) == text


@pytest.mark.parametrize("name", TOY_TASKS)
def test_every_text_of_a_task_is_cut_into_known_pieces_and_joined_back(name):
    task = get_toy_task(name)
    tokenizer = task.tokenizer
    assert [tokenizer.source_piece(i) for i in range(len(SPECIALS))] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert tokenizer.source.size == task.vocab_size
    if name in ("numbers-de", "dates-de"):  # every item of the task (dates: every tenth day, to stay quick)
        synthetic = get_task(name)
        pairs = [synthetic.pair(item) for item in synthetic.items[:: 1 if name == "numbers-de" else 10]]
    else:
        pairs = draw(task, "train", 300, seed=1)
    for source, target in pairs:
        source_ids, target_ids = tokenizer.encode_source(source), tokenizer.encode_target(target)
        assert tokenizer.unk_id not in source_ids + target_ids, (source, target)
        assert tokenizer.decode_source(source_ids) == source and tokenizer.decode_target(target_ids) == target
        assert max(len(source_ids), len(target_ids) + 1) <= task.positions  # with </s>, and the decoder's start
    assert task.look_for and task.title


@pytest.mark.parametrize("name", TOY_TASKS)
def test_held_out_sources_are_never_drawn_for_training(name):
    task = get_toy_task(name)
    test = draw(task, "test", 30, seed=0, unique=True)
    assert len({source for source, _ in test}) == 30
    if name in ("numbers-de", "dates-de"):  # held out as `synthetic` holds out the shipped model's test items
        held_out = {source for source, _ in make_split(name, "test")}
        assert all(source in held_out for source, _ in test)
    else:
        assert all(split_of(source) == "test" for source, _ in test)
    train = draw(task, "train", 300, seed=0)
    assert not {s for s, _ in train} & {s for s, _ in test}


def test_the_same_seed_draws_the_same_pairs_and_another_seed_others():
    task = get_toy_task("reverse")
    assert draw(task, "train", 50, seed=7) == draw(task, "train", 50, seed=7)
    assert draw(task, "train", 50, seed=7) != draw(task, "train", 50, seed=8)


def test_bad_names_and_splits_are_clear_errors():
    with pytest.raises(ValueError, match="unknown task 'rotate'; choose one of copy, reverse"):
        get_toy_task("rotate")
    with pytest.raises(ValueError, match="unknown split"):
        draw(get_toy_task("copy"), "validation", 1, seed=0)


@pytest.mark.parametrize("name", TOY_TASKS)
def test_a_probe_is_shown_as_the_model_reads_it(name):
    """Issue 35: the Train tab's caption showed reverse's digits with spaces ("3 1 4"), which the model reads as
    unknown pieces; a caption's text, typed back, is the same pieces."""
    from explorer.training_view import text_of

    task = get_toy_task(name)
    source, _target = draw(task, "train", 1, seed=2)[0]
    pieces = tuple(task.tokenizer.source_pieces(source))
    assert text_of(pieces) == source
    assert task.tokenizer.source_pieces(text_of(pieces)) == list(pieces)


def test_the_months_written_out_are_those_the_dates_task_writes():
    from datetime import date

    from transformer.training.synthetic import long_date
    from transformer.training.toy_tasks import ENGLISH_MONTHS, GERMAN_MONTHS

    firsts = [date(2024, month, 1).toordinal() for month in range(1, 13)]
    assert [long_date(day, "en").split()[0] for day in firsts] == ENGLISH_MONTHS  # "July 1, 2024"
    assert [long_date(day, "de").split()[1] for day in firsts] == GERMAN_MONTHS  # "1. Juli 2024"
