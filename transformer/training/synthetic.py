"""Synthetic translation tasks with exact answers, generated on the fly.

A tiny model trained on one of these tasks learns crisp, readable attention patterns, which is why the explorer
ships them: German number words invert units and tens ("twenty-one" → "einundzwanzig"), French counts in
twenties from seventy on ("ninety-seven" → "quatre-vingt-dix-sept"), and German dates put the day first
("July 8, 2024" → "8. Juli 2024").

Every task numbers its pairs with an integer *item* (the number itself, or a date's proleptic Gregorian ordinal,
`date.toordinal()`), and renders an item with num2words or Babel exactly as the library writes it, without any
normalisation: English number words keep num2words' British "and" and its comma after the thousands ("one
thousand, one hundred and one"), French keeps the traditional spelling without hyphens around "et" and "cent"
("vingt et un", "cent un").

Held-out splits: an item goes to "test" when `sha256(str(item)) % 100` is 0–4, to "dev" when it is 5–9, and to
"train" otherwise (about 5% / 5% / 90%). The rule looks at the item alone, so it does not depend on how many
pairs are asked for, numbers-de and numbers-fr hold out the same numbers, and widening a task's range later
leaves every existing item in its split.

Within each task's range, source texts are unique (tests check the whole range), so every source has exactly
one correct target and exact match is a fair measure.

Command line, printing `source<TAB>target` lines:

    python -m transformer.training.synthetic numbers-de --split test --n 5
"""

from __future__ import annotations

import argparse
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from functools import cache, partial

from num2words import num2words

SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class Task:
    """A synthetic translation task: items (integers) rendered as source and target text."""

    name: str
    description: str
    source_lang: str
    target_lang: str
    source: Callable[[int], str]  # item -> source text
    target: Callable[[int], str]  # item -> target text
    items: range  # every item of the task, in order
    example_items: tuple[int, ...]  # items whose source texts make good demo inputs

    def pair(self, item: int) -> tuple[str, str]:
        """The `(source_text, target_text)` pair for one item."""
        return self.source(item), self.target(item)


def number_words(n: int, lang: str) -> str:
    """`n` in words, as num2words writes it: 21 → "twenty-one" (en), "einundzwanzig" (de), "vingt et un" (fr)."""
    return num2words(n, lang=lang)


def long_date(ordinal: int, locale: str) -> str:
    """The date with this ordinal in the locale's long format: "July 8, 2024" (en), "8. Juli 2024" (de)."""
    from babel.dates import format_date  # Babel's locale data only for the dates task (a GPU run goes without it)

    return format_date(date.fromordinal(ordinal), format="long", locale=locale)


# Numbers 0–9999: four digits hold all the structure worth learning (units/tens inversion, French twenties,
# hundreds, thousands); larger numbers only repeat it ("twelve thousand" is "twelve" + "thousand").
NUMBERS = range(0, 10_000)
NUMBER_EXAMPLES = (7, 21, 97, 121, 999, 2024, 7385)
# Two centuries of dates, 73,049 days, leap days included (2000 is one, 1900 and 2100 are not).
DATES = range(date(1900, 1, 1).toordinal(), date(2099, 12, 31).toordinal() + 1)
DATE_EXAMPLES = tuple(
    day.toordinal()
    for day in (date(2024, 7, 8), date(1989, 11, 9), date(2000, 1, 1), date(2024, 2, 29), date(1999, 12, 31))
)

TASKS: dict[str, Task] = {
    "numbers-de": Task(
        name="numbers-de",
        description="English number words → German number words, 0–9999 (num2words)",
        source_lang="en",
        target_lang="de",
        source=partial(number_words, lang="en"),
        target=partial(number_words, lang="de"),
        items=NUMBERS,
        example_items=NUMBER_EXAMPLES,
    ),
    "numbers-fr": Task(
        name="numbers-fr",
        description="English number words → French number words, 0–9999 (num2words)",
        source_lang="en",
        target_lang="fr",
        source=partial(number_words, lang="en"),
        target=partial(number_words, lang="fr"),
        items=NUMBERS,
        example_items=NUMBER_EXAMPLES,
    ),
    "dates-de": Task(
        name="dates-de",
        description="English long dates → German long dates, 1900-01-01 to 2099-12-31 (Babel)",
        source_lang="en",
        target_lang="de",
        source=partial(long_date, locale="en"),
        target=partial(long_date, locale="de"),
        items=DATES,
        example_items=DATE_EXAMPLES,
    ),
}


def get_task(task_name: str) -> Task:
    """The task called `task_name`; a ValueError naming the known tasks otherwise."""
    if task_name not in TASKS:
        raise ValueError(f"unknown synthetic task {task_name!r}; known tasks: {', '.join(TASKS)}")
    return TASKS[task_name]


def split_of(item: int) -> str:
    """The split ("train", "dev" or "test") that `item` belongs to: sha256 of the item, modulo 100."""
    bucket = int.from_bytes(hashlib.sha256(str(item).encode()).digest()[:8], "big") % 100
    if bucket < 5:
        return "test"
    if bucket < 10:
        return "dev"
    return "train"


@cache
def split_items(task_name: str, split: str) -> tuple[int, ...]:
    """All items of one split of a task, in increasing order (computed once per process)."""
    task = get_task(task_name)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return tuple(item for item in task.items if split_of(item) == split)


def make_split(task_name: str, split: str, n: int | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """Deterministic `(source, target)` pairs of one split of a task.

    Args:
        task_name: a key of `TASKS`, e.g. "numbers-de".
        split: "train", "dev" or "test"; the three are disjoint and together cover every item (see `split_of`).
        n: None for every item of the split; otherwise a sample of `n` items drawn with `seed`. Samples are
            nested: with the same seed, a smaller sample is part of a larger one.
        seed: seeds the sample; unused when `n` is None.

    Returns:
        The pairs, ordered by item (numbers ascending, dates chronologically).
    """
    items = list(split_items(task_name, split))
    if n is not None:
        if not 0 <= n <= len(items):
            raise ValueError(f"n must be between 0 and {len(items)} for {task_name}/{split}, got {n}")
        random.Random(seed).shuffle(items)
        items = sorted(items[:n])
    task = TASKS[task_name]
    return [task.pair(item) for item in items]


def examples(task_name: str) -> list[str]:
    """A handful of demo source sentences for the task, e.g. "twenty-one" or "July 8, 2024"."""
    task = get_task(task_name)
    return [task.source(item) for item in task.example_items]


def exact_match(predictions: list[str], references: list[str]) -> float:
    """The fraction of predictions equal, character for character, to their reference (0.0 to 1.0)."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if not references:
        raise ValueError("exact_match needs at least one prediction")
    return sum(p == r for p, r in zip(predictions, references, strict=True)) / len(references)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Print pairs of a synthetic translation task as TSV lines.")
    parser.add_argument("task", choices=list(TASKS), help="which task")
    parser.add_argument("--split", choices=SPLITS, default="test", help="which split (default: test)")
    parser.add_argument("--n", type=int, default=None, help="how many pairs (default: the whole split)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample drawn with --n (default: 0)")
    args = parser.parse_args(argv)
    for source, target in make_split(args.task, args.split, n=args.n, seed=args.seed):
        print(f"{source}\t{target}")


if __name__ == "__main__":
    main()
