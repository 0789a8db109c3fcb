"""Our checkpoint format: one folder per model, written by `save_checkpoint` and read by `load_checkpoint`.

    config.json        {"format": "transformer-explorer", "version": 1, "model": {...}, "tokenizer": {...}}
    model.safetensors  the weights (float32, or float16 to halve the size; always loaded as float32)
    source.spm, target.spm (+ vocab.json, target_vocab.json for Marian-style vocabularies)
    MODEL_CARD.md      what the model is, how it was trained, what it scores

An untrained twin (the same architecture and tokenizer with the weights it had before training) is a folder with
`twin.json` (`{"twin_of": "en-de", "seed": 0}`) and a card; its weights are drawn from the seed at load time.

Loading never unpickles anything: the weights come from safetensors. Marian models are imported by
`transformer.marian`, and Hub repos downloaded by `transformer.hub`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .model import Transformer, TransformerConfig
from .tokenizer import Tokenizer

FORMAT = "transformer-explorer"
VERSION = 1
WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
MAX_FILE_BYTES = 9_500_000  # a Hugging Face Space takes files up to 10 MB without Git LFS
CARD = "MODEL_CARD.md"
TWIN = "twin.json"  # an untrained twin's folder holds this instead of config.json and weights


class CheckpointError(Exception):
    """A model could not be loaded, imported or downloaded; the message says which and why."""


@dataclass
class Checkpoint:
    """A loaded model with its tokenizer, ready to translate (the model is in eval mode)."""

    model: Transformer
    tokenizer: Tokenizer
    name: str
    generation: dict = field(default_factory=dict)  # defaults such as num_beams / max_length, when known
    card: str = ""


# --------------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------------


def unique_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with tied tensors (e.g. a shared embedding) stored once, under their first name."""
    state, seen = {}, set()
    for name, tensor in model.state_dict().items():
        if tensor.data_ptr() in seen:
            continue
        seen.add(tensor.data_ptr())
        state[name] = tensor
    return state


def save_checkpoint(
    checkpoint: Checkpoint | None = None,
    folder: str | Path = "",
    *,
    model: Transformer | None = None,
    tokenizer: Tokenizer | None = None,
    card: str | None = None,
    generation: dict | None = None,
    dtype: torch.dtype = torch.float32,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> Path:
    """Write a model and its tokenizer as a checkpoint folder; returns the folder.

    Pass a `Checkpoint`, or `model=` and `tokenizer=`. `dtype=torch.float16` halves the size of the weights;
    weights larger than `max_file_bytes` are split into shards (`model-00001-of-00002.safetensors`, …) listed in
    `model.safetensors.index.json`, so that no file is too big for a Space without Git LFS.
    """
    if checkpoint is not None:
        model, tokenizer = checkpoint.model, checkpoint.tokenizer
        card = checkpoint.card if card is None else card
        generation = checkpoint.generation if generation is None else generation
    if model is None or tokenizer is None:
        raise ValueError("save_checkpoint needs a model and a tokenizer")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = {name: t.detach().to("cpu", dtype).contiguous() for name, t in unique_state_dict(model).items()}
    write_weights(weights, folder, max_file_bytes)
    config = {
        "format": FORMAT,
        "version": VERSION,
        "model": model.config.to_dict(),
        "tokenizer": tokenizer.save(folder),
        "generation": generation or {},
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    if card is not None:
        (folder / CARD).write_text(card)
    return folder


def write_weights(weights: dict[str, torch.Tensor], folder: Path, max_file_bytes: int) -> None:
    """One safetensors file, or shards of at most `max_file_bytes` each plus an index (the Hugging Face layout)."""
    for old in [*folder.glob("model*.safetensors"), folder / WEIGHTS_INDEX]:
        old.unlink(missing_ok=True)
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, tensor in weights.items():
        nbytes = tensor.numel() * tensor.element_size()
        if shards[-1] and size + nbytes > max_file_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = tensor
        size += nbytes
    if len(shards) == 1:
        save_file(weights, folder / WEIGHTS, metadata={"format": FORMAT})
        return
    weight_map = {}
    for i, shard in enumerate(shards, start=1):
        filename = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, folder / filename, metadata={"format": FORMAT})
        weight_map.update(dict.fromkeys(shard, filename))
    (folder / WEIGHTS_INDEX).write_text(json.dumps({"weight_map": weight_map}, indent=1) + "\n")


# --------------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------------


def read_weights(folder: Path) -> dict[str, torch.Tensor]:
    """The weights of a checkpoint folder, from one file or from the shards its index lists."""
    if not (folder / WEIGHTS_INDEX).is_file():
        return load_weights(folder / WEIGHTS)
    weight_map = read_json(folder / WEIGHTS_INDEX).get("weight_map")
    if not isinstance(weight_map, dict):
        raise CheckpointError(f"{folder / WEIGHTS_INDEX}: no weight_map")
    weights: dict[str, torch.Tensor] = {}
    for filename in sorted(set(weight_map.values())):
        if not isinstance(filename, str) or Path(filename).name != filename:
            raise CheckpointError(f"{folder / WEIGHTS_INDEX}: shard {filename!r} must be a plain file name")
        weights.update(load_weights(folder / filename))
    if set(weights) != set(weight_map):
        raise CheckpointError(f"{folder}: the shards do not hold exactly the weights the index lists")
    return weights


def read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent}: missing {path.name}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: not valid JSON ({error})") from None
    except RecursionError:
        raise CheckpointError(f"{path}: not valid JSON (nested too deep)") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    return value


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """Read a safetensors file, turning any corruption or truncation into a CheckpointError."""
    if not path.is_file():
        raise CheckpointError(f"{path.parent}: missing weights file {path.name}")
    try:
        return load_file(path, device="cpu")
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        raise CheckpointError(f"{path}: the weights file is corrupted or truncated ({error})") from None


