"""Tasks with exact answers that a tiny Transformer learns in seconds to minutes on a CPU, each with what to look
for in its attention once it has learned: the tasks of the page's Train tab.

A task makes random `(source, target)` text pairs, and has a fixed list of pieces (`ToyTask.pieces`): a digit, a
number word ("seven", "▁thousand", "zwanzig"), a month. Its tokenizer is a real sentencepiece model holding
exactly those pieces after our special ids (`<pad>` 0, `<unk>` 1, `<s>` 2, `</s>` 3), so no vocabulary has to be
trained before the first step, and a model trained on the task is an ordinary checkpoint that every view of the
explorer reads. Sentencepiece cuts a text into the fewest pieces that make it up ("sechzehn" → "sech" · "zehn"); a test
checks that every text of every task is cut into known pieces and joined back unchanged.

- copy, reverse, sort: sequences of 3 to 8 digits ("31415" → "51413" for reverse);
- count: each digit replaced by how often it occurs in the sequence ("31415" → "12121"), which no single attention
  to one position can answer: the encoder's self-attention has to gather a digit's equals first;
- numbers-de, dates-de: `transformer.training.synthetic`'s tasks, cut into words and German number parts
  ("twenty-one" → "twenty" · "-" · "one"; "einundzwanzig" → "ein" · "und" · "zwanzig").

Held-out pairs: a digit sequence goes to "test" or "dev" by the hash of its text (`synthetic.split_of`), a number or
a date as `synthetic` holds it out; no source of the held-out splits is ever trained on, however many pairs are drawn.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from sentencepiece import SentencePieceProcessor
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from ..tokenizer import Tokenizer
from .settings import BOS, EOS, PAD, UNK
from .synthetic import SPLITS, get_task, split_items, split_of

SPECIALS = tuple(piece for _, piece in sorted({PAD: "<pad>", UNK: "<unk>", BOS: "<s>", EOS: "</s>"}.items()))

Pair = tuple[str, str]  # (source text, target text)
Maker = Callable[[random.Random, str], Pair]  # (random numbers, split) -> a random pair of that split


def sentencepiece_model(pieces: tuple[str, ...]) -> bytes:
    """A sentencepiece model that cuts text into `pieces` only, as few as can make it up (every piece scores the
    same), and numbers them after the special pieces; spaces are "▁", as in every sentencepiece model, and nothing
    else is normalised."""
    proto = model_pb2.ModelProto()
    proto.trainer_spec.model_type = model_pb2.TrainerSpec.UNIGRAM
    proto.trainer_spec.pad_id, proto.trainer_spec.unk_id = PAD, UNK
    proto.trainer_spec.bos_id, proto.trainer_spec.eos_id = BOS, EOS
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = False  # "31415" is five digits, not "▁3" and four more
    proto.normalizer_spec.remove_extra_whitespaces = False
    proto.normalizer_spec.escape_whitespaces = True
    kinds = {"<unk>": model_pb2.ModelProto.SentencePiece.UNKNOWN}
    for special in SPECIALS:
        proto.pieces.add(piece=special, score=0.0, type=kinds.get(special, model_pb2.ModelProto.SentencePiece.CONTROL))
    for piece in pieces:
        proto.pieces.add(piece=piece, score=-1.0, type=model_pb2.ModelProto.SentencePiece.NORMAL)
    return proto.SerializeToString()


@dataclass(frozen=True)
class ToyTask:
    """A task of the Train tab: its name, a title, what its attention shows once learned, its pieces, a maker of
    random pairs, and how many positions its longest pair needs (`</s>` and the decoder's start included)."""

    name: str
    title: str
    look_for: str
    pieces: tuple[str, ...]
    make: Maker
    positions: int

    @cached_property
    def tokenizer(self) -> Tokenizer:
        """The task's tokenizer: one sentencepiece model of its pieces, for both sides (`sentencepiece_model`)."""
        processor = SentencePieceProcessor()
        processor.LoadFromSerializedProto(sentencepiece_model(self.pieces))
        return Tokenizer(processor)

    @property
    def vocab_size(self) -> int:
        return len(SPECIALS) + len(self.pieces)


DIGITS = tuple("0123456789")
LENGTHS = (3, 8)  # the shortest and the longest digit sequence


def digits(rng: random.Random) -> str:
    return "".join(rng.choice(DIGITS) for _ in range(rng.randint(*LENGTHS)))


def counts(source: str) -> str:
    """Each digit replaced by how often it occurs in `source`: 31415 -> 12121."""
    occurrences = Counter(source)
    return "".join(str(occurrences[digit]) for digit in source)


# The digit tasks' answers, each a function of the source.
RULES: dict[str, Callable[[str], str]] = {
    "copy": str,
    "reverse": lambda source: source[::-1],
    "sort": lambda source: "".join(sorted(source)),
    "count": counts,
}


def on_digits(rule: Callable[[str], str]) -> Maker:
    """A maker of pairs: a random digit sequence of the split (by the hash of its text, `synthetic.split_of`) and
    its answer by `rule`."""

    def make(rng: random.Random, split: str) -> Pair:
        while True:  # held-out splits are 5% each: about 20 draws a pair
            source = digits(rng)
            if split_of(source) == split:
                return source, rule(source)

    return make


def digit_task(name: str, title: str, look_for: str) -> ToyTask:
    """A task on digit sequences whose answer is `RULES[name]`."""
    return ToyTask(name, title, look_for, DIGITS, on_digits(RULES[name]), positions=LENGTHS[1] + 2)  # `</s>`, `<s>`


def of_synthetic_task(name: str) -> Maker:
    """A maker of pairs from `synthetic`'s task `name`: an item of the split as that task holds it out
    (`synthetic.split_items`), so a number held out of the shipped `numbers-de` model is held out here too."""
    task = get_task(name)

    def make(rng: random.Random, split: str) -> Pair:
        return task.pair(rng.choice(split_items(name, split)))

    return make


def with_and_without_space(*words: str) -> tuple[str, ...]:
    """Each word as a piece of its own, and after a space ("▁seven"): the first word of a text has no space."""
    return (*words, *("▁" + word for word in words))


ENGLISH_NUMBERS = (  # noqa: SIM905 (a list of words reads best as words)
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand and"
).split()
# German number words are written as one word: "siebentausendsiebenhundertsiebenundsiebzig". "sech" and "sieb"
# are the stems of "sechzehn" and "siebzehn".
GERMAN_NUMBERS = (  # noqa: SIM905
    "null eins ein zwei drei vier fünf sechs sech sieben sieb acht neun zehn elf zwölf zwanzig dreißig vierzig "
    "fünfzig sechzig siebzig achtzig neunzig hundert tausend und"
).split()
NUMBER_PIECES = (*with_and_without_space(*ENGLISH_NUMBERS), *GERMAN_NUMBERS, ",", "-")

# The months as the dates task writes them (Babel's long format: "July 1, 2024", "1. Juli 2024"), written out so
# that the toy tasks load without Babel's locale data; tests/test_toy_tasks.py holds them to Babel's.
ENGLISH_MONTHS = "January February March April May June July August September October November December".split()  # noqa: SIM905
GERMAN_MONTHS = "Januar Februar März April Mai Juni Juli August September Oktober November Dezember".split()  # noqa: SIM905
MONTH_NAMES = tuple(dict.fromkeys(ENGLISH_MONTHS + GERMAN_MONTHS))  # "April" and "September" once
DATE_PIECES = (*with_and_without_space(*DIGITS, *MONTH_NAMES), ",", ".")

TOY_TASKS: dict[str, ToyTask] = {
    task.name: task
    for task in (
        digit_task(
            "copy",
            "Copy the digits",
            "The cross-attention becomes a diagonal: each output digit reads the input digit at its own position.",
        ),
        digit_task(
            "reverse",
            "Reverse the digits",
            "The cross-attention becomes an anti-diagonal: the first output digit reads the last input digit.",
        ),
        digit_task(
            "sort",
            "Sort the digits",
            "Each output digit reads the input positions that hold it, the smallest digits first: equal digits "
            "share the attention of their row.",
        ),
        digit_task(
            "count",
            "Count each digit",
            "Each digit becomes how often it occurs. One look at one position cannot tell: the encoder's "
            "self-attention links every digit to its equals, and the cross-attention reads the gathered count.",
        ),
        ToyTask(
            "numbers-de",
            "Number words, English → German",
            "German says the units before the tens: writing “ein·und·zwanzig” for “twenty-one”, the "
            "cross-attention looks at “one” before “twenty”.",
            NUMBER_PIECES,
            of_synthetic_task("numbers-de"),
            positions=16,
        ),
        ToyTask(
            "dates-de",
            "Dates, English → German",
            "The day comes first in German: writing “8. Juli”, the cross-attention jumps past “July” to the day.",
            DATE_PIECES,
            of_synthetic_task("dates-de"),
            positions=12,
        ),
    )
}


def get_toy_task(name: str) -> ToyTask:
    """The task called `name`; a ValueError naming the tasks otherwise."""
    if name not in TOY_TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TOY_TASKS)}")
    return TOY_TASKS[name]


def draw(task: ToyTask, split: str, n: int, seed: int | str, *, unique: bool = False) -> list[Pair]:
    """`n` random pairs of one split of `task`, the same for the same seed; `unique`: no source twice (for a
    held-out set)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    rng, pairs, seen = random.Random(f"{task.name}/{split}/{seed}"), [], set()
    for _ in range(10 * n + 100):
        if len(pairs) == n:
            return pairs
        source, target = task.make(rng, split)
        if unique and source in seen:
            continue
        seen.add(source)
        pairs.append((source, target))
    raise ValueError(f"{task.name} has fewer than {n} different {split} pairs")
