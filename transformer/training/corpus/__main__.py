"""The command line: `python -m transformer.training.corpus build --out data/en-de --seed 0 --exclude ddtp`, and
`python -m transformer.training.corpus mix …`, a corpus for continuing a model (`mix`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .build import build
from .mix import mix
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
    mix_parser = commands.add_parser(
        "mix",
        help="a corpus for continuing a model: new pairs, repeated, with a replay sample of a corpus's train split "
        "and its held-out splits unchanged",
        description="New pairs (four-column authored files), repeated, mixed with a replay sample of the base corpus's "
        "train split; the base's dev, test and everyday splits copied unchanged, and every new pair that equals or "
        "nearly equals one of their sentences dropped (listed in MIX.md). See transformer/training/corpus/mix.py.",
    )
    mix_parser.add_argument("--base", type=Path, required=True, help="the corpus folder continued (e.g. data/zh-en)")
    mix_parser.add_argument("--add", type=Path, nargs="+", required=True, help="four-column TSV files of new pairs")
    mix_parser.add_argument("--repeat", type=int, default=3, help="how many times each new pair appears in train")
    mix_parser.add_argument("--replay", type=int, required=True, help="lines of the base train split to keep")
    mix_parser.add_argument("--seed", type=int, default=0, help="seed for the replay sample and the shuffle")
    mix_parser.add_argument(
        "--held-out",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a further held-out file (repeatable), e.g. a test set: its source sentences (the `source` column of a "
        "TSV with a header, as data/basics/*.tsv, else the first column) are kept out of train: every added pair and "
        "replayed line whose first side equals or nearly equals one is dropped (listed in MIX.md)",
    )
    mix_parser.add_argument("--out", type=Path, required=True, help="output folder")
    return parser


def _mix(args: argparse.Namespace, argv: list[str] | None) -> None:
    command = " ".join(["python -m transformer.training.corpus", *(sys.argv[1:] if argv is None else argv)])
    report = mix(
        args.out,
        args.base,
        args.add,
        repeat=args.repeat,
        replay=args.replay,
        seed=args.seed,
        command=command,
        held_out=args.held_out,
    )
    held_out_added = f"{len(report.held_out_added)} near or equal to a held-out source, " if args.held_out else ""
    held_out_replay = f" less {len(report.held_out_replay):,} held out" if args.held_out else ""
    print(
        f"added {report.added:,}: {len(report.rejected)} rejected, {len(report.duplicates)} repeated, "
        f"{len(report.collisions)} near or equal to a held-out sentence, {held_out_added}{report.kept:,} kept × "
        f"{report.repeat}; replay {report.replay:,} of {report.base_train:,}{held_out_replay}; train "
        f"{report.train:,} -> {args.out} (see MIX.md)"
    )
    for (first, second), kind, split, (held_first, held_second) in report.collisions:
        print(f"  dropped ({kind}, {split}): {first} / {second}  ~  {held_first} / {held_second}")
    for what, rows in (("added", report.held_out_added), ("replayed", report.held_out_replay)):
        for (first, second), kind, name, sentence in rows:
            print(f"  dropped {what} ({kind}, {name}): {first} / {second}  ~  {sentence}")


def main(argv: list[str] | None = None) -> None:
    arguments = parser()
    args = arguments.parse_args(argv)
    if args.command == "mix":
        try:
            _mix(args, argv)
        except (ValueError, FileNotFoundError) as error:
            sys.exit(f"error: {error}")
        return
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
