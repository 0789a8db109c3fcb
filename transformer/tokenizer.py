"""Text <-> token ids with sentencepiece, for our own models and for opus-mt (Marian) models.

Two ways to number the pieces, one class:

* our own models: the ids are sentencepiece's own ids (`<pad>`, `<unk>`, `<s>`, `</s>` are pieces of the model);
* Marian models: sentencepiece only cuts the text into pieces; the ids come from `vocab.json` (piece -> id),
  a piece missing from it becomes `<unk>`, and `</s>` is appended. A leading target-language code such as
  `>>fr<<` stays one token.

Typed text is always text: `</s>` or `<pad>` inside a sentence are cut into ordinary pieces, never turned into
control tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm


def load_sentencepiece(path: str | Path) -> spm.SentencePieceProcessor:
    """Load a sentencepiece model file, with a clear error when it is missing or not a model."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"sentencepiece model not found: {path}")
    processor = spm.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(path.read_bytes())
    except Exception as error:  # sentencepiece raises RuntimeError/OSError with terse messages
        raise ValueError(f"{path} is not a valid sentencepiece model ({error})") from None
    return processor


@dataclass
class Side:
    """One side (source or target) of a tokenizer: a sentencepiece model and its piece <-> id mapping."""

    processor: spm.SentencePieceProcessor
    vocab: dict[str, int] | None = None  # Marian's vocab.json; None: sentencepiece's own ids

    def __post_init__(self) -> None:
        if self.vocab is not None:
            self.pieces_by_id = {i: piece for piece, i in self.vocab.items()}

    @property
    def size(self) -> int:
        return len(self.vocab) if self.vocab is not None else self.processor.get_piece_size()

    def piece_to_id(self, piece: str, unk_id: int) -> int:
        if self.vocab is not None:
            return self.vocab.get(piece, unk_id)
        i = self.processor.piece_to_id(piece)
        return i if piece == self.processor.id_to_piece(i) else unk_id

    def id_to_piece(self, i: int) -> str:
        if self.vocab is not None:
            return self.pieces_by_id.get(i, "<unk>")
        return self.processor.id_to_piece(i) if 0 <= i < self.processor.get_piece_size() else "<unk>"


