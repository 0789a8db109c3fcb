"""The project's own everyday sentences: the authored training corpus and the everyday test set.

Everyday English–German text is the scarcest thing on an offline machine, so the project writes its own:
original sentences on classroom topics (family, school, food, travel, weather, time, shopping, health, work,
hobbies), planned as a grid of topics × grammar × length, each German side reviewed a second time. They are
the project's data, under its licence (see `data/authored/README.md`).

Two sets, written apart:

* `data/authored/*.tsv`: the training corpus;
* `data/everyday/everyday.tsv`: the held-out everyday test set, split here into dev and test halves
  (`split_everyday`), never trained on: `overlapping` finds training pairs that equal or nearly equal one of
  its sentences, and the corpus builder drops them.

Files are UTF-8 TSV with four columns, `english<TAB>german<TAB>topic<TAB>tags` (tags comma-separated, see `TAGS`).
"""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .corpus.cleaning import HANZI

ROOT = Path(__file__).resolve().parents[2]
AUTHORED_DIR = ROOT / "data" / "authored"
EVERYDAY_FILE = ROOT / "data" / "everyday" / "everyday.tsv"
ZH_EN_AUTHORED_DIR = ROOT / "data" / "authored-zh-en"  # zh-en's: `chinese<TAB>english<TAB>topic<TAB>tags`
ZH_EN_EVERYDAY_FILE = ROOT / "data" / "everyday-zh-en" / "everyday.tsv"

TOPICS = ("family", "school", "food", "travel", "weather", "time", "shopping", "health", "work", "hobbies")
AUTHORED_TOPICS = (*TOPICS, "home", "language", "city")  # the training grid splits three topics finer
TAGS = frozenset(
    [
        "v2",
        "verb-final",
        "relative",
        "separable",
        "perfect-haben",
        "perfect-sein",
        "modal",
        "um-zu",
        "w-question",
        "yes-no-question",
        "negation-nicht",
        "negation-kein",
        "dative",
        "accusative",
        "adjective",
        "comparative",
        "reflexive",
        "imperative",
        "du",
        "sie",
        "ihr",
        "passive",
        "time",
        "date",
        "number",
        "future",
        "past",
        "present",
        "plural",
        "genitive",
        "preposition",
    ]
)
NEAR_DUPLICATE = 0.8  # word-set Jaccard similarity (either side) at or above which two sentences are one


@dataclass(frozen=True)
class Row:
    """One authored pair with its place in the grid."""

    first: str  # the side named first in the language pair: English in en-de, Chinese in zh-en
    second: str
    topic: str
    tags: tuple[str, ...]

    @property
    def pair(self) -> tuple[str, str]:
        return self.first, self.second


def read_rows(path: str | Path) -> list[Row]:
    """The rows of one four-column TSV file; a malformed line is an error naming the file and line."""
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) != 4:
            raise ValueError(f"{path}:{number}: expected 4 tab-separated columns, got {len(columns)}")
        first, second, topic, tags = columns
        rows.append(Row(first, second, topic, tuple(tag for tag in tags.split(",") if tag)))
    return rows


def read_authored(folder: str | Path = AUTHORED_DIR) -> list[Row]:
    """Every row of every `*.tsv` file in the authored folder, files in name order."""
    return [row for path in sorted(Path(folder).glob("*.tsv")) for row in read_rows(path)]


def split_everyday(rows: list[Row], seed: int) -> tuple[list[Row], list[Row]]:
    """(dev, test): each topic's rows shuffled with the seed and dealt alternately, so both halves cover every topic
    alike. The same rows and seed always give the same halves."""
    by_topic: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_topic[row.topic].append(row)
    dev: list[Row] = []
    test: list[Row] = []
    for topic in sorted(by_topic):
        shuffled = list(by_topic[topic])
        random.Random(f"{seed}-everyday-{topic}").shuffle(shuffled)
        test += shuffled[0::2]
        dev += shuffled[1::2]
    return dev, test


