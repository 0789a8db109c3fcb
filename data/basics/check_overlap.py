"""Check the basics test set against the training data for exact and near duplicates.

Usage (from the repository root):

    .venv/bin/python data/basics/check_overlap.py            # both directions
    .venv/bin/python data/basics/check_overlap.py --pair zh-en
    .venv/bin/python data/basics/check_overlap.py --threshold 0.85 --self

What it does
------------
For every test sentence in data/basics/<pair>.tsv (column ``source``) it looks for a training source sentence
that, after normalisation, is identical ("exact") or has a difflib.SequenceMatcher ratio of at least
``--threshold`` (default 0.9, "near").

Normalisation: Unicode NFKC (this maps full-width Chinese punctuation to its ASCII form), lowercase, then every
punctuation character (Unicode category P*) and every space is removed. "Hello!" and "hello" are therefore
identical, and so are "你好！" and "你好".

Training sources searched (whatever of these exists when the script runs):

    en-de: data/en-de/train.tsv.xz, data/authored/*.tsv, data/authored/pending/*.tsv
    zh-en: data/zh-en/train.tsv.xz, data/authored-zh-en/*.tsv, data/authored-zh-en/pending/*.tsv

The source column of each file is the English column (en-de files) or the Chinese column (zh-en files). The
script finds it itself, so that nobody has to open the training files: for zh-en it is the column whose cells
most often contain CJK characters, for en-de the column with the most English and fewest German function words.
A first line that looks like a header (every cell a lowercase identifier such as ``english``) is skipped. The
choice of column is reported on stderr, without any training text.

Output (stdout): only the test sentences that collide, one line each, with the best-matching training sentence:

    <id>  <exact|near 0.93>  <kept by design|REPLACE>  <test source>  <=>  <training source>  [<file>, +N more]

Some collisions are expected, because a first lesson types the same fixed phrases as any other corpus, and the
pending basics files were written to teach exactly these phrases. They are marked "kept by design" (see by_design()):

  * core: the "must be right" core (column core = 1), the sentences a teacher types in the first five minutes
    ("Hello!", "What time is it?", 你好！, 我是学生。). The test set must contain them whatever training holds.
  * set phrase: a greeting, thanks/apology or wish of at most 4 words (English) or 5 characters (Chinese),
    a fixed formula with no content of its own ("Bye!", "Merry Christmas!", 晚安！, 一路平安！).

Any other collision is marked REPLACE and makes the script exit with status 1: the sentence must be replaced.

``--self`` also reports pairs of near-identical sentences inside the test set itself.
"""

from __future__ import annotations

import argparse
import collections
import csv
import difflib
import glob
import gzip
import lzma
import math
import os
import re
import sys
import unicodedata
from pathlib import Path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

TRAIN_GLOBS = {
    "en-de": ["data/en-de/train.tsv.xz", "data/authored/*.tsv", "data/authored/pending/*.tsv"],
    "zh-en": ["data/zh-en/train.tsv.xz", "data/authored-zh-en/*.tsv", "data/authored-zh-en/pending/*.tsv"],
}

SET_PHRASE_CATEGORIES = {"greeting", "thanks-apology", "wish"}
MAX_WORDS = 4  # English set phrase: at most this many words
MAX_HANZI = 5  # Chinese set phrase: at most this many characters (punctuation not counted)

CJK = re.compile(r"[\u3400-\u9fff]")
EN_WORDS = {
    "the",
    "is",
    "are",
    "you",
    "i",
    "a",
    "to",
    "and",
    "of",
    "it",
    "my",
    "your",
    "in",
    "we",
    "what",
    "have",
    "this",
    "that",
    "he",
    "she",
    "do",
    "at",
    "on",
    "for",
    "with",
    "be",
    "was",
    "not",
}
DE_WORDS = {
    "der",
    "die",
    "das",
    "ist",
    "ich",
    "und",
    "nicht",
    "du",
    "sie",
    "wir",
    "ein",
    "eine",
    "zu",
    "mit",
    "den",
    "dem",
    "es",
    "auf",
    "für",
    "hat",
    "habe",
    "bin",
    "sind",
    "mein",
    "meine",
    "im",
    "war",
}


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(ch for ch in text if not ch.isspace() and not unicodedata.category(ch).startswith("P"))


def read_rows(path: str) -> list[list[str]]:
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(Path(path).suffix, open)
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        return [row for row in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE) if row]


def looks_like_header(row: list[str]) -> bool:
    return all(re.fullmatch(r"[a-z][a-z0-9_\-]*", cell.strip()) for cell in row)


def pick_column(rows: list[list[str]], pair: str) -> int:
    sample = rows[:2000]
    width = max(len(r) for r in sample)
    scores = []
    for col in range(width):
        cells = [r[col] for r in sample if len(r) > col]
        if pair == "zh-en":
            score = sum(1 for c in cells if CJK.search(c))
        else:
            score = 0
            for c in cells:
                words = re.findall(r"[a-zäöüß]+", c.lower())
                score += sum(w in EN_WORDS for w in words) - sum(w in DE_WORDS for w in words)
        scores.append(score)
    return max(range(width), key=lambda i: scores[i])


