"""Tasks with exact answers that a tiny Transformer learns in seconds to minutes on a CPU, each with what to look
for in its attention once it has learned: the tasks of the page's Train tab.

A task makes random `(source, target)` pairs of *symbols* (a digit, or a character of a word), so no tokenizer has
to be trained before the first step: every task has a fixed vocabulary (`Vocabulary`), with our special ids first
(`<pad>` 0, `<unk>` 1, `<s>` 2, `</s>` 3, as in `transformer.training.settings`).

- copy, reverse, sort: digit sequences of 3 to 8 digits;
- count: each digit replaced by how often it occurs in the sequence, which no single attention to one position
  can answer: the encoder's self-attention has to gather a digit's equals first;
- numbers-de, dates-de: `transformer.training.synthetic`'s tasks, one character per symbol.

Held-out pairs: a digit sequence goes to "test" or "dev" by the hash of its text (`synthetic.split_of`), a number or
a date as `synthetic` holds it out; no source of the held-out splits is ever trained on, however many pairs are drawn.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cached_property

from .settings import BOS, EOS, PAD, UNK
from .synthetic import SPLITS, get_task, long_date, split_items, split_of

SPECIALS = tuple(piece for _, piece in sorted({PAD: "<pad>", UNK: "<unk>", BOS: "<s>", EOS: "</s>"}.items()))

Pair = tuple[list[str], list[str]]  # (source symbols, target symbols)


@dataclass(frozen=True)
class Vocabulary:
    """The symbols of a task, after the special pieces: id i + 4 is `symbols[i]`."""

    symbols: tuple[str, ...]

    def __len__(self) -> int:
        return len(SPECIALS) + len(self.symbols)

    def piece(self, token_id: int) -> str:
        return SPECIALS[token_id] if token_id < len(SPECIALS) else self.symbols[token_id - len(SPECIALS)]

    @cached_property
    def ids(self) -> dict[str, int]:
        return {symbol: i + len(SPECIALS) for i, symbol in enumerate(self.symbols)}

    def encode(self, symbols: Sequence[str]) -> list[int]:
        """The ids of `symbols` (`<unk>` for a symbol the task does not have), without `</s>`."""
        return [self.ids.get(symbol, UNK) for symbol in symbols]

    def decode(self, ids: Sequence[int]) -> list[str]:
        """The symbols of `ids`, up to the first `</s>`, without the special pieces."""
        symbols = []
        for token_id in ids:
            if token_id == EOS:
                break
            if token_id >= len(SPECIALS):
                symbols.append(self.piece(token_id))
        return symbols


@dataclass(frozen=True)
class ToyTask:
    """A task of the Train tab: its name, a title, what its attention shows once learned, its vocabulary, and a
    maker of random pairs."""

    name: str
    title: str
    look_for: str
    vocabulary: Vocabulary
    make: Maker
    joiner: str  # how the symbols are written as text: " " between digits, "" between characters

    def text(self, symbols: Sequence[str]) -> str:
        return self.joiner.join(symbols)


DIGITS = tuple("0123456789")
LENGTHS = (3, 8)  # the shortest and the longest digit sequence


def digits(rng: random.Random) -> list[str]:
    return [rng.choice(DIGITS) for _ in range(rng.randint(*LENGTHS))]


def counts(source: list[str]) -> list[str]:
    """Each symbol replaced by how often it occurs in `source`: 3 1 4 1 5 -> 1 2 1 2 1."""
    occurrences = Counter(source)
    return [str(occurrences[symbol]) for symbol in source]


# The digit tasks' answers, each a function of the source.
RULES: dict[str, Callable[[list[str]], list[str]]] = {
    "copy": list,
    "reverse": lambda source: source[::-1],
    "sort": sorted,
    "count": counts,
}


Maker = Callable[[random.Random, str], Pair]  # (random numbers, split) -> a random pair of that split


def on_digits(rule: Callable[[list[str]], list[str]]) -> Maker:
    """A maker of pairs: a random digit sequence of the split (by the hash of its text, `synthetic.split_of`) and
    its answer by `rule`."""

    def make(rng: random.Random, split: str) -> Pair:
        while True:  # held-out splits are 5% each: about 20 draws a pair
            source = digits(rng)
            if split_of(" ".join(source)) == split:
                return source, rule(source)

    return make


def in_characters(name: str) -> Maker:
    """A maker of pairs from `synthetic`'s task `name`, one character a symbol: an item of the split as that task
    holds it out (`synthetic.split_items`), so a number held out of `numbers-de` is held out here too."""
    task = get_task(name)

    def make(rng: random.Random, split: str) -> Pair:
        source, target = task.pair(rng.choice(split_items(name, split)))
        return list(source), list(target)

    return make


def characters(*texts: str) -> tuple[str, ...]:
    return tuple(sorted(set("".join(texts))))


NUMBER_CHARACTERS = characters("abcdefghijklmnopqrstuvwxyz", "äöüß", " ,-")
MONTHS = [date(2024, month, 1) for month in range(1, 13)]
DATE_CHARACTERS = characters(
    "0123456789 ,.", *(long_date(day.toordinal(), "en") + long_date(day.toordinal(), "de") for day in MONTHS)
)

TOY_TASKS: dict[str, ToyTask] = {
    task.name: task
    for task in (
        ToyTask(
            "copy",
            "Copy the digits",
            "The cross-attention becomes a diagonal: each output digit reads the input digit at its own position.",
            Vocabulary(DIGITS),
            on_digits(RULES["copy"]),
            " ",
        ),
        ToyTask(
            "reverse",
            "Reverse the digits",
            "The cross-attention becomes an anti-diagonal: the first output digit reads the last input digit.",
            Vocabulary(DIGITS),
            on_digits(RULES["reverse"]),
            " ",
        ),
        ToyTask(
            "sort",
            "Sort the digits",
            "Each output digit reads the input positions that hold it, the smallest digits first: equal digits "
            "share the attention of their row.",
            Vocabulary(DIGITS),
            on_digits(RULES["sort"]),
            " ",
        ),
        ToyTask(
            "count",
            "Count each digit",
            "Each digit becomes how often it occurs. One look at one position cannot tell: the encoder's "
            "self-attention links every digit to its equals, and the cross-attention reads the gathered count.",
            Vocabulary(DIGITS),
            on_digits(RULES["count"]),
            " ",
        ),
        ToyTask(
            "numbers-de",
            "Number words, English → German",
            "German says the units before the tens: writing “einund…” for “twenty-one”, the cross-attention looks "
            "at “one” before “twenty”.",
            Vocabulary(NUMBER_CHARACTERS),
            in_characters("numbers-de"),
            "",
        ),
        ToyTask(
            "dates-de",
            "Dates, English → German",
            "The day comes first in German: writing “8. Juli”, the cross-attention jumps past “July” to the day.",
            Vocabulary(DATE_CHARACTERS),
            in_characters("dates-de"),
            "",
        ),
    )
}


def get_toy_task(name: str) -> ToyTask:
    """The task called `name`; a ValueError naming the tasks otherwise."""
    if name not in TOY_TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TOY_TASKS)}")
    return TOY_TASKS[name]


def draw(task: ToyTask, split: str, n: int, seed: int, *, unique: bool = False) -> list[Pair]:
    """`n` random pairs of one split of `task`, the same for the same seed; `unique`: no source twice (for a
    held-out set)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    rng, pairs, seen = random.Random(f"{task.name}/{split}/{seed}"), [], set()
    for _ in range(10 * n + 100):
        if len(pairs) == n:
            return pairs
        source, target = task.make(rng, split)
        if unique and task.text(source) in seen:
            continue
        seen.add(task.text(source))
        pairs.append((source, target))
    raise ValueError(f"{task.name} has fewer than {n} different {split} pairs")
