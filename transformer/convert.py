"""Make checkpoints from checkpoints: `python -m transformer.convert --help`.

python -m transformer.convert twin checkpoints/en-de checkpoints/en-de-untrained   # same shape, random weights
python -m transformer.convert convert Helsinki-NLP/opus-mt-en-de models/opus-mt-en-de  # Marian -> our format
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from .checkpoint import Checkpoint, load_checkpoint, load_pretrained, save_checkpoint
from .model import Transformer


def untrained_twin(checkpoint: Checkpoint, seed: int = 0) -> Checkpoint:
    """The same architecture and tokenizer with freshly initialised weights (to compare attention before/after)."""
    torch.manual_seed(seed)
    model = Transformer(checkpoint.model.config).eval()
    card = (
        f"# {checkpoint.name}-untrained\n\n"
        f"The architecture and tokenizer of `{checkpoint.name}` with randomly initialised weights "
        f"(`python -m transformer.convert twin`, seed {seed}): Xavier-uniform matrices, N(0, d_model^-0.5) "
        "embeddings, zero biases. It has never seen data; its translations are noise and its attention shows what "
        "a Transformer does before training.\n"
    )
    return Checkpoint(model, checkpoint.tokenizer, f"{checkpoint.name}-untrained", checkpoint.generation, card)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m transformer.convert")
    commands = parser.add_subparsers(dest="command", required=True)
    twin = commands.add_parser("twin", help="write an untrained twin of a checkpoint")
    twin.add_argument("source", type=Path)
    twin.add_argument("dest", type=Path)
    twin.add_argument("--seed", type=int, default=0)
    convert = commands.add_parser("convert", help="convert a model (folder or Hub repo id) into our format")
    convert.add_argument("source")
    convert.add_argument("dest", type=Path)
    convert.add_argument("--float16", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "twin":
        source = load_checkpoint(args.source)
        save_checkpoint(untrained_twin(source, args.seed), args.dest, dtype=torch.float16)
    else:
        save_checkpoint(load_pretrained(args.source), args.dest, dtype=torch.float16 if args.float16 else torch.float32)
    print(f"wrote {args.dest}")


if __name__ == "__main__":
    main()
