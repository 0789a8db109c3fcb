"""Synthetic tasks: known pairs, held-out splits, deterministic samples, exact match."""

from __future__ import annotations

from datetime import date
from functools import cache

import pytest

from transformer.training.synthetic import (
    SPLITS,
    TASKS,
    exact_match,
    examples,
    main,
    make_split,
    split_items,
    split_of,
)


@pytest.mark.parametrize(
    "task_name, item, source, target",
    [
        ("numbers-de", 21, "twenty-one", "einundzwanzig"),
        ("numbers-de", 97, "ninety-seven", "siebenundneunzig"),
        ("numbers-de", 1001, "one thousand and one", "eintausendeins"),
        ("numbers-de", 9999, "nine thousand, nine hundred and ninety-nine", "neuntausendneunhundertneunundneunzig"),
        ("numbers-fr", 97, "ninety-seven", "quatre-vingt-dix-sept"),
        ("numbers-fr", 21, "twenty-one", "vingt et un"),
        ("numbers-fr", 80, "eighty", "quatre-vingts"),
        ("dates-de", date(2024, 7, 8).toordinal(), "July 8, 2024", "8. Juli 2024"),
        ("dates-de", date(1900, 3, 1).toordinal(), "March 1, 1900", "1. März 1900"),
    ],
)
def test_known_pairs(task_name, item, source, target):
    assert TASKS[task_name].pair(item) == (source, target)


def test_task_ranges():
    assert TASKS["numbers-de"].items == range(0, 10_000)
    dates = TASKS["dates-de"].items
    assert (date.fromordinal(dates[0]), date.fromordinal(dates[-1])) == (date(1900, 1, 1), date(2099, 12, 31))


@cache
def all_sources(task_name: str) -> list[str]:
    task = TASKS[task_name]
    return [task.source(item) for item in task.items]


@pytest.mark.parametrize("task_name", ["numbers-de", "dates-de"])  # numbers-fr has the same sources as numbers-de
def test_sources_are_unique_over_the_whole_range(task_name):
    sources = all_sources(task_name)
    assert len(set(sources)) == len(sources)


def test_number_tasks_share_sources_and_splits():
    assert [TASKS["numbers-fr"].source(n) for n in range(0, 10_000, 97)] == all_sources("numbers-de")[::97]
    assert split_items("numbers-fr", "test") == split_items("numbers-de", "test")


def test_split_rule():
    # first 8 bytes of sha256, big-endian, modulo 100: "0" → 40, "16" → 2, "23" → 6
    assert (split_of(0), split_of(16), split_of(23)) == ("train", "test", "dev")


@pytest.mark.parametrize("task_name", list(TASKS))
def test_splits_are_disjoint_and_cover_every_item(task_name):
    splits = {split: split_items(task_name, split) for split in SPLITS}
    assert sum(len(items) for items in splits.values()) == len(TASKS[task_name].items)
    assert set().union(*splits.values()) == set(TASKS[task_name].items)
    for items in splits.values():
        assert list(items) == sorted(items)
    # roughly 90 / 5 / 5 percent
    assert 0.03 < len(splits["test"]) / len(TASKS[task_name].items) < 0.07
    assert 0.03 < len(splits["dev"]) / len(TASKS[task_name].items) < 0.07


def test_full_split_is_every_item_of_the_split_in_order():
    task = TASKS["numbers-de"]
    assert make_split("numbers-de", "dev") == [task.pair(item) for item in split_items("numbers-de", "dev")]


def test_make_split_is_deterministic():
    assert make_split("numbers-fr", "train", n=20, seed=3) == make_split("numbers-fr", "train", n=20, seed=3)
    assert make_split("dates-de", "test", n=50) == make_split("dates-de", "test", n=50)


def test_sampling_with_n():
    small = make_split("dates-de", "train", n=10, seed=1)
    large = make_split("dates-de", "train", n=50, seed=1)
    assert len(small) == 10 and len(set(small)) == 10
    assert set(small) <= set(large)  # samples are nested
    assert small != make_split("dates-de", "train", n=10, seed=2)
    item_of = dict(zip(all_sources("dates-de"), TASKS["dates-de"].items, strict=True))
    items = [item_of[source] for source, _ in large]
    assert items == sorted(items)  # chronological
    assert all(split_of(item) == "train" for item in items)
    assert make_split("numbers-de", "test", n=0) == []
    assert make_split("numbers-de", "test", n=517) == make_split("numbers-de", "test")


def test_sampled_items_stay_in_their_split():
    test_sources = {source for source, _ in make_split("numbers-de", "test")}
    sampled = make_split("numbers-de", "test", n=30, seed=7)
    assert {source for source, _ in sampled} <= test_sources


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: make_split("numbers-es", "train"), "unknown synthetic task 'numbers-es'; known tasks: numbers-de"),
        (lambda: make_split("numbers-de", "valid"), "unknown split 'valid'; choose one of train, dev, test"),
        (lambda: make_split("numbers-de", "test", n=10_000), "n must be between 0 and 517"),
        (lambda: make_split("numbers-de", "test", n=-1), "n must be between 0 and 517"),
        (lambda: examples("dates-fr"), "unknown synthetic task 'dates-fr'"),
    ],
)
def test_bad_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_examples():
    assert examples("numbers-de")[:3] == ["seven", "twenty-one", "ninety-seven"]
    assert "nine hundred and ninety-nine" in examples("numbers-fr")
    assert examples("dates-de")[0] == "July 8, 2024"
    for task_name in TASKS:
        assert 3 <= len(examples(task_name)) <= 10


def test_exact_match():
    assert exact_match(["eins", "zwei"], ["eins", "zwei"]) == 1.0
    assert exact_match(["eins", "drei", "vier", "fünf"], ["eins", "zwei", "drei", "fünf"]) == 0.5
    assert exact_match(["Eins", "zwei "], ["eins", "zwei"]) == 0.0  # exact: case and spaces count
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        exact_match(["eins", "zwei"], ["eins"])
    with pytest.raises(ValueError, match="at least one"):
        exact_match([], [])


def test_command_line_prints_tsv(capsys):
    main(["numbers-de", "--split", "test", "--n", "5"])
    lines = capsys.readouterr().out.splitlines()
    assert [tuple(line.split("\t")) for line in lines] == make_split("numbers-de", "test", n=5)
