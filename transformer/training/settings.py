"""What a training run is set to: `TrainSettings`, the model it trains by default, and its command line.

A run folder's `settings.json` and the options of `python -m transformer.training.train` are the same flat names;
`TrainSettings` holds them with the model's as a `TransformerConfig`. Building settings needs neither the data nor
the training loop.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ..model import TransformerConfig
from ..tokenizer import Tokenizer

PAD, UNK, BOS, EOS = 0, 1, 2, 3  # the special ids of every sentencepiece model we train

PROGRAM = "python -m transformer.training.train"  # how --help and the reproducing commands name the training

# The model a run trains unless its command line says otherwise: the paper's base model (§6.2) at half its width
# and depth, with one vocabulary. Its vocabulary sizes are those asked of sentencepiece (the trained tokenizer may
# hold fewer pieces, and then its sizes are the model's); the special ids are those of our sentencepiece models.
DEFAULT_MODEL = TransformerConfig(
    src_vocab_size=8000,
    tgt_vocab_size=8000,
    d_model=256,
    n_heads=4,
    n_encoder_layers=3,
    n_decoder_layers=3,
    d_ff=1024,
    max_positions=128,
    share_embeddings=True,
    pad_id=PAD,
    eos_id=EOS,
    decoder_start_id=BOS,
)

# The fields of the model a run may choose, by their command-line and settings.json names, each with the config
# field(s) it sets; the others are DEFAULT_MODEL's in every run. The vocabulary has names of its own: one
# sentencepiece size for both sides, and one vocabulary (with shared embeddings) or one per side.
MODEL_OPTIONS = {
    "vocab_size": ("src_vocab_size", "tgt_vocab_size"),
    "shared_vocab": ("share_embeddings",),
    **{name: (name,) for name in ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff")},
    **{name: (name,) for name in ("activation", "norm_position", "positional_encoding")},
    **{name: (name,) for name in ("dropout", "attention_dropout", "activation_dropout", "max_positions")},
}


@dataclass(frozen=True)
class TrainSettings:
    """Everything that defines a run; stored in the run folder, and a resumed run must match it.

    On the command line and in `settings.json` the settings are flat (`--d-model 256`, `"d_model": 256`): the
    model's options (`MODEL_OPTIONS`) sit among the run's, and `from_dict`/`to_dict` convert."""

    out: str
    corpus: str | None = None  # a folder with train/dev/test.tsv.xz (see transformer.training.corpus)
    task: str | None = None  # or a synthetic task (see transformer.training.synthetic)
    task_train_size: int | None = None  # synthetic: how many training items (None = all)
    export: str | None = None  # where to write the best checkpoint (our format)
    init_from: str | None = None  # start from this checkpoint's weights and tokenizer (to train a model further)
    model: TransformerConfig = DEFAULT_MODEL
    # optimisation
    batch_tokens: int = 4000
    steps: int = 10000
    warmup: int = 4000
    lr_scale: float = 1.0  # multiplies the paper's schedule d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
    label_smoothing: float = 0.1
    character_coverage: float = 1.0  # of the training text's characters, the share sentencepiece keeps as pieces
    # (< 1 for Chinese, whose thousands of rare characters would crowd out the words: they become <unk>)
    subword_alpha: float = 0.0  # > 0: each batch samples new segmentations of its sentences (subword regularisation)
    clip_norm: float = 1.0
    seed: int = 0
    max_len: int = 64  # training pairs longer than this many tokens (either side) are skipped
    # evaluation and saving
    eval_every: int = 1000
    dev_size: int = 400  # dev sentences translated at each evaluation
    log_every: int = 50
    save_every_minutes: float = 5.0
    keep_snapshots: int = 5  # the weights at the last N evaluations, for checkpoint averaging (§6.1)
    replay: bool = False  # keep the weights at steps spaced logarithmically, to replay the run (`replay`)

    def selection_score(self, dev_record: dict) -> float:
        """What the best weights are chosen by, in a dev record: exact match on a synthetic task; else the mean chrF
        of the dev and everyday dev sets (`selection`) where there is an everyday set, else chrF."""
        return dev_record["exact_match"] if self.task else dev_record.get("selection", dev_record["chrf"])

    def to_dict(self) -> dict:
        """The flat settings, in the order of the command line's options (the model's where `model` stands)."""
        values = {}
        for f in dataclasses.fields(self):
            if f.name == "model":
                values |= {option: getattr(self.model, fields[0]) for option, fields in MODEL_OPTIONS.items()}
            else:
                values[f.name] = getattr(self, f.name)
        return values

    @classmethod
    def from_dict(cls, values: Mapping) -> TrainSettings:
        """Settings from their flat form; what it leaves out takes its default, as in a run folder written before
        the option existed. An unknown name is an error."""
        run, model = dict(values), {}
        for option, fields in MODEL_OPTIONS.items():
            if option in run:
                model |= dict.fromkeys(fields, run.pop(option))
        unknown = sorted(set(run) - {f.name for f in dataclasses.fields(cls) if f.name != "model"})
        if unknown:
            raise ValueError(f"unknown training setting(s) {', '.join(unknown)}")
        return cls(**run, model=dataclasses.replace(DEFAULT_MODEL, **model))

    def model_for(self, tokenizer: Tokenizer) -> TransformerConfig:
        """The model to train with this tokenizer: its vocabulary sizes, which sentencepiece may have made smaller
        than asked for."""
        return dataclasses.replace(
            self.model, src_vocab_size=tokenizer.source.size, tgt_vocab_size=tokenizer.target.size
        )


def command_line(settings: TrainSettings) -> str:
    """The `python -m transformer.training.train …` command that reproduces these settings (defaults left out)."""
    defaults = TrainSettings(out="").to_dict()
    parts = [PROGRAM]
    for name, value in settings.to_dict().items():
        if value == defaults[name] and name != "out":
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            parts.append(flag if value else "--no-" + flag[2:])
        elif value is not None:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def parse_args(argv: list[str] | None = None) -> TrainSettings:
    """The settings of `python -m transformer.training.train`'s command line: one option per flat setting."""
    description = f"Train a Transformer on a parallel corpus or a synthetic task: `{PROGRAM} --help`."
    parser = argparse.ArgumentParser(prog=PROGRAM, description=description)
    for name, default in TrainSettings(out="").to_dict().items():
        flag = "--" + name.replace("_", "-")
        if name == "out":
            parser.add_argument(flag, required=True, help="run folder (state, log, plot, tokenizer)")
        elif isinstance(default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default)
        else:
            kind = type(default) if default is not None else (int if "size" in name else str)
            parser.add_argument(flag, type=kind, default=default, help=f"default: {default}")
    return TrainSettings.from_dict(vars(parser.parse_args(argv)))
