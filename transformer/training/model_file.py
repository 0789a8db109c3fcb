"""A model trained in the Train tab as one file to download, and reading such a file back: untrusted input.

The file is a single safetensors file (`.safetensors`): the weights, and in its metadata (text, by safetensors'
design) everything else a model needs, so that nothing in it is ever executed:

    format       "transformer-explorer/trained-model"
    version      "1"
    setup        the training setup (`LiveSetup.to_json`): the task, the model's shape, the recipe and the seed
    config       the model's config (`TransformerConfig.to_dict`), which must be the setup's
    vocabulary   the task's pieces, in the order of their ids (after the special pieces)
    step         the training step the weights are from
    seconds      the seconds of training up to it

Reading it (`read_model_file`) checks, in this order, and says what is wrong in a `ModelFileError`: the size (at
most `MAX_FILE_BYTES`), that it is a safetensors file (never a pickle: no `torch.load`), the metadata, the setup
against the page's limits, the config against the setup, the vocabulary against the task's, and every weight's
name, shape, type and values against the model the config builds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from ..checkpoint import Checkpoint, CheckpointError, fill_model, unique_state_dict
from ..model import Transformer
from .live import LiveSetup

FILE_FORMAT = "transformer-explorer/trained-model"
FILE_VERSION = "1"
MAX_FILE_BYTES = 16 * 2**20  # the largest model the Train tab allows is 6.3 MB in float32
SUFFIX = ".safetensors"


class ModelFileError(ValueError):
    """A model file that cannot be loaded; the message says why and is safe to show."""


@dataclass(frozen=True)
class TrainedModel:
    """A model trained in the Train tab: its setup, its weights and where in its run they are from."""

    setup: LiveSetup
    weights: dict[str, torch.Tensor]
    step: int
    seconds: float

    def checkpoint(self, name: str) -> Checkpoint:
        """The model, ready to explore (in eval mode, on the CPU), with its task's tokenizer."""
        model = Transformer.on_cpu(self.setup.config())
        model.load_state_dict(self.weights)
        model.eval().requires_grad_(False)
        task = self.setup.toy_task
        return Checkpoint(model, task.tokenizer, name, {"max_length": task.positions - 1})

    def file_name(self) -> str:
        """A name for its file, e.g. `reverse-2x4x64-step450.safetensors`."""
        setup = self.setup
        return f"{setup.task}-{setup.layers}x{setup.heads}x{setup.d_model}-step{self.step}{SUFFIX}"

    def to_bytes(self) -> bytes:
        """The model as a safetensors file (tied weights stored once)."""
        model = Transformer.on_cpu(self.setup.config())
        model.load_state_dict(self.weights)
        metadata = {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "setup": self.setup.to_json(),
            "config": json.dumps(self.setup.config().to_dict()),
            "vocabulary": json.dumps(self.setup.toy_task.pieces, ensure_ascii=False),
            "step": str(self.step),
            "seconds": f"{self.seconds:.1f}",
        }
        weights = {name: t.detach().float().contiguous() for name, t in unique_state_dict(model).items()}
        return save_safetensors(weights, metadata=metadata)


def check_size(n_bytes: int) -> None:
    if n_bytes > MAX_FILE_BYTES:
        raise ModelFileError(
            f"the file is {n_bytes / 2**20:.1f} MB: a model trained in this page is at most "
            f"{MAX_FILE_BYTES / 2**20:.0f} MB"
        )


def read_model_path(path: str | Path) -> TrainedModel:
    """`read_model_file` of a file on disk (an upload), its size checked before a byte of it is read."""
    path = Path(path)
    try:
        check_size(path.stat().st_size)
        data = path.read_bytes()
    except OSError as error:
        raise ModelFileError(f"the file cannot be read ({error.strerror})") from None
    return read_model_file(data)


