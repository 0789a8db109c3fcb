"""Debian package descriptions and their translations (the Debian Description Translation Project).

apt's `Translation-en` and `Translation-<language>` lists (`apt-get -o Acquire::Languages=en,de update`) hold
each package's description, keyed by `Description-md5`; the long descriptions are running text, paragraph for
paragraph. The build copies the two lists into the extracted tree as `ddtp/Translation-{en,<language>}`.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from .cleaning import Pair, clean_text
from .packages import run

LISTS = Path("/var/lib/apt/lists")  # where apt puts them
FOLDER = "ddtp"  # in the folder of extracted packages

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"„])|(?<=[。！？])\s*")  # Chinese needs no space after a sentence


def ddtp_descriptions(text: str, language: str) -> dict[str, list[str]]:
    """{Description-md5: the long description's paragraphs} of an apt `Translation-<language>` list.

    The long description is the indented text after the one-line summary; ` .` lines separate paragraphs.
    Paragraphs with lines indented further (lists, verbatim text) are left out: they are not running text.
    """
    descriptions: dict[str, list[str]] = {}
    for entry in text.split("\n\n"):
        md5, body = None, None
        lines = entry.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("Description-md5: "):
                md5 = line.split(": ", 1)[1].strip()
            elif line.startswith(f"Description-{language}: "):
                body = lines[i + 1 :]
        if md5 is None or body is None:
            continue
        paragraphs, current, verbatim = [], [], False
        for line in [*body, " ."]:
            if line.strip() == ".":
                if current and not verbatim:
                    paragraphs.append(clean_text(" ".join(current)))
                current, verbatim = [], False
            elif line.startswith("  ") or line.lstrip().startswith(("* ", "- ", "+ ", "o ")):
                verbatim = True
            else:
                current.append(line.strip())
        descriptions[md5] = paragraphs
    return descriptions


def sentences(paragraph: str) -> list[str]:
    """The sentences of a paragraph."""
    return [sentence for sentence in _SENTENCE.split(paragraph) if sentence]


def ddtp_pairs(english_text: str, translated_text: str, language: str) -> list[Pair]:
    """Sentence pairs of the package descriptions translated in both lists, matched by `Description-md5`: the
    paragraphs zipped (same count), each split into sentences and zipped where both have the same count."""
    english = ddtp_descriptions(english_text, "en")
    pairs = []
    for md5, translated_paragraphs in ddtp_descriptions(translated_text, language).items():
        english_paragraphs = english.get(md5)
        if english_paragraphs is None or len(english_paragraphs) != len(translated_paragraphs):
            continue
        for english_paragraph, translated_paragraph in zip(english_paragraphs, translated_paragraphs, strict=True):
            english_sentences = sentences(english_paragraph)
            translated_sentences = sentences(translated_paragraph)
            if len(english_sentences) == len(translated_sentences):
                pairs += zip(english_sentences, translated_sentences, strict=True)
    return pairs


def read(root: Path, packages: tuple[str, ...], *, language: str) -> tuple[list[Pair], list[str]]:
    """The pairs of the two lists in `root/ddtp`, or none when the build found no lists there."""
    lists = [root / FOLDER / f"Translation-{code}" for code in ("en", language)]
    if not all(path.is_file() for path in lists):
        return [], []
    english, translated = (path.read_text("utf-8") for path in lists)
    note = f"apt lists `Translation-en` and `Translation-{language}` of bookworm main"
    return ddtp_pairs(english, translated, language), [note]


def copy_lists(folder: Path, languages: tuple[str, ...], lists: Path = LISTS) -> None:
    """Write apt's `Translation-<language>` lists of the main archive, decompressed, into `folder`.

    apt fetches them with `apt-get -o Acquire::Languages=en,de update` (lz4-compressed on Debian 12).
    """
    folder.mkdir(parents=True, exist_ok=True)
    for language in languages:
        matches = sorted(
            path
            for path in lists.glob(f"*_dists_*_main_i18n_Translation-{language.replace('_', '%5f')}*")  # zh%5fCN
            if re.search(r"_dists_[a-z]+_main_", path.name)  # the release itself, not -updates or -security
        )
        if not matches:
            raise FileNotFoundError(
                f"no Translation-{language} list in {lists}: "
                f"run `apt-get -o Acquire::Languages={','.join(languages)} update` first"
            )
        path = matches[0]
        if path.suffix == ".lz4":
            data = run(["lz4", "-dc", str(path)]).encode("utf-8")
        elif path.suffix == ".gz":
            data = gzip.decompress(path.read_bytes())
        else:
            data = path.read_bytes()
        (folder / f"Translation-{language}").write_bytes(data)