def fill_model(model: Transformer, weights: dict[str, torch.Tensor], source: Path) -> None:
    """Copy `weights` into `model`, checking names, shapes and values; ties may be stored once."""
    expected = model.state_dict()
    unexpected = sorted(set(weights) - set(expected))
    if unexpected:
        raise CheckpointError(f"{source}: unexpected weights {', '.join(unexpected[:5])}")
    stored_ptrs = {expected[name].data_ptr() for name in weights}
    missing = sorted(name for name, t in expected.items() if name not in weights and t.data_ptr() not in stored_ptrs)
    if missing:
        raise CheckpointError(f"{source}: missing weights {', '.join(missing[:5])}")
    for name, tensor in weights.items():
        if tensor.shape != expected[name].shape:
            needed = tuple(expected[name].shape)
            raise CheckpointError(f"{source}: weight {name} has shape {tuple(tensor.shape)}, the config needs {needed}")
        if tensor.is_floating_point() and not torch.isfinite(tensor).all():
            raise CheckpointError(f"{source}: weight {name} contains NaN or infinite values")
    with torch.no_grad():
        for name, tensor in weights.items():
            expected[name].copy_(tensor.to(expected[name].dtype))


def load_checkpoint(folder: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Load a checkpoint folder written by `save_checkpoint` (or converted from Marian), or an untrained twin
    (a folder with `twin.json`, see `load_twin`)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: no such checkpoint folder")
    if (folder / TWIN).is_file():
        return load_twin(folder, device)
    model_config, tokenizer, generation = read_architecture(folder)
    model = Transformer.on_cpu(model_config)
    fill_model(model, read_weights(folder), folder)
    card = (folder / CARD).read_text(encoding="utf-8") if (folder / CARD).is_file() else ""
    return Checkpoint(model.to(device).eval(), tokenizer, folder.name, generation, card)


def read_architecture(folder: Path) -> tuple[TransformerConfig, Tokenizer, dict]:
    """A checkpoint folder's model config, tokenizer and generation defaults: everything but the weights."""
    config = read_json(folder / "config.json")
    if config.get("format") != FORMAT:
        raise CheckpointError(f"{folder}: config.json is not a {FORMAT} checkpoint (format={config.get('format')!r})")
    if config.get("version") != VERSION:
        raise CheckpointError(f"{folder}: unsupported checkpoint version {config.get('version')!r}")
    try:
        model_config = TransformerConfig.from_dict(config.get("model") or {})
        tokenizer = Tokenizer.load(folder, config.get("tokenizer") or {})
    except (TypeError, ValueError, FileNotFoundError) as error:
        raise CheckpointError(f"{folder}: {error}") from None
    check_vocabulary(model_config, tokenizer, folder)
    return model_config, tokenizer, config.get("generation") or {}


def check_vocabulary(config: TransformerConfig, tokenizer: Tokenizer, source: Path) -> None:
    """The tokenizer's ids must fit the model's embeddings and agree on the special tokens."""
    if tokenizer.source.size > config.src_vocab_size or tokenizer.target.size > config.tgt_vocab_size:
        raise CheckpointError(
            f"{source}: tokenizer vocabularies ({tokenizer.source.size}/{tokenizer.target.size}) are larger than "
            f"the model's ({config.src_vocab_size}/{config.tgt_vocab_size})"
        )
    if (tokenizer.pad_id, tokenizer.eos_id) != (config.pad_id, config.eos_id):
        raise CheckpointError(
            f"{source}: tokenizer (pad {tokenizer.pad_id}, eos {tokenizer.eos_id}) and model "
            f"(pad {config.pad_id}, eos {config.eos_id}) disagree on the special tokens"
        )


# --------------------------------------------------------------------------------------------------------
# Untrained twins
# --------------------------------------------------------------------------------------------------------


def untrained_model(config: TransformerConfig, seed: int) -> Transformer:
    """A model with freshly initialised weights, the same bits on every machine for the same config and seed.

    The rules are the model's own (`Transformer.init_rule`: Xavier-uniform matrices, N(0, d_model^-0.5)
    embeddings, unit LayerNorms, zero biases), but the numbers come from NumPy's PCG64 generator in float64,
    rounded to float32: PyTorch's own random kernels give other bits on CPUs with and without AVX2.
    """
    with torch.random.fork_rng(devices=[]):  # the model's own initialisation is overwritten: leave no trace of it
        model = Transformer.on_cpu(config).eval()
    rng = np.random.Generator(np.random.PCG64(seed))
    with torch.no_grad():
        for name, p in model.named_parameters():
            rule, value = model.init_rule(name, p)
            if rule == "normal":
                values = rng.standard_normal(p.shape) * value
            elif rule == "uniform":
                values = rng.uniform(-value, value, p.shape)
            else:
                values = np.full(p.shape, value)
            p.copy_(torch.from_numpy(values.astype(np.float32)))
    return model


def load_twin(folder: Path, device: str | torch.device = "cpu") -> Checkpoint:
    """An untrained twin: the architecture and tokenizer of a sibling checkpoint, with freshly initialised weights.

    `twin.json` names the checkpoint (`{"twin_of": "en-de", "seed": 0}`, a folder next to this one); the weights
    are drawn at load time from the recorded seed (`untrained_model`), so a twin costs no disk.
    """
    spec = read_json(folder / TWIN)
    name, seed = spec.get("twin_of"), spec.get("seed")
    if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+", name) or name in (".", ".."):
        raise CheckpointError(f"{folder}: twin.json must name a checkpoint folder next to it, got {name!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise CheckpointError(f"{folder}: twin.json needs an integer seed, got {seed!r}")
    base = folder.parent / name
    if (base / TWIN).is_file():
        raise CheckpointError(f"{folder}: {name} is itself a twin")
    if not base.is_dir():
        raise CheckpointError(f"{base}: no such checkpoint folder")
    config, tokenizer, generation = read_architecture(base)  # the base's weights are never read
    model = untrained_model(config, seed)
    card = (folder / CARD).read_text(encoding="utf-8") if (folder / CARD).is_file() else ""
    return Checkpoint(model.to(device), tokenizer, folder.name, generation, card)


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


# --------------------------------------------------------------------------------------------------------
# Averaged snapshots
# --------------------------------------------------------------------------------------------------------


def average_snapshots(base: Checkpoint, snapshots: list[Path]) -> Checkpoint:
    """`base` (architecture, tokenizer) with the element-wise mean of the weights in `snapshots` (§6.1).

    The snapshots are the safetensors files a training run keeps (`runs/NAME/snapshots/`), of the same model.
    """
    if not snapshots:
        raise ValueError("no snapshots to average")
    total: dict[str, torch.Tensor] = {}
    for path in snapshots:
        for name, tensor in load_weights(path).items():
            total[name] = total[name] + tensor.double() if name in total else tensor.double()
    model = Transformer.on_cpu(base.model.config).eval()
    fill_model(model, {name: (t / len(snapshots)).float() for name, t in total.items()}, snapshots[0].parent)
    steps = ", ".join(p.stem.removeprefix("step-").lstrip("0") or "0" for p in snapshots)
    card = f"# {base.name}\n\nThe average of the weights at steps {steps} (`python -m transformer.convert average`).\n"
    return Checkpoint(model, base.tokenizer, base.name, base.generation, card)
