"""From raw pairs per source to the splits: filter, deduplicate, cap, draw dev and test, keep them out of train.

Pure and deterministic: the same raw pairs and seed give the same splits, pair for pair. Dev and test are
never trained on: no train pair shares a side with them, or nearly shares one with the everyday set.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..everyday import overlapping
from .cleaning import MAX_WORDS, Pair, is_sentence, is_sentence_like, norm_key, reject_reason, words

HELD_OUT_WORDS = (3, 15)  # dev/test sentences: this many words a side, inclusive
DEV_SIZE = 1200
TEST_SIZE = 1200


@dataclass(frozen=True)
class Selection:
    """What of one source's pairs goes into the corpus, and how often into train."""

    sentences_only: bool = False  # keep only sentences of 3+ words a side (what help and UI text is kept for)
    max_words: int = MAX_WORDS  # per side
    cap: int | None = None  # keep at most this many pairs, sampled with the seed
    repeat: int = 1  # each train pair appears this many times


@dataclass
class SourceStats:
    """How many pairs one source gave at each stage, and why the others were dropped."""

    extracted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    kept: int = 0  # after the filters and the source's own selection (`sentences_only`)
    unique: int = 0  # after deduplication against this and earlier sources
    used: int = 0  # after the cap
    held_out_overlap: int = 0  # removed from train: a side equals a dev/test side
    everyday_overlap: int = 0  # removed from train: a side equals or nearly equals an everyday dev/test side
    splits: Counter[str] = field(default_factory=Counter)  # distinct pairs in each split
    words: list[int] = field(default_factory=lambda: [0, 0])  # in train, per side, each distinct pair once


def is_held_out_candidate(english: str, german: str) -> bool:
    """An everyday sentence fit for dev/test: a sentence of 3–15 words on each side, with no `…` gap to fill."""
    low, high = HELD_OUT_WORDS
    return (
        is_sentence(english, german)
        and all(low <= words(side) <= high for side in (english, german))
        and "…" not in english + german
    )


def make_corpus(
    raw: dict[str, list[Pair]],
    seed: int,
    *,
    selections: Mapping[str, Selection],
    held_out_source: str,
    dev_size: int = DEV_SIZE,
    test_size: int = TEST_SIZE,
    everyday: tuple[list[Pair], list[Pair]] = ([], []),
) -> tuple[dict[str, list[Pair]], dict[str, SourceStats]]:
    """Filter, deduplicate and split the raw pairs of each source (taken in the order of `raw`).

    1. filter each pair (`reject_reason`); of the `sentences_only` sources keep only sentences of 3+ words a side;
    2. deduplicate by `norm_key` of both sides, the first occurrence wins (so put Ding first);
    3. cap a source at its selection's `cap` pairs, sampled with the seed;
    4. draw test, then dev, from the `held_out_source` pairs that are `is_held_out_candidate`, no side of one
       repeated among them;
    5. train is everything else, minus any pair with a side equal to a dev/test side, and minus any pair with a
       side equal or nearly equal (`everyday.overlapping`) to a side of the `everyday` (dev, test) pairs, which
       become the splits `everyday-dev` and `everyday-test`;
    6. a source's pairs appear in train as many times as its selection's `repeat`; train is shuffled with the seed.

    A source that `selections` does not name gets `Selection()`. Returns the splits and per-source statistics.
    """
    stats = {name: SourceStats() for name in raw}
    seen: set[tuple[str, str]] = set()
    used = {}
    for name, pairs in raw.items():
        used[name] = _select(name, pairs, selections.get(name, Selection()), seed, seen, stats[name])
    held_out = _draw_held_out(used.get(held_out_source, []), seed, dev_size, test_size)
    splits = {"train": [], "dev": held_out[test_size:], "test": held_out[:test_size]}
    splits["everyday-dev"], splits["everyday-test"] = list(everyday[0]), list(everyday[1])
    for name, pairs in used.items():
        repeat = selections.get(name, Selection()).repeat
        splits["train"] += _train(pairs, repeat, splits, [*everyday[0], *everyday[1]], stats[name])
    random.Random(f"{seed}-train").shuffle(splits["train"])
    return splits, stats


def _select(
    name: str, pairs: list[Pair], selection: Selection, seed: int, seen: set[tuple[str, str]], stats: SourceStats
) -> list[Pair]:
    """Steps 1–3 for one source: its pairs that pass the filters, not `seen` before, within its cap."""
    stats.extracted = len(pairs)
    kept = []
    for english, german in pairs:
        reason = reject_reason(english, german, selection.max_words)
        if reason is None and selection.sentences_only and not is_sentence_like(english, german):
            reason = "not a sentence"
        if reason is not None:
            stats.rejected[reason] += 1
            continue
        stats.kept += 1
        key = norm_key(english), norm_key(german)
        if key not in seen:
            seen.add(key)
            kept.append((english, german))
    stats.unique = len(kept)
    if selection.cap is not None and len(kept) > selection.cap:
        chosen = sorted(random.Random(f"{seed}-cap-{name}").sample(range(len(kept)), selection.cap))
        kept = [kept[i] for i in chosen]
    stats.used = len(kept)
    return kept


def _side_keys(pair: Pair) -> set[tuple[int, str]]:
    """What a held-out pair keeps out of train: each of its sides, compared as `norm_key`s on the same side."""
    return {(side, norm_key(text)) for side, text in enumerate(pair)}


def _draw_held_out(pairs: list[Pair], seed: int, dev_size: int, test_size: int) -> list[Pair]:
    """Step 4: test and dev, drawn with the seed from the held-out candidates, no side shared between two pairs."""
    size = dev_size + test_size
    candidates = [pair for pair in pairs if is_held_out_candidate(*pair)]
    random.Random(f"{seed}-held-out").shuffle(candidates)
    held_out: list[Pair] = []
    keys: set[tuple[int, str]] = set()
    for pair in candidates:
        if len(held_out) == size:
            break
        if not _side_keys(pair) & keys:
            held_out.append(pair)
            keys |= _side_keys(pair)
    if len(held_out) < size:
        raise ValueError(f"only {len(held_out)} held-out candidates for dev {dev_size} + test {test_size}")
    return held_out


def _train(
    pairs: list[Pair], repeat: int, splits: dict[str, list[Pair]], everyday: list[Pair], stats: SourceStats
) -> list[Pair]:
    """Step 5 for one source: its pairs that go to train (each `repeat` times), counting the held-out ones."""
    split_of = {pair: split for split in ("dev", "test") for pair in splits[split]}
    held_out_keys = {key for pair in split_of for key in _side_keys(pair)}
    train = []
    for pair, near_everyday in zip(pairs, overlapping(pairs, everyday), strict=True):
        if pair in split_of:
            stats.splits[split_of[pair]] += 1
        elif _side_keys(pair) & held_out_keys:
            stats.held_out_overlap += 1
        elif near_everyday:
            stats.everyday_overlap += 1
        else:
            train += [pair] * repeat
            stats.splits["train"] += 1
            stats.words[0] += words(pair[0])
            stats.words[1] += words(pair[1])
    return train