def read_model_file(data: bytes) -> TrainedModel:
    """A downloaded model file back, every part of it checked (see the module's docstring)."""
    check_size(len(data))
    if not data:
        raise ModelFileError("the file is empty")
    metadata = read_metadata(data)
    setup = read_setup(metadata)
    step, seconds = read_number(metadata, "step", int), read_number(metadata, "seconds", float)
    try:
        weights = load_safetensors(data)
    except (SafetensorError, ValueError, RuntimeError) as error:
        raise ModelFileError(f"the weights cannot be read: the file is damaged ({error})") from None
    not_float = sorted(name for name, tensor in weights.items() if tensor.dtype != torch.float32)
    if not_float:
        raise ModelFileError(f"the weight {not_float[0]} is not float32")
    model = Transformer.on_cpu(setup.config())
    stored_once = set(unique_state_dict(model))
    twice = sorted(set(weights) & (set(model.state_dict()) - stored_once))
    if twice:  # tied to another weight: two copies could disagree, and one would silently win
        raise ModelFileError(f"the file stores {twice[0]}, which is tied to another weight: it is stored once")
    try:
        fill_model(model, weights, "the file")
    except CheckpointError as error:
        raise ModelFileError(str(error).removeprefix("the file: ")) from None
    return TrainedModel(setup, model.state_dict(), step, seconds)


def read_metadata(data: bytes) -> dict[str, str]:
    """The safetensors header's metadata, read without reading any weight: the first 8 bytes are the header's
    length, then the header, JSON. Only a file whose header cannot be read is looked at as a pickle (a header's
    length may begin with any byte)."""
    length = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    header, why = None, "its header cannot be read"
    if 0 < length <= len(data) - 8:
        try:
            header = json.loads(data[8 : 8 + length].decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
            why = "its header is not JSON"
    if header is None and looks_like_pickle(data):
        raise ModelFileError(
            "this is a pickle file (torch.save, .pt or .bin): it could run code when read, so models are loaded "
            f"only from safetensors files ({SUFFIX}), such as the Download button gives"
        )
    if header is None:
        raise ModelFileError(f"this is not a safetensors file ({SUFFIX}): {why}")
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(metadata, dict) or metadata.get("format") != FILE_FORMAT:
        raise ModelFileError(
            "this safetensors file is not a model trained in this page's Train tab (its metadata does not say "
            f"format={FILE_FORMAT})"
        )
    if not all(isinstance(value, str) for value in metadata.values()):
        raise ModelFileError("the file's metadata is not all text, as a safetensors file's must be")
    if metadata.get("version") != FILE_VERSION:
        raise ModelFileError(f"the file's version {metadata.get('version', '')[:20]!r} is not one this page reads")
    return metadata


def looks_like_pickle(data: bytes) -> bool:
    """A zip (what torch.save writes) or a pickle: protocol 2 and later begin with 0x80, protocols 0 and 1 with an
    opcode such as "(", "c", "]" or "}"."""
    return data[:2] == b"PK" or data[:1] in (b"\x80", b"(", b"c", b"]", b"}", b"I", b"N")


def read_setup(metadata: dict[str, str]) -> LiveSetup:
    """The file's training setup, within the page's limits, with its config and vocabulary the setup's."""
    try:
        setup = LiveSetup.from_json(metadata.get("setup", ""))
    except (TypeError, ValueError) as error:
        raise ModelFileError(f"the file's training setup is not valid: {error}") from None
    try:
        config = json.loads(metadata.get("config", ""))
    except (ValueError, RecursionError):
        config = None
    if config != setup.config().to_dict():
        raise ModelFileError("the file's model config does not match its training setup")
    try:
        vocabulary = json.loads(metadata.get("vocabulary", ""))
    except (ValueError, RecursionError):
        vocabulary = None
    if vocabulary != list(setup.toy_task.pieces):
        raise ModelFileError(f"the file's vocabulary is not the one of the {setup.task} task")
    return setup


def read_number(metadata: dict[str, str], key: str, kind: type) -> int | float:
    try:
        value = kind(metadata.get(key, ""))
    except ValueError:
        value = -1
    if not 0 <= value < 10**9:
        raise ModelFileError(f"the file's {key} is not a valid number")
    return value
