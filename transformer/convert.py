"""Make checkpoints from checkpoints: `python -m transformer.convert --help`.

python -m transformer.convert twin checkpoints/en-de checkpoints/en-de-untrained   # same shape, weights from a seed
python -m transformer.convert convert Helsinki-NLP/opus-mt-en-de models/opus-mt-en-de  # Marian -> our format
python -m transformer.convert marian checkpoints/en-de models/en-de-marian  # our format -> transformers' Marian
python -m transformer.convert average checkpoints/en-de runs/en-de/snapshots/*.safetensors --out runs/en-de-avg

The work is done by the library: `checkpoint` (twins, averaged snapshots), `marian` (both directions of the
conversion) and `hub` (downloads).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from .checkpoint import average_snapshots, load_checkpoint, save_checkpoint, write_twin
from .hub import load_pretrained
from .marian import to_marian


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m transformer.convert")
    commands = parser.add_subparsers(dest="command", required=True)
    twin = commands.add_parser("twin", help="write an untrained twin of a checkpoint (twin.json: no weights)")
    twin.add_argument("source", type=Path)
    twin.add_argument("dest", type=Path)
    twin.add_argument("--seed", type=int, default=0)
    convert = commands.add_parser("convert", help="convert a model (folder or Hub repo id) into our format")
    convert.add_argument("source")
    convert.add_argument("dest", type=Path)
    convert.add_argument("--float16", action="store_true")
    averaged = commands.add_parser("average", help="average the weights of training snapshots (the paper, §6.1)")
    averaged.add_argument("base", type=Path, help="a checkpoint of the same model (architecture and tokenizer)")
    averaged.add_argument("snapshots", type=Path, nargs="+", help="runs/NAME/snapshots/step-*.safetensors")
    averaged.add_argument("--out", type=Path, required=True)
    marian = commands.add_parser("marian", help="write one of our checkpoints as a transformers Marian model")
    marian.add_argument("source", type=Path)
    marian.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.command == "twin":
        write_twin(args.source, args.dest, args.seed)
    elif args.command == "average":
        save_checkpoint(average_snapshots(load_checkpoint(args.base), args.snapshots), args.out, dtype=torch.float16)
    elif args.command == "marian":
        to_marian(load_checkpoint(args.source).model).save_pretrained(args.dest)
    else:
        save_checkpoint(load_pretrained(args.source), args.dest, dtype=torch.float16 if args.float16 else torch.float32)
    print(f"wrote {args.out if args.command == 'average' else args.dest}")


if __name__ == "__main__":
    main()
