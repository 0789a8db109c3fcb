"""The corpus on disk: one pair a line (`english<TAB>german`, UTF-8), one `.tsv.gz` file per split.

from transformer.training.corpus.tsv import load_corpus
corpus = load_corpus("data/en-de")    # {"train": [(english, german), ...], "dev": [...], "test": [...]}
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable
from pathlib import Path

from .cleaning import Pair

SPLITS = ("train", "dev", "test")
EVERYDAY_SPLITS = ("everyday-dev", "everyday-test")  # the project's own held-out set (transformer.training.everyday)


def write_pairs(path: str | Path, pairs: Iterable[Pair]) -> None:
    """Write `english<TAB>german` lines, UTF-8; gzip (mtime 0, no file name: byte-identical) when `.gz`."""
    path = Path(path)
    lines = []
    for english, german in pairs:
        if any(c in side for side in (english, german) for c in "\t\n\r"):
            raise ValueError(f"tab or newline inside a pair: {(english, german)!r}")
        lines.append(f"{english}\t{german}\n")
    data = "".join(lines).encode("utf-8")
    if path.suffix == ".gz":
        buffer = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
            gz.write(data)
        data = buffer.getvalue()
    path.write_bytes(data)


def read_pairs(path: str | Path) -> list[Pair]:
    """Read `english<TAB>german` lines from a .tsv or .tsv.gz file."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as file:
        pairs = []
        for number, line in enumerate(file, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            english, tab, german = line.partition("\t")
            if not tab or "\t" in german:
                raise ValueError(f"{path}:{number}: expected one tab, got {line!r}")
            pairs.append((english, german))
    return pairs


def load_corpus(folder: str | Path) -> dict[str, list[Pair]]:
    """{"train", "dev", "test"} -> pairs, from `folder/{split}.tsv.gz` (or `.tsv`), and "everyday-dev" and
    "everyday-test" where the folder has them."""
    folder = Path(folder)
    corpus = {}
    for split in (*SPLITS, *EVERYDAY_SPLITS):
        path = folder / f"{split}.tsv.gz"
        if split in SPLITS or path.exists():
            corpus[split] = read_pairs(path if path.exists() else folder / f"{split}.tsv")
    return corpus