def load_training(pair: str) -> tuple[dict[str, tuple[str, list[str]]], list[str]]:
    """normalised source -> (one original sentence, files it occurs in)."""
    index: dict[str, tuple[str, list[str]]] = {}
    files = []
    for pattern in TRAIN_GLOBS[pair]:
        files.extend(sorted(glob.glob(os.path.join(ROOT, pattern))))
    for path in files:
        rel = os.path.relpath(path, ROOT)
        rows = read_rows(path)
        if not rows:
            print(f"[{pair}] {rel}: empty", file=sys.stderr)
            continue
        header = looks_like_header(rows[0])
        if header:
            rows = rows[1:]
        col = pick_column(rows, pair) if rows else 0
        n = 0
        for row in rows:
            if len(row) <= col:
                continue
            key = normalise(row[col])
            if not key:
                continue
            n += 1
            if key in index:
                if rel not in index[key][1]:
                    index[key][1].append(rel)
            else:
                index[key] = (row[col].strip(), [rel])
        print(f"[{pair}] {rel}: {n} sources, column {col + 1}{' (header skipped)' if header else ''}", file=sys.stderr)
    return index, files


def load_test(pair: str) -> list[dict[str, str]]:
    with open(os.path.join(ROOT, "data", "basics", f"{pair}.tsv"), encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


def by_design(row: dict[str, str], pair: str) -> str | None:
    """Why a collision of this test row is expected and kept, or None if the sentence must be replaced."""
    if row["core"].strip() == "1":
        return "core"
    if row["category"] in SET_PHRASE_CATEGORIES:
        if pair == "zh-en":
            short = len(normalise(row["source"])) <= MAX_HANZI
        else:
            short = len(row["source"].split()) <= MAX_WORDS
        if short:
            return "set phrase"
    return None


def best_match(key: str, by_len: dict[int, list[str]], exact: dict, threshold: float):
    if key in exact:
        return 1.0, key
    n = len(key)
    # ratio = 2*M/(n+m) with M <= min(n, m): only lengths in this window can reach the threshold.
    lo = math.ceil(n * threshold / (2 - threshold))
    hi = math.floor(n * (2 - threshold) / threshold)
    sm = difflib.SequenceMatcher(None, autojunk=False)
    sm.set_seq2(key)
    best = (0.0, None)
    for m in range(lo, hi + 1):
        for cand in by_len.get(m, ()):
            sm.set_seq1(cand)
            if sm.real_quick_ratio() < threshold or sm.quick_ratio() < threshold:
                continue
            r = sm.ratio()
            if r >= threshold and r > best[0]:
                best = (r, cand)
    return best


def check(pair: str, threshold: float, self_check: bool) -> int:
    test = load_test(pair)
    index, _ = load_training(pair)
    by_len: dict[int, list[str]] = collections.defaultdict(list)
    for key in index:
        by_len[len(key)].append(key)
    problems = 0
    kept = []
    for row in test:
        key = normalise(row["source"])
        ratio, cand = best_match(key, by_len, index, threshold)
        if cand is None:
            continue
        original, files = index[cand]
        is_exact = cand == key
        reason = by_design(row, pair)
        if reason:
            kept.append((row["id"], is_exact, reason))
        else:
            problems += 1
        kind = "exact" if is_exact else f"near {ratio:.2f}"
        verdict = f"kept by design ({reason})" if reason else "REPLACE"
        more = f", +{len(files) - 1} more" if len(files) > 1 else ""
        print(f"{row['id']}\t{kind}\t{verdict}\t{row['source']}\t<=>\t{original}\t[{files[0]}{more}]")
    summary = collections.Counter((("exact" if e else "near"), r) for _, e, r in kept)
    detail = ", ".join(f"{n} {k} {r}" for (k, r), n in sorted(summary.items()))
    print(
        f"[{pair}] {len(test)} test sentences: {len(kept)} collisions kept by design ({detail or 'none'}), "
        f"{problems} to replace (threshold {threshold})",
        file=sys.stderr,
    )
    if self_check:
        keys = [(row["id"], row["source"], normalise(row["source"])) for row in test]
        for i in range(len(keys)):
            for j in range(i + 1, len(keys)):
                r = difflib.SequenceMatcher(None, keys[i][2], keys[j][2], autojunk=False).ratio()
                if r >= threshold:
                    print(f"SELF {keys[i][0]} {keys[j][0]}\t{r:.2f}\t{keys[i][1]}\t<=>\t{keys[j][1]}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", choices=sorted(TRAIN_GLOBS), action="append", help="direction to check (default: both)")
    ap.add_argument("--threshold", type=float, default=0.9, help="difflib ratio for a near match (default 0.9)")
    ap.add_argument(
        "--self", dest="self_check", action="store_true", help="also report near-identical pairs inside the test set"
    )
    args = ap.parse_args()
    problems = sum(check(p, args.threshold, args.self_check) for p in (args.pair or sorted(TRAIN_GLOBS)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
