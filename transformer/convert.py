"""Make checkpoints from checkpoints: `python -m transformer.convert --help`.

python -m transformer.convert twin checkpoints/en-de checkpoints/en-de-untrained   # same shape, weights from a seed
python -m transformer.convert convert Helsinki-NLP/opus-mt-en-de models/opus-mt-en-de  # Marian -> our format
python -m transformer.convert marian checkpoints/en-de models/en-de-marian  # our format -> transformers' Marian
python -m transformer.convert average checkpoints/en-de runs/en-de/snapshots/*.safetensors --out runs/en-de-avg

`to_marian` is the way back: one of our models as a `transformers` MarianMTModel with the same function (used by the
benchmark to run the shipped model in both implementations, and tested to give the same logits).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from .checkpoint import (
    CARD,
    MARIAN_LAYER_KEYS,
    TWIN,
    WEIGHTS_INDEX,
    Checkpoint,
    load_checkpoint,
    load_pretrained,
    read_architecture,
    save_checkpoint,
)
from .decoding import banned_tokens
from .model import Transformer


def twin_card(name: str, seed: int) -> str:
    return (
        f"# {name}-untrained\n\n"
        f"The architecture and tokenizer of `{name}` with randomly initialised weights "
        f"(`python -m transformer.convert twin`, seed {seed}): Xavier-uniform matrices, N(0, d_model^-0.5) "
        "embeddings, zero biases. It has never seen data; its translations are noise and its attention shows what "
        "a Transformer does before training.\n\n"
        f"The folder holds no weights: `{TWIN}` names `{name}` and the seed, and the weights are drawn from the seed "
        "when the twin is loaded, the same on every machine.\n"
    )


def write_twin(source: Path, dest: Path, seed: int = 0) -> None:
    """Write an untrained twin of the checkpoint folder `source` as `dest`, a folder next to it: `twin.json` and
    a card, no weights."""
    if dest.resolve().parent != source.resolve().parent:
        raise ValueError(f"a twin lives next to its checkpoint: {dest} is not in {source.parent}")
    read_architecture(source)  # a twin of a loadable checkpoint: its config and tokenizer are what the twin uses
    dest.mkdir(parents=True, exist_ok=True)
    for stale in [*dest.glob("*.safetensors"), dest / WEIGHTS_INDEX, dest / "config.json", *dest.glob("*.spm")]:
        stale.unlink(missing_ok=True)
    (dest / TWIN).write_text(json.dumps({"twin_of": source.name, "seed": seed}, indent=2) + "\n", encoding="utf-8")
    (dest / CARD).write_text(twin_card(source.name, seed), encoding="utf-8")


def average(base: Checkpoint, snapshots: list[Path]) -> Checkpoint:
    """`base` (architecture, tokenizer) with the element-wise mean of the weights in `snapshots` (§6.1).

    The snapshots are the safetensors files a training run keeps (`runs/NAME/snapshots/`), of the same model.
    """
    from safetensors.torch import load_file

    from .checkpoint import fill_model

    if not snapshots:
        raise ValueError("no snapshots to average")
    total: dict[str, torch.Tensor] = {}
    for path in snapshots:
        for name, tensor in load_file(str(path)).items():
            total[name] = total[name] + tensor.double() if name in total else tensor.double()
    model = Transformer(base.model.config).eval()
    fill_model(model, {name: (t / len(snapshots)).float() for name, t in total.items()}, snapshots[0].parent)
    steps = ", ".join(p.stem.removeprefix("step-").lstrip("0") or "0" for p in snapshots)
    card = f"# {base.name}\n\nThe average of the weights at steps {steps} (`python -m transformer.convert average`).\n"
    return Checkpoint(model, base.tokenizer, base.name, base.generation, card)


def to_marian(model: Transformer):
    """The same model as a `transformers` MarianMTModel (eager attention); needs `transformers` installed.

    Marian is a post-norm Transformer with scaled embeddings and [sin | cos] sinusoidal positions. Our paper-style
    interleaved positions (sin, cos, sin, cos, …) are the same encoding with the dimensions in another order, so a
    model trained with them is rewritten in Marian's order: every weight that reads or writes the residual stream has
    its d_model axis permuted (dimension 2i goes to i, 2i+1 to d/2 + i), which leaves every output unchanged.
    """
    from transformers import MarianConfig, MarianMTModel

    cfg = model.config
    if cfg.norm_position != "post" or not cfg.positional_encoding.startswith("sinusoidal"):
        raise ValueError("Marian is post-norm with sinusoidal positions; this model is not")
    if cfg.positional_base != 10000.0 or cfg.d_model % 2:
        raise ValueError("Marian's sinusoids use base 10000 and an even d_model")
    d = cfg.d_model
    if cfg.positional_encoding == "sinusoidal_interleaved":
        order = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])  # Marian dimension j holds ours order[j]
    else:
        order = torch.arange(d)
    activation = {"relu": "relu", "gelu": "gelu", "silu": "swish"}[cfg.activation]
    hf_config = MarianConfig(
        vocab_size=cfg.src_vocab_size,
        decoder_vocab_size=cfg.tgt_vocab_size,
        share_encoder_decoder_embeddings=cfg.share_embeddings,
        tie_word_embeddings=cfg.tie_output,
        d_model=d,
        encoder_layers=cfg.n_encoder_layers,
        decoder_layers=cfg.n_decoder_layers,
        encoder_attention_heads=cfg.n_heads,
        decoder_attention_heads=cfg.n_heads,
        encoder_ffn_dim=cfg.d_ff,
        decoder_ffn_dim=cfg.d_ff,
        activation_function=activation,
        max_position_embeddings=cfg.max_positions,
        scale_embedding=cfg.scale_embedding,
        pad_token_id=cfg.pad_id,
        eos_token_id=cfg.eos_id,
        decoder_start_token_id=cfg.decoder_start_id,
        dropout=cfg.dropout,
        attention_dropout=cfg.attention_dropout,
        activation_dropout=cfg.activation_dropout,
    )
    ours = {name: tensor.detach().float() for name, tensor in model.state_dict().items()}
    reads_residual = (".q_proj.weight", ".k_proj.weight", ".v_proj.weight", ".fc1.weight")
    writes_residual = (".out_proj.weight", ".out_proj.bias", ".fc2.weight", ".fc2.bias", ".norm.weight", ".norm.bias")
    state = {}
    for name, tensor in ours.items():
        stack, _, rest = name.partition("_layers.")
        if stack not in ("encoder", "decoder") or not rest:
            continue
        index, _, part = rest.partition(".")
        theirs = next(t for t, mine in MARIAN_LAYER_KEYS.items() if part.startswith(mine))
        if name.endswith(reads_residual):
            tensor = tensor[:, order]
        elif name.endswith(writes_residual):
            tensor = tensor[order]
        state[f"model.{stack}.layers.{index}.{theirs}{part[len(MARIAN_LAYER_KEYS[theirs]) :]}"] = tensor
    state["model.encoder.embed_tokens.weight"] = ours["src_embed.tokens.weight"][:, order]
    if cfg.share_embeddings:
        state["model.shared.weight"] = state["model.encoder.embed_tokens.weight"]
    target = ours.get("tgt_embed.tokens.weight", ours["src_embed.tokens.weight"])[:, order]
    state["model.decoder.embed_tokens.weight"] = target
    state["lm_head.weight"] = ours["output_proj.weight"][:, order] if "output_proj.weight" in ours else target
    bias = ours.get("logits_bias", torch.zeros(cfg.tgt_vocab_size))
    state["final_logits_bias"] = bias.reshape(1, -1)

    hf = MarianMTModel(hf_config).eval()
    missing, unexpected = hf.load_state_dict(state, strict=False)
    missing = [k for k in missing if "embed_positions" not in k]  # the sinusoids are computed, not learned
    if missing or unexpected:
        raise ValueError(f"weights do not fit MarianMTModel: missing {missing}, unexpected {unexpected}")
    hf.set_attn_implementation("eager")
    # Our generation rules: </s> forced at the length limit; padding and a separate BOS never generated.
    generation = hf.generation_config
    generation.decoder_start_token_id, generation.pad_token_id = cfg.decoder_start_id, cfg.pad_id
    generation.eos_token_id = generation.forced_eos_token_id = cfg.eos_id
    generation.bad_words_ids = [[t] for t in banned_tokens(cfg)]
    return hf


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
        save_checkpoint(average(load_checkpoint(args.base), args.snapshots), args.out, dtype=torch.float16)
    elif args.command == "marian":
        to_marian(load_checkpoint(args.source).model).save_pretrained(args.dest)
    else:
        save_checkpoint(load_pretrained(args.source), args.dest, dtype=torch.float16 if args.float16 else torch.float32)
    print(f"wrote {args.out if args.command == 'average' else args.dest}")


if __name__ == "__main__":
    main()
