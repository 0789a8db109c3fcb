"""The project's own authored everyday sentences (`data/authored/*.tsv`, see `transformer.training.everyday`).

They are no Debian package: they are read from the project's folder, not from the extracted packages.
"""

from __future__ import annotations

from pathlib import Path

from ..everyday import read_authored
from .cleaning import Pair


def read(root: Path, packages: tuple[str, ...], *, folder: Path) -> tuple[list[Pair], list[str]]:
    """Every pair of the `*.tsv` files in `folder`, files in name order (`root` and `packages` are not used)."""
    pairs = [row.pair for row in read_authored(folder)]
    return pairs, [f"{len(sorted(Path(folder).glob('*.tsv')))} files in `data/authored`"]