class Tokenizer:
    """Source text -> ids for the encoder; target ids -> text (and target text -> ids for training).

    Args:
        source, target: sentencepiece processors (the same object when the vocabulary is shared).
        source_vocab, target_vocab: piece -> id maps (Marian); None to use sentencepiece's ids.
        pad, eos, unk, bos: the special pieces.
    """

    def __init__(
        self,
        source: spm.SentencePieceProcessor,
        target: spm.SentencePieceProcessor | None = None,
        source_vocab: dict[str, int] | None = None,
        target_vocab: dict[str, int] | None = None,
        *,
        pad: str = "<pad>",
        eos: str = "</s>",
        unk: str = "<unk>",
        bos: str | None = "<s>",
    ):
        self.source = Side(source, source_vocab)
        self.target = Side(target if target is not None else source, target_vocab or source_vocab)
        self.special_pieces = {pad, eos, unk} | ({bos} if bos else set())

        def special_id(piece: str, side: Side) -> int:
            if side.vocab is not None:
                if piece not in side.vocab:
                    raise ValueError(f"the vocabulary has no {piece} token")
                return side.vocab[piece]
            i = side.processor.piece_to_id(piece)
            if side.processor.id_to_piece(i) != piece:
                raise ValueError(f"the sentencepiece model has no {piece} piece")
            return i

        self.unk_id = special_id(unk, self.source)
        self.eos_id = special_id(eos, self.target)
        self.pad_id = special_id(pad, self.target)
        self.source_eos_id = special_id(eos, self.source)
        self.source_pad_id = special_id(pad, self.source)
        self.target_unk_id = special_id(unk, self.target)
        # Marian vocabularies have no BOS piece: the decoder starts from <pad>.
        self.bos_id = special_id(bos, self.target) if bos and self._has(bos, self.target) else None
        self.language_codes = {p for p in (source_vocab or {}) if p.startswith(">>") and p.endswith("<<")}
        # dropped from decoded text, as transformers' skip_special_tokens does (an <unk> piece included)
        self.special_ids = {self.pad_id, self.eos_id, self.target_unk_id} | ({self.bos_id} - {None})

    @staticmethod
    def _has(piece: str, side: Side) -> bool:
        if side.vocab is not None:
            return piece in side.vocab
        return side.processor.id_to_piece(side.processor.piece_to_id(piece)) == piece

    @property
    def shared_vocabulary(self) -> bool:
        return self.source.processor is self.target.processor and self.source.vocab is self.target.vocab

    # ---- encoding ---------------------------------------------------------------------------------------

    def source_pieces(self, text: str, alpha: float = 0.0) -> list[str]:
        """The pieces of a source sentence, without `</s>` (a leading `>>xx<<` language code stays whole).
        `alpha` > 0: one segmentation sampled at random (`sampled`), for subword regularisation in training."""
        code = []
        if text.startswith(">>") and (end := text.find("<<")) != -1:
            code, text = [text[: end + 2]], text[end + 2 :]
        return code + sampled(self.source.processor, text, alpha)

    def encode_source(self, text: str, alpha: float = 0.0) -> list[int]:
        """Source text -> encoder input ids, ending with `</s>` (`alpha`: see `source_pieces`)."""
        ids = [self.source.piece_to_id(p, self.unk_id) for p in self.source_pieces(text, alpha)]
        return ids + [self.source_eos_id]

    def encode_target(self, text: str, alpha: float = 0.0) -> list[int]:
        """Target text -> the ids the decoder should produce, ending with `</s>` (training labels; `alpha`: see
        `source_pieces`)."""
        pieces = sampled(self.target.processor, text, alpha)
        return [self.target.piece_to_id(p, self.target_unk_id) for p in pieces] + [self.eos_id]

    # ---- decoding ---------------------------------------------------------------------------------------

    def source_piece(self, i: int) -> str:
        return self.source.id_to_piece(i)

    def target_piece(self, i: int) -> str:
        return self.target.id_to_piece(i)

    def decode_target(self, ids: list[int]) -> str:
        """Target ids -> text; special tokens (`<pad>`, `</s>`, `<s>`, `<unk>`) are dropped."""
        pieces = [self.target.id_to_piece(i) for i in ids if i not in self.special_ids]
        return self.target.processor.decode_pieces(pieces)

    def decode_source(self, ids: list[int]) -> str:
        """Source ids -> text (special tokens dropped)."""
        special = {self.source_eos_id, self.source_pad_id}
        return self.source.processor.decode_pieces([self.source.id_to_piece(i) for i in ids if i not in special])

    # ---- files ------------------------------------------------------------------------------------------

    @classmethod
    def from_files(
        cls,
        source_model: str | Path,
        target_model: str | Path | None = None,
        vocab: str | Path | None = None,
        target_vocab: str | Path | None = None,
    ) -> Tokenizer:
        """Load sentencepiece model file(s) and, for Marian, `vocab.json` (and `target_vocab.json`)."""
        source = load_sentencepiece(source_model)
        same = target_model is None or Path(target_model).read_bytes() == Path(source_model).read_bytes()
        target = source if same else load_sentencepiece(target_model)
        source_vocab = load_vocab(vocab) if vocab else None
        target_vocab_map = load_vocab(target_vocab) if target_vocab else None
        if source_vocab is not None:  # Marian: no BOS piece, the decoder starts from <pad>
            return cls(source, target, source_vocab, target_vocab_map, bos=None)
        return cls(source, target)

    def save(self, folder: str | Path) -> dict:
        """Write the tokenizer files into `folder`; returns the `tokenizer` entry of `config.json`."""
        folder = Path(folder)
        shared_model = self.source.processor is self.target.processor
        entry: dict = {"type": "sentencepiece", "source_model": "source.spm"}
        entry["target_model"] = "source.spm" if shared_model else "target.spm"
        (folder / "source.spm").write_bytes(self.source.processor.serialized_model_proto())
        if not shared_model:
            (folder / "target.spm").write_bytes(self.target.processor.serialized_model_proto())
        if self.source.vocab is not None:
            entry["vocab"] = "vocab.json"
            (folder / "vocab.json").write_text(json.dumps(self.source.vocab, ensure_ascii=False, indent=0))
            if self.target.vocab is not self.source.vocab:
                entry["target_vocab"] = "target_vocab.json"
                (folder / "target_vocab.json").write_text(json.dumps(self.target.vocab, ensure_ascii=False, indent=0))
        return entry

    @classmethod
    def load(cls, folder: str | Path, entry: dict) -> Tokenizer:
        """Load what `save` wrote, as described by the `tokenizer` entry of `config.json`."""
        folder = Path(folder)
        known = {"type", "source_model", "target_model", "vocab", "target_vocab"}
        if entry.get("type") != "sentencepiece" or set(entry) - known:
            raise ValueError(f"unsupported tokenizer entry in config.json: {entry!r}")

        def file(key: str) -> Path | None:
            name = entry.get(key)
            if name is None:
                return None
            path = (folder / name).resolve()
            if path.parent != folder.resolve():  # names only, no paths out of the checkpoint folder
                raise ValueError(f"tokenizer file {name!r} must be a plain file name inside the checkpoint")
            return path

        return cls.from_files(file("source_model"), file("target_model"), file("vocab"), file("target_vocab"))


def load_vocab(path: str | Path) -> dict[str, int]:
    """A Marian `vocab.json`: a JSON object mapping each piece to a distinct non-negative integer id."""
    path = Path(path)
    try:
        vocab = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read vocabulary {path}: {error}") from None
    if not isinstance(vocab, dict) or not all(
        isinstance(k, str) and type(v) is int and v >= 0 for k, v in vocab.items()
    ):
        raise ValueError(f"{path} must map pieces (strings) to ids (non-negative integers)")
    if len(set(vocab.values())) != len(vocab):
        raise ValueError(f"{path} gives the same id to several pieces")
    return vocab


def sampled(processor: spm.SentencePieceProcessor, text: str, alpha: float) -> list[str]:
    """The pieces of `text`: the most probable segmentation when `alpha` is 0, else one drawn from all of them
    with probabilities ∝ P(segmentation)^alpha (subword regularisation, Kudo 2018; a smaller alpha spreads the
    draw over more segmentations). Seed the draw with `sentencepiece.set_random_generator_seed`."""
    if alpha <= 0:
        return processor.encode(text, out_type=str)
    return processor.encode(text, out_type=str, enable_sampling=True, alpha=alpha, nbest_size=-1)