# ---------------------------------------------------------------------------------------------------------------------
# Near-duplicates: a training pair may not be a test sentence with a word changed
# ---------------------------------------------------------------------------------------------------------------------


_TOKEN = re.compile(rf"{HANZI.pattern}|[^\W{HANZI.pattern[1:-1]}]+")  # a Chinese character, or a run of other letters


def word_set(text: str) -> frozenset[str]:
    """The casefolded words of a sentence, punctuation dropped. Chinese is written without spaces, so each Chinese
    character counts as a word."""
    return frozenset(_TOKEN.findall(text.casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


class NearDuplicateIndex:
    """Finds, among a fixed set of sentences, one that equals or nearly equals a query (word-set Jaccard ≥ the
    threshold). An inverted index over words keeps it fast for a hundred thousand queries."""

    def __init__(self, sentences: Iterable[str], threshold: float = NEAR_DUPLICATE) -> None:
        self.threshold = threshold
        self.sets = [word_set(sentence) for sentence in sentences]
        self.postings: dict[str, list[int]] = defaultdict(list)
        for i, words in enumerate(self.sets):
            for word in words:
                self.postings[word].append(i)

    def match(self, sentence: str) -> int | None:
        """The index of a near-duplicate of `sentence`, or None.

        Prefix filter: a set with Jaccard ≥ t shares at least ⌈t·|q|⌉ of the query's |q| words, so it holds one of
        the query's |q| − ⌈t·|q|⌉ + 1 rarest words; only those words' sentences are compared.
        """
        words = word_set(sentence)
        rarest = sorted(words, key=lambda word: (len(self.postings.get(word, ())), word))
        needed = math.ceil(self.threshold * len(words))
        candidates = {i for word in rarest[: len(words) - needed + 1] for i in self.postings.get(word, ())}
        for i in sorted(candidates):
            if jaccard(words, self.sets[i]) >= self.threshold:
                return i
        return None


def overlapping(
    pairs: Iterable[tuple[str, str]], held_out: Iterable[tuple[str, str]], threshold: float = NEAR_DUPLICATE
) -> list[bool]:
    """For each pair, whether either side equals or nearly equals a held-out pair's side."""
    held_out = list(held_out)
    firsts = NearDuplicateIndex((a for a, _ in held_out), threshold)
    seconds = NearDuplicateIndex((b for _, b in held_out), threshold)
    return [firsts.match(a) is not None or seconds.match(b) is not None for a, b in pairs]


# ---------------------------------------------------------------------------------------------------------------------
# Checks (the test suite runs them on the committed files)
# ---------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Authoring:
    """How one language pair's written sentences are measured and checked: the first side's length (in words, or
    in characters for Chinese), the final punctuation of each side, and the sane range of the second side's length
    over the first's (in characters)."""

    pair: str
    tags: frozenset[str]
    unit: str  # what the first side's length counts: "words" or "characters"
    bands: tuple[tuple[int, int], ...]  # the length bands a writer aims at, first side
    ends: tuple[str, str]  # the final punctuation each side may end in
    ratio: tuple[float, float]

    def length(self, text: str) -> int:
        return len(HANZI.findall(text)) if self.unit == "characters" else len(text.split())

    @property
    def lengths(self) -> tuple[int, int]:
        return self.bands[0][0], self.bands[-1][1]


EN_DE = Authoring("en-de", TAGS, "words", ((3, 5), (6, 10), (11, 15), (16, 20), (21, 25)), (".!?", ".!?"), (0.5, 2.2))
ZH_TAGS = frozenset(  # the grammar of the zh-en sentences (see data/authored-zh-en/BRIEF.md)
    [
        "measure-word",
        "le",
        "guo",
        "zhe",
        "ba",
        "bei",
        "bi",
        "zui",
        "shi-de",
        "yinwei-suoyi",
        "ruguo-jiu",
        "suiran-danshi",
        "question-ma",
        "question-ne",
        "question-word",
        "a-not-a",
        "resultative",
        "directional",
        "potential",
        "degree-de",
        "modal",
        "negation-bu",
        "negation-mei",
        "progressive",
        "future",
        "imperative",
        "suggestion-ba",
        "time",
        "date",
        "number",
        "price",
        "duration",
        "place",
        "relative-de",
        "yijing",
        "jiu-cai",
        "lian-dou",
        "yue-yue",
        "you-you",
        "yibian",
        "plural",
    ]
)
ZH_EN = Authoring("zh-en", ZH_TAGS, "characters", ((2, 8), (9, 15), (16, 25), (26, 40)), ("。！？", ".!?"), (1.2, 7.0))
AUTHORING = {spec.pair: spec for spec in (EN_DE, ZH_EN)}


def problems(rows: Iterable[Row], lengths: tuple[int, int] | None = None, spec: Authoring = EN_DE) -> list[str]:
    """What is wrong with a set of rows: empty or padded sides, unknown topics or tags, lengths out of range,
    sides without final punctuation, odd length ratios and duplicates (casefolded, punctuation ignored)."""
    low, high = lengths or spec.lengths
    found = []
    seen: dict[str, str] = {}
    for row in rows:
        where = f"{row.first!r}"
        if not row.first.strip() or not row.second.strip():
            found.append(f"{where}: an empty side")
            continue
        if any(side != side.strip() or "  " in side for side in (row.first, row.second)):
            found.append(f"{where}: extra spaces")
        if row.topic not in AUTHORED_TOPICS:
            found.append(f"{where}: unknown topic {row.topic!r}")
        if not row.tags or set(row.tags) - spec.tags:
            found.append(f"{where}: unknown or missing tags {sorted(set(row.tags) - spec.tags)}")
        if not low <= spec.length(row.first) <= high:
            found.append(f"{where}: {spec.length(row.first)} {spec.unit}, not {low}–{high}")
        if not (row.first[-1] in spec.ends[0] and row.second[-1] in spec.ends[1]):
            found.append(f"{where}: a side does not end in {spec.ends[0]} (first) or {spec.ends[1]} (second)")
        ratio = len(row.second) / len(row.first)
        if not spec.ratio[0] <= ratio <= spec.ratio[1]:
            found.append(f"{where}: length ratio {ratio:.2f} (second side's characters over the first's)")
        if spec.unit == "characters" and HANZI.search(row.second):
            found.append(f"{where}: Chinese characters on the English side")
        key = " ".join(re.sub(r"[^\w\s]", " ", row.first.casefold()).split())
        if key in seen:
            found.append(f"{where}: a duplicate of {seen[key]!r}")
        seen[key] = row.first
    return found


def main(argv: list[str] | None = None) -> None:
    """`python -m transformer.training.everyday check FILE…`: what a writer runs after each batch."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m transformer.training.everyday", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="report problems and the length mix of four-column TSV files")
    check.add_argument("files", type=Path, nargs="+")
    check.add_argument("--pair", choices=sorted(AUTHORING), default="en-de")
    check.add_argument("--min", type=int, help="the shortest first side allowed (words, or characters in zh-en)")
    check.add_argument("--max", type=int, help="the longest first side allowed")
    args = parser.parse_args(argv)
    spec = AUTHORING[args.pair]
    rows = [row for path in args.files for row in read_rows(path)]
    found = problems(rows, (args.min or spec.lengths[0], args.max or spec.lengths[1]), spec)
    for problem in found:
        print(problem)
    lengths = [spec.length(row.first) for row in rows]
    mix = ", ".join(f"{low}–{high}: {sum(low <= n <= high for n in lengths)}" for low, high in spec.bands)
    print(f"{len(rows)} pairs, {len(found)} problems; first side's {spec.unit} {mix}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
