"""The command line: `python -m transformer.training.corpus build --out data/en-de --seed 0 --exclude ddtp`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .build import build
from .sources import PAIRS, LanguagePair


def parse_repeat(settings: list[str] | None, pair: LanguagePair) -> dict[str, int] | None:
    """`["authored=1"]` → `{"authored": 1}`; None (the option not given) stays None, the default mix."""
    if settings is None:
        return None
    names = {source.name for source in pair.sources}
    repeat = {}
    for setting in settings:
        name, equals, count = setting.partition("=")
        if not equals or name not in names or not count.isdigit() or int(count) < 1:
            raise ValueError(
                f"--repeat takes SOURCE=N with N ≥ 1 and SOURCE one of {', '.join(sorted(names))}; got {setting!r}"
            )
        repeat[name] = int(count)
    return repeat


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m transformer.training.corpus",
        description="A parallel corpus built offline from Debian data packages and the project's own sentences.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="download the Debian packages and build the corpus")
    build_parser.add_argument("--pair", choices=sorted(PAIRS), default="en-de", help="the language pair")
    build_parser.add_argument("--out", type=Path, help="output folder (default: data/PAIR)")
    build_parser.add_argument("--seed", type=int, default=0, help="seed for the cap and the splits")
    build_parser.add_argument("--download-dir", type=Path, help="where to download the .deb files (default: temp)")
    build_parser.add_argument("--from-debs", type=Path, help="reuse the .deb files in this folder, no download")
    names = sorted({source.name for pair in PAIRS.values() for source in pair.sources})
    build_parser.add_argument("--exclude", nargs="*", default=[], choices=names, help="leave these sources out")
    default_mix = ", ".join(f"{s.name}={s.selection.repeat}" for s in PAIRS["en-de"].sources if s.selection.repeat > 1)
    build_parser.add_argument(
        "--repeat",
        nargs="*",
        default=None,
        metavar="SOURCE=N",
        help=f"how many times each named source appears in train, 1 when not named (default: en-de's {default_mix})",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    arguments = parser()
    args = arguments.parse_args(argv)
    pair = PAIRS[args.pair]
    try:
        repeat = parse_repeat(args.repeat, pair)
    except ValueError as error:
        arguments.error(str(error))
    try:
        build(
            args.out or Path("data") / pair.name,
            args.seed,
            pair,
            download_dir=args.download_dir,
            from_debs=args.from_debs,
            exclude=args.exclude,
            repeat=repeat,
        )
    except (RuntimeError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
