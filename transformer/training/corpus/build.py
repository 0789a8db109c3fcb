"""Building a corpus folder: fetch and unpack the packages, read the sources, split, write the files and the card.

The only step with side effects outside the output folder is the download (`apt-get download`, into a
temporary folder unless `--download-dir` keeps it); everything between is pure (`sources`, `splitting`).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from ..everyday import read_rows, split_everyday
from . import ddtp
from .card import data_card, measure, notice
from .cleaning import Pair
from .packages import deb_version, download_packages, extract_debs, find_debs, licence_files
from .sources import EN_DE, LanguagePair, read_sources
from .splitting import Selection, make_corpus
from .tsv import write_pairs


def build(
    out: Path,
    seed: int,
    pair: LanguagePair = EN_DE,
    *,
    download_dir: Path | None = None,
    from_debs: Path | None = None,
    exclude: Iterable[str] = (),
    repeat: dict[str, int] | None = None,
) -> None:
    """Download (or reuse) the packages, extract them, build the corpus (without the `exclude`d sources; with
    `repeat`, each source that many times in train, 1 when not named) and write it to `out`."""
    started = time.perf_counter()
    exclude = set(exclude)
    with tempfile.TemporaryDirectory(prefix="corpus-") as temporary:
        debs_folder = from_debs or _download(pair, download_dir or Path(temporary) / "debs")
        debs = find_debs(debs_folder, pair.packages)
        versions = _unpack(pair, debs_folder, debs, Path(temporary) / "x")
        raw, notes = read_sources(Path(temporary) / "x", [s for s in pair.sources if s.name not in exclude])
        print("extracted:", ", ".join(f"{name} {len(pairs):,}" for name, pairs in raw.items()), flush=True)
        splits, stats = make_corpus(
            raw,
            seed,
            selections=_selections(pair, repeat),
            held_out_source=pair.held_out_source,
            dev_size=pair.held_out_sizes[0],
            test_size=pair.held_out_sizes[1],
            everyday=_everyday(pair, seed),
        )
        excluded = [source.name for source in pair.sources if source.name in exclude]
        card = data_card(pair, measure(splits, stats, notes, versions, seed, excluded))
        write_corpus(out, splits, card, notice(pair), licence_files(Path(temporary) / "x", debs))
    print(", ".join(f"{split} {len(pairs):,}" for split, pairs in splits.items()), f"-> {out}")
    print(f"done in {time.perf_counter() - started:.0f} s")


def _download(pair: LanguagePair, folder: Path) -> Path:
    print(f"downloading {len(pair.packages)} packages into {folder} ...", flush=True)
    download_packages(folder, pair.packages)
    return folder


def _unpack(pair: LanguagePair, debs_folder: Path, debs: dict[str, Path], tree: Path) -> dict[str, str]:
    """Extract the packages into `tree`, one folder each, and the package-description lists into `tree/ddtp`
    (copied from apt's lists next to the .deb files first); returns {package: version}."""
    if not (debs_folder / f"Translation-{pair.apt_languages[-1]}").is_file():
        ddtp.copy_lists(debs_folder, pair.apt_languages)
    versions = {package: deb_version(deb) for package, deb in debs.items()}
    print(f"extracting {len(versions)} packages ...", flush=True)
    extract_debs(debs, tree)
    (tree / ddtp.FOLDER).mkdir()
    for language in pair.apt_languages:
        shutil.copyfile(debs_folder / f"Translation-{language}", tree / ddtp.FOLDER / f"Translation-{language}")
    return versions


def _selections(pair: LanguagePair, repeat: dict[str, int] | None) -> dict[str, Selection]:
    """The pair's selections; `repeat`, when given, sets every source's repeat (1 for a source it does not name)."""
    selections = pair.selections()
    if repeat is None:
        return selections
    return {name: replace(selection, repeat=repeat.get(name, 1)) for name, selection in selections.items()}


def _everyday(pair: LanguagePair, seed: int) -> tuple[list[Pair], list[Pair]]:
    """The pair's everyday set halved into (dev, test), or none."""
    if pair.everyday is None:
        return [], []
    dev, test = split_everyday(read_rows(pair.everyday), seed)
    return [row.pair for row in dev], [row.pair for row in test]


def write_corpus(out: Path, splits: dict[str, list[Pair]], card: str, notice: str, licences: dict[str, Path]) -> None:
    """Write the splits, DATA_CARD.md, and licenses/ (the `licences` files, see `licence_files`, and NOTICE.md)."""
    out.mkdir(parents=True, exist_ok=True)
    for split, pairs in splits.items():
        write_pairs(out / f"{split}.tsv.xz", pairs)
    (out / "DATA_CARD.md").write_text(card, encoding="utf-8")
    licenses = out / "licenses"
    licenses.mkdir(exist_ok=True)
    for name, path in licences.items():
        shutil.copyfile(path, licenses / name)
    (licenses / "NOTICE.md").write_text(notice, encoding="utf-8")
