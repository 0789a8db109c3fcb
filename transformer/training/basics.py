"""The basics test set (`data/basics`, issue 37): a first lesson's sentences, scored and judged by hand.

A basics file holds short sentences ("Hello!", 你好！) with every wording a native speaker accepts as references,
and marks a "must be right" core. Two measures come from it:

- chrF (sacrebleu) against all references of a sentence, on the whole set and on its core (`scores`);
- how many core sentences a model translates *right*, judged by hand. A judgement is kept per (id, output) in
  `data/basics/judged/<pair>.tsv`, so a count is reproducible, and an output nobody has judged yet is reported
  rather than guessed (`Judgements.count`).

`python -m benchmarks.basics` prints both for any checkpoints; `python -m transformer.training.evaluate --basics`
puts them in a model card, before and after.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

REFERENCE_SEPARATOR = " ||| "
VERDICTS = {"right": True, "wrong": False}


@dataclass(frozen=True)
class Sentence:
    """One line of a basics test file."""

    id: str
    source: str
    references: list[str]
    category: str
    core: bool


def read_set(path: str | Path) -> list[Sentence]:
    """The sentences of a basics test file (tab-separated, one header line, no quoting)."""
    with open(path, encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        Sentence(r["id"], r["source"], r["references"].split(REFERENCE_SEPARATOR), r["category"], r["core"] == "1")
        for r in rows
    ]


def reference_streams(references: list[list[str]]) -> list[list[str | None]]:
    """sacrebleu's reference streams: stream k holds every sentence's k-th reference, or None where it has fewer."""
    width = max(map(len, references), default=0)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]


def chrf(hypotheses: list[str], references: list[list[str]]) -> float | None:
    """sacrebleu's corpus chrF of `hypotheses` against every reference of each sentence; None for no sentences."""
    import sacrebleu

    if not hypotheses:
        return None
    return round(sacrebleu.corpus_chrf(hypotheses, reference_streams(references)).score, 2)


def subsets(sentences: list[Sentence], colliding: set[str] | None = None) -> dict[str, list[int]]:
    """The indices of the whole set and of its core; with `colliding` ids, also of the sentences not among them."""
    parts = {
        "whole": list(range(len(sentences))),
        "core": [i for i, s in enumerate(sentences) if s.core],
    }
    if colliding is not None:
        parts["non-colliding"] = [i for i, s in enumerate(sentences) if s.id not in colliding]
    return parts


def scores(sentences: list[Sentence], hypotheses: list[str], colliding: set[str] | None = None) -> dict:
    """chrF of one model's outputs on each subset (`subsets`)."""
    return {
        name: chrf([hypotheses[i] for i in indices], [sentences[i].references for i in indices])
        for name, indices in subsets(sentences, colliding).items()
    }


@dataclass(frozen=True)
class Count:
    """How many core sentences were judged right, of how many, and the core outputs nobody has judged yet."""

    right: int
    of: int
    unjudged: list[tuple[str, str]]

    def __str__(self) -> str:
        return f"{self.right}/{self.of}" + (f" ({len(self.unjudged)} not judged)" if self.unjudged else "")


@dataclass(frozen=True)
class Judgements:
    """Hand judgements of outputs for core sentences: (id, output) → right or wrong, with the reason for a call.

    A reference is right without a judgement; anything else must be judged, once, in the file."""

    verdicts: dict[tuple[str, str], bool]

    @classmethod
    def read(cls, path: str | Path) -> Judgements:
        """The judgements of a file with the columns id, output, verdict (right or wrong) and reason; none if the
        file does not exist. A verdict other than right or wrong, or an output judged twice, is an error."""
        path = Path(path)
        if not path.is_file():
            return cls({})
        verdicts: dict[tuple[str, str], bool] = {}
        with path.open(encoding="utf-8", newline="") as file:
            for line, row in enumerate(csv.DictReader(file, delimiter="\t", quoting=csv.QUOTE_NONE), start=2):
                key = (row["id"], row["output"])
                if row["verdict"] not in VERDICTS:
                    raise ValueError(f"{path}:{line}: the verdict must be right or wrong, not {row['verdict']!r}")
                if key in verdicts:
                    raise ValueError(f"{path}:{line}: {key[0]} {key[1]!r} is judged twice")
                verdicts[key] = VERDICTS[row["verdict"]]
        return cls(verdicts)

    def verdict(self, sentence: Sentence, output: str) -> bool | None:
        """Whether `output` is a right translation of `sentence`: a reference is; otherwise the judgement, or None."""
        if output in sentence.references:
            return True
        return self.verdicts.get((sentence.id, output))

    def count(self, sentences: list[Sentence], outputs: list[str]) -> Count:
        """How many of the core `sentences` the `outputs` (one per sentence, in order) translate right."""
        core = [(s, o) for s, o in zip(sentences, outputs, strict=True) if s.core]
        verdicts = [(s, o, self.verdict(s, o)) for s, o in core]
        return Count(
            right=sum(v is True for _s, _o, v in verdicts),
            of=len(core),
            unjudged=[(s.id, o) for s, o, v in verdicts if v is None],
        )

    def beam_broke(self, sentences: list[Sentence], greedy: list[str], beam: list[str]) -> list[str]:
        """The ids of core sentences that greedy decoding gets right and beam search gets wrong."""
        return [
            s.id
            for s, g, b in zip(sentences, greedy, beam, strict=True)
            if s.core and self.verdict(s, g) is True and self.verdict(s, b) is False
        ]


def judgements_for(set_path: str | Path) -> Path:
    """Where the hand judgements of a basics file live: `judged/<pair>.tsv` beside it."""
    set_path = Path(set_path)
    return set_path.parent / "judged" / set_path.name


def measure(
    sentences: list[Sentence], outputs: dict[str, list[str]], judgements: Judgements, colliding: set[str] | None = None
) -> dict:
    """A model's numbers on a basics file from its `outputs` per decoding ("greedy", "beam"): chrF per subset, the
    core judged right by hand and the core sentences judged wrong, and with both decodings the core sentences beam
    search breaks."""
    counts = {decoding: judgements.count(sentences, hyps) for decoding, hyps in outputs.items()}
    misses = {
        decoding: [
            {"id": s.id, "source": s.source, "output": o}
            for s, o in zip(sentences, hyps, strict=True)
            if s.core and judgements.verdict(s, o) is False
        ]
        for decoding, hyps in outputs.items()
    }
    return {
        "outputs": outputs,
        "misses": misses,
        "chrf": {decoding: scores(sentences, hyps, colliding) for decoding, hyps in outputs.items()},
        "judged": {decoding: {"right": c.right, "of": c.of, "unjudged": c.unjudged} for decoding, c in counts.items()},
        "beam_broke": judgements.beam_broke(sentences, outputs["greedy"], outputs["beam"]) if "beam" in outputs else [],
    }
