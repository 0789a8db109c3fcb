"""A corpus for continuing a trained model: new pairs, repeated, mixed with a replay sample of the old training split,
with the old held-out splits unchanged.

Continuing a model on new pairs alone makes it forget the rest; the new pairs with a random sample of what it was
trained on ("replay") teach it the new without losing the old. The base corpus's dev, test and everyday splits are
copied as they are, so the continued model is measured on the same sentences as the model it continues, and no new
pair may come near them:

    python -m transformer.training.corpus mix --base data/zh-en --add data/authored-zh-en/pending/basics.tsv \\
        --repeat 4 --replay 16000 --seed 0 --out runs/basics-zh-en/corpus

1. the added pairs (four-column authored files, `chinese<TAB>english<TAB>topic<TAB>tags` or the like, read with
   `everyday.read_rows`) pass the corpus's filters (`reject_reason`, up to `MAX_WORDS` words a side, as the
   authored source) and are deduplicated (`norm_key` of both sides, the first occurrence wins);
2. an added pair is dropped when a side equals (`norm_key`: casefolded, punctuation and spaces ignored) or nearly
   equals (`everyday.overlapping`: word-set Jaccard ≥ 0.8, each Chinese character a word) the same side of any
   held-out pair of the base corpus (dev, test, everyday-dev, everyday-test): stricter than the builder, which
   tests near-duplicates against the everyday set only;
3. further held-out files (`--held-out`, e.g. the basics test set data/basics/zh-en.tsv) hold source sentences only:
   an added pair, and a line of the replay sample, whose first side (the side translated from) equals (`norm_key`)
   or nearly equals (`NearDuplicateIndex`, the same Jaccard ≥ 0.8) one of their sources is dropped. Only the source
   is compared: the test is what the model is given, and a training pair that merely ends in "Hello!" teaches no
   test input;
4. train is the kept added pairs, each `repeat` times, and `replay` lines of the base train split drawn with the
   seed without replacement (lines, not distinct pairs: the replay keeps the old mix, repeats included) less the
   lines that meet a held-out source, shuffled with the seed. The sample is drawn before that removal, so a
   held-out file only takes lines out of it and leaves the rest as they were.

`mix_corpus` is pure; `write_mix` writes train.tsv.xz, copies the held-out files byte for byte and writes MIX.md.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..everyday import NEAR_DUPLICATE, NearDuplicateIndex, overlapping, read_rows
from .cleaning import Pair, norm_key, reject_reason
from .tsv import EVERYDAY_SPLITS, SPLITS, load_corpus, open_text, split_file, write_pairs

HELD_OUT = tuple(split for split in (*SPLITS, *EVERYDAY_SPLITS) if split != "train")
MAX_WORDS = 30  # per side, as the zh-en authored source (`sources.ZH_EN`)


@dataclass
class MixReport:
    """What became of the added pairs, and what train holds."""

    added: int = 0  # pairs read from the added files
    rejected: list[tuple[Pair, str]] = field(default_factory=list)  # (pair, reason) dropped by the filters
    duplicates: list[Pair] = field(default_factory=list)  # repeats among the added pairs
    # (pair, "exact" or "near", the held-out split, its pair)
    collisions: list[tuple[Pair, str, str, Pair]] = field(default_factory=list)
    # (pair, "exact" or "near", the held-out file, its source sentence): added pairs dropped for a held-out file
    held_out_added: list[tuple[Pair, str, str, str]] = field(default_factory=list)
    # the same for the lines of the replay sample dropped for a held-out file
    held_out_replay: list[tuple[Pair, str, str, str]] = field(default_factory=list)
    held_out_files: dict[str, int] = field(default_factory=dict)  # held-out file -> its source sentences
    kept: int = 0  # distinct added pairs in train
    repeat: int = 1
    replay: int = 0  # lines of the base train split drawn (before the held-out files take theirs out)
    base_train: int = 0  # lines of the base train split
    train: int = 0  # lines of the mixed train split

    @property
    def replayed(self) -> int:
        """Lines of the base train split in train."""
        return self.replay - len(self.held_out_replay)


def _held_out_match(pair: Pair, base: dict[str, list[Pair]]) -> tuple[str, str, Pair]:
    """("exact", split, the held-out pair) when a side equals that side of a held-out pair (`norm_key`), else ("near",
    split, the first held-out pair a side nearly equals): for a pair known to collide."""
    held_out = [(split, other) for split in HELD_OUT for other in base.get(split, [])]
    for split, other in held_out:
        if any(norm_key(side) == norm_key(other_side) for side, other_side in zip(pair, other, strict=True)):
            return "exact", split, other
    return "near", *next((split, other) for split, other in held_out if overlapping([pair], [other])[0])


class HeldOutSources:
    """The source sentences of further held-out files (name, sentence), and which of them a sentence meets: one that
    equals it (`norm_key`) first, else the first that nearly equals it (word-set Jaccard ≥ `NEAR_DUPLICATE`)."""

    def __init__(self, sentences: Sequence[tuple[str, str]]) -> None:
        self.sentences = list(sentences)
        self.keys: dict[str, int] = {}
        for i, (_, sentence) in enumerate(self.sentences):
            if norm_key(sentence):
                self.keys.setdefault(norm_key(sentence), i)
        self.index = NearDuplicateIndex((sentence for _, sentence in self.sentences), NEAR_DUPLICATE)

    def match(self, text: str) -> tuple[str, str, str] | None:
        """("exact" or "near", the file, its sentence) for a sentence that meets a held-out source, else None."""
        i = self.keys.get(norm_key(text))
        kind = "exact"
        if i is None:
            i, kind = self.index.match(text), "near"
        return None if i is None else (kind, *self.sentences[i])


def mix_corpus(
    base: dict[str, list[Pair]],
    added: list[Pair],
    *,
    repeat: int,
    replay: int,
    seed: int,
    held_out: Sequence[tuple[str, str]] = (),
) -> tuple[dict[str, list[Pair]], MixReport]:
    """The mixed splits (train new; every held-out split of `base` as it is) and what became of the added pairs.

    `held_out`: (file, source sentence) of further held-out files; no added pair and no replayed line whose first side
    meets one of them comes into train."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    if not 0 <= replay <= len(base["train"]):
        raise ValueError(f"replay must be between 0 and the base train split's {len(base['train']):,} lines")
    report = MixReport(added=len(added), repeat=repeat, replay=replay, base_train=len(base["train"]))
    for name, _ in held_out:
        report.held_out_files[name] = report.held_out_files.get(name, 0) + 1
    sources = HeldOutSources(held_out)
    base_held_out = [pair for split in HELD_OUT for pair in base.get(split, [])]
    held_out_keys = {(side, norm_key(text)) for pair in base_held_out for side, text in enumerate(pair)}
    near = overlapping(added, base_held_out)  # the fast index first; only its hits are looked at pair by pair
    seen: set[tuple[str, str]] = set()
    kept: list[Pair] = []
    for pair, near_held_out in zip(added, near, strict=True):
        reason = reject_reason(*pair, MAX_WORDS)
        if reason is not None:
            report.rejected.append((pair, reason))
            continue
        key = norm_key(pair[0]), norm_key(pair[1])
        if key in seen:
            report.duplicates.append(pair)
            continue
        seen.add(key)
        if near_held_out or {(side, norm_key(text)) for side, text in enumerate(pair)} & held_out_keys:
            report.collisions.append((pair, *_held_out_match(pair, base)))
            continue
        if (match := sources.match(pair[0])) is not None:
            report.held_out_added.append((pair, *match))
            continue
        kept.append(pair)
    report.kept = len(kept)
    rng = random.Random(f"{seed}-replay")
    sample = []
    for pair in (base["train"][i] for i in sorted(rng.sample(range(len(base["train"])), replay))):
        if (match := sources.match(pair[0])) is not None:
            report.held_out_replay.append((pair, *match))
        else:
            sample.append(pair)
    train = [pair for pair in kept for _ in range(repeat)] + sample
    random.Random(f"{seed}-mix").shuffle(train)
    report.train = len(train)
    splits = {"train": train, **{split: list(base[split]) for split in HELD_OUT if split in base}}
    return splits, report


