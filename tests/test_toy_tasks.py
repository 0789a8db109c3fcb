"""The Train tab's tasks (transformer.training.toy_tasks): exact answers, fixed vocabularies, held-out sources."""

from __future__ import annotations

import pytest

from transformer.training.settings import EOS, UNK
from transformer.training.synthetic import make_split, split_of
from transformer.training.toy_tasks import RULES, SPECIALS, TOY_TASKS, draw, get_toy_task


@pytest.mark.parametrize(
    "name, source, target",
    [
        ("copy", "3 1 4 1 5", "3 1 4 1 5"),
        ("reverse", "3 1 4 1 5", "5 1 4 1 3"),
        ("sort", "3 1 4 1 5", "1 1 3 4 5"),
        ("count", "3 1 4 1 5", "1 2 1 2 1"),
        ("count", "7 7 7", "3 3 3"),
    ],
)
def test_the_digit_tasks_answer_exactly(name, source, target):
    task = get_toy_task(name)
    assert task.text(RULES[name](source.split())) == target
    for pair_source, pair_target in draw(task, "train", 200, seed=0):
        assert 3 <= len(pair_source) <= 8 and pair_target == RULES[name](pair_source)


def test_the_word_tasks_are_the_synthetic_tasks_one_character_a_symbol():
    numbers = draw(get_toy_task("numbers-de"), "test", 200, seed=3)
    held_out = dict(make_split("numbers-de", "test"))  # the shipped numbers-de model's test pairs
    assert all(held_out["".join(source)] == "".join(target) for source, target in numbers)
    dates = draw(get_toy_task("dates-de"), "test", 20, seed=0)
    assert all(target[0].isdigit() and "." in target for _, target in dates)  # the day first: "8. Juli 2024"


@pytest.mark.parametrize("name", TOY_TASKS)
def test_every_symbol_of_a_task_is_in_its_vocabulary(name):
    task = get_toy_task(name)
    vocabulary = task.vocabulary
    for source, target in draw(task, "train", 300, seed=1):
        ids = vocabulary.encode(source + target)
        assert UNK not in ids
        assert vocabulary.decode([*vocabulary.encode(target), EOS, *ids]) == target  # stops at </s>
    assert [vocabulary.piece(i) for i in range(len(SPECIALS))] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert task.look_for and task.title


@pytest.mark.parametrize("name", TOY_TASKS)
def test_held_out_sources_are_never_drawn_for_training(name):
    task = get_toy_task(name)
    test = draw(task, "test", 30, seed=0, unique=True)
    assert len({task.text(source) for source, _ in test}) == 30
    if name in ("numbers-de", "dates-de"):  # held out as `synthetic` holds out the shipped model's test items
        held_out = {source for source, _ in make_split(name, "test")}
        assert all(task.text(source) in held_out for source, _ in test)
    else:
        assert all(split_of(task.text(source)) == "test" for source, _ in test)
    train = draw(task, "train", 300, seed=0)
    assert not {task.text(s) for s, _ in train} & {task.text(s) for s, _ in test}


def test_the_same_seed_draws_the_same_pairs_and_another_seed_others():
    task = get_toy_task("reverse")
    assert draw(task, "train", 50, seed=7) == draw(task, "train", 50, seed=7)
    assert draw(task, "train", 50, seed=7) != draw(task, "train", 50, seed=8)


def test_bad_names_and_splits_are_clear_errors():
    with pytest.raises(ValueError, match="unknown task 'rotate'; choose one of copy, reverse"):
        get_toy_task("rotate")
    with pytest.raises(ValueError, match="unknown split"):
        draw(get_toy_task("copy"), "validation", 1, seed=0)
