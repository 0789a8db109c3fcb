"""The corpus on disk: one pair a line (`english<TAB>german`, UTF-8), one `.tsv.xz` file per split (xz: a third the
size of gzip on these files; `.tsv.gz` and plain `.tsv` are read too).

from transformer.training.corpus.tsv import load_corpus
corpus = load_corpus("data/en-de")    # {"train": [(english, german), ...], "dev": [...], "test": [...]}
"""

from __future__ import annotations

import gzip
import io
import lzma
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from .cleaning import Pair

SPLITS = ("train", "dev", "test")
EVERYDAY_SPLITS = ("everyday-dev", "everyday-test")  # the project's own held-out set (transformer.training.everyday)
SUFFIXES = (".tsv.xz", ".tsv.gz", ".tsv")  # what a split's file may end with, the first found read; written: the first
XZ_PRESET = 9 | lzma.PRESET_EXTREME


def open_text(path: str | Path) -> TextIO:
    """A text file, UTF-8, read through xz or gzip when its name ends with `.xz` or `.gz`."""
    path = Path(path)
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
    return opener(path, "rt", encoding="utf-8", newline="\n")


def split_file(folder: str | Path, split: str) -> Path | None:
    """The file of `split` in a corpus folder (`{split}.tsv.xz`, `.tsv.gz` or `.tsv`), None where it has none."""
    return next((path for suffix in SUFFIXES if (path := Path(folder) / f"{split}{suffix}").exists()), None)


def write_pairs(path: str | Path, pairs: Iterable[Pair]) -> None:
    """Write `english<TAB>german` lines, UTF-8; compressed with xz when the name ends with `.xz`, gzip with `.gz`
    (mtime 0, no file name): the same pairs give the same bytes."""
    path = Path(path)
    lines = []
    for english, german in pairs:
        if any(c in side for side in (english, german) for c in "\t\n\r"):
            raise ValueError(f"tab or newline inside a pair: {(english, german)!r}")
        lines.append(f"{english}\t{german}\n")
    data = "".join(lines).encode("utf-8")
    if path.suffix == ".xz":
        data = lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=XZ_PRESET)
    elif path.suffix == ".gz":
        buffer = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
            gz.write(data)
        data = buffer.getvalue()
    path.write_bytes(data)


def read_pairs(path: str | Path) -> list[Pair]:
    """Read `english<TAB>german` lines from a .tsv, .tsv.xz or .tsv.gz file."""
    path = Path(path)
    with open_text(path) as file:
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
    """{"train", "dev", "test"} -> pairs, from `folder/{split}.tsv.xz` (`split_file`), and "everyday-dev" and
    "everyday-test" where the folder has them."""
    corpus = {}
    for split in (*SPLITS, *EVERYDAY_SPLITS):
        path = split_file(folder, split)
        if path is None and split in SPLITS:
            raise FileNotFoundError(f"{folder} has no {split} split ({split}.tsv.xz, .tsv.gz or .tsv)")
        if path is not None:
            corpus[split] = read_pairs(path)
    return corpus