def read_added(paths: list[Path]) -> list[Pair]:
    """The (first, second) pairs of four-column authored files, files in the order given."""
    return [row.pair for path in paths for row in read_rows(path)]


def read_held_out(paths: list[Path]) -> list[tuple[str, str]]:
    """(file, source sentence) of held-out files, files in the order given: the `source` column of a TSV whose first
    line is a header naming one (as data/basics/*.tsv), else the first column of every line (a plain or four-column
    TSV, or a corpus split's .tsv.xz)."""
    sentences = []
    for path in paths:
        with open_text(path) as file:
            lines = [line.rstrip("\r\n") for line in file]
        header = lines[0].split("\t") if lines else []
        column = header.index("source") if "source" in header else 0
        for number, line in enumerate(lines[1:] if "source" in header else lines, 2 if "source" in header else 1):
            if not line.strip():
                continue
            columns = line.split("\t")
            if len(columns) <= column or not columns[column].strip():
                raise ValueError(f"{path}:{number}: no source in column {column + 1}")
            sentences.append((str(path), columns[column]))
        if not any(name == str(path) for name, _ in sentences):
            raise ValueError(f"{path}: no source sentences")
    return sentences


def mix_card(report: MixReport, command: str, base: Path, added: list[Path]) -> str:
    """MIX.md: how the folder was made, the counts, and every added pair and replayed line that was dropped."""
    lines = [
        "# A continuation corpus",
        "",
        f"Made by `{command}` (`transformer/training/corpus/mix.py`). Lines are `first<TAB>second`, UTF-8, xz.",
        "",
        f"- base corpus: `{base}`; its held-out splits ({', '.join(HELD_OUT)}) are copied byte for byte.",
    ]
    if report.held_out_files:
        files = ", ".join(f"`{name}` ({count:,} sentences)" for name, count in report.held_out_files.items())
        lines.append(
            f"- held out as well: the source sentences of {files}; no added pair and no replayed line whose first "
            "side equals or nearly equals one of them is in train (listed below)."
        )
    held_out_added = (
        f"{len(report.held_out_added)} equal or nearly equal to a source of a held-out file, "
        if report.held_out_files
        else ""
    )
    lines += [
        f"- added: {', '.join(f'`{path}`' for path in added)}: {report.added:,} pairs read, "
        f"{len(report.rejected)} rejected by the filters, {len(report.duplicates)} repeated, "
        f"{len(report.collisions)} equal or nearly equal to a held-out sentence, {held_out_added}"
        f"{report.kept:,} kept.",
    ]
    drawn = f"{report.replay:,} of the base train split's {report.base_train:,} lines"
    replay = f"a replay of {drawn} (drawn with the seed, without replacement)"
    if report.held_out_files:
        replay += (
            f", less {len(report.held_out_replay):,} that equal or nearly equal a source of a held-out file "
            f"({report.replayed:,} left)"
        )
    lines.append(
        f"- train: {report.kept:,} added pairs × {report.repeat} = {report.kept * report.repeat:,} lines, and "
        f"{replay}: {report.train:,} lines."
    )
    for title, rows in (
        (
            "Dropped: equal (exact) or nearly equal (near) to a held-out sentence",
            [(pair, f"{kind} ({split})", other) for pair, kind, split, other in report.collisions],
        ),
        ("Dropped by the filters", [(pair, reason, None) for pair, reason in report.rejected]),
        ("Dropped as repeats", [(pair, "repeat", None) for pair in report.duplicates]),
    ):
        if rows:
            lines += ["", f"## {title}", "", "| added pair | why | held-out pair |", "|---|---|---|"]
            lines += [f"| {a} / {b} | {why} | {' / '.join(other) if other else ''} |" for (a, b), why, other in rows]
    for title, what, rows in (
        ("Added pairs dropped for a held-out file", "added pair", report.held_out_added),
        ("Replayed lines dropped for a held-out file", "replayed line", report.held_out_replay),
    ):
        if rows:
            lines += [
                "",
                f"## {title}: the first side equal (exact) or nearly equal (near) to a held-out source",
                "",
                f"| {what} | why | held-out file | held-out sentence |",
                "|---|---|---|---|",
            ]
            lines += [f"| {a} / {b} | {kind} | `{name}` | {sentence} |" for (a, b), kind, name, sentence in rows]
    return "\n".join(lines) + "\n"


def write_mix(out: Path, base: Path, splits: dict[str, list[Pair]], card: str) -> None:
    """train.tsv.xz from `splits`; each held-out file of `base` copied as it is; MIX.md."""
    out.mkdir(parents=True, exist_ok=True)
    write_pairs(out / "train.tsv.xz", splits["train"])
    for split in HELD_OUT:
        if (held_out := split_file(base, split)) is not None:
            shutil.copyfile(held_out, out / held_out.name)
    (out / "MIX.md").write_text(card, encoding="utf-8")


def mix(
    out: Path,
    base: Path,
    added: list[Path],
    *,
    repeat: int,
    replay: int,
    seed: int,
    command: str,
    held_out: Sequence[Path] = (),
) -> MixReport:
    """Read, mix and write: what `python -m transformer.training.corpus mix` does."""
    splits, report = mix_corpus(
        load_corpus(base),
        read_added(added),
        repeat=repeat,
        replay=replay,
        seed=seed,
        held_out=read_held_out(list(held_out)),
    )
    write_mix(out, base, splits, mix_card(report, command, base, added))
    return report
