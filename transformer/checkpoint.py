"""One checkpoint format, the import of opus-mt (Marian) models, and downloads from the Hugging Face Hub.

Our checkpoint is a folder:

    config.json        {"format": "transformer-explorer", "version": 1, "model": {...}, "tokenizer": {...}}
    model.safetensors  the weights (float32, or float16 to halve the size; always loaded as float32)
    source.spm, target.spm (+ vocab.json, target_vocab.json for Marian-style vocabularies)
    MODEL_CARD.md      what the model is, how it was trained, what it scores

An untrained twin (the same architecture and tokenizer with the weights it had before training) is a folder with
`twin.json` (`{"twin_of": "en-de", "seed": 0}`) and a card; its weights are drawn from the seed at load time.

Loading never unpickles anything: weights come from safetensors, or, for Hub repos that only ship
`pytorch_model.bin`, from `torch.load(weights_only=True)`, which refuses every pickled object that is not a tensor.
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
# Our own format
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
    model = Transformer(model_config)
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


def untrained_model(config: TransformerConfig, seed: int) -> Transformer:
    """A model with freshly initialised weights, the same bits on every machine for the same config and seed.

    The rules are the model's own (`Transformer.init_rule`: Xavier-uniform matrices, N(0, d_model^-0.5)
    embeddings, unit LayerNorms, zero biases), but the numbers come from NumPy's PCG64 generator in float64,
    rounded to float32: PyTorch's own random kernels give other bits on CPUs with and without AVX2.
    """
    with torch.random.fork_rng(devices=[]):  # the model's own initialisation is overwritten: leave no trace of it
        model = Transformer(config).eval()
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
# opus-mt (Marian) models in the Hugging Face layout
# --------------------------------------------------------------------------------------------------------

MARIAN_ACTIVATIONS = {"swish": "silu", "silu": "silu", "gelu": "gelu", "relu": "relu"}

# Hugging Face names -> ours, for the parts of a layer (the layer prefix is mapped separately).
MARIAN_LAYER_KEYS = {
    "self_attn.": "self_attn.",
    "self_attn_layer_norm.": "self_attn_residual.norm.",
    "encoder_attn.": "cross_attn.",
    "encoder_attn_layer_norm.": "cross_attn_residual.norm.",
    "fc1.": "ffn.fc1.",
    "fc2.": "ffn.fc2.",
    "final_layer_norm.": "ffn_residual.norm.",
}


def marian_config(hf: dict, source: Path) -> TransformerConfig:
    """Translate a Marian `config.json` into our config: post-norm, scaled embeddings, [sin | cos] positions."""

    def get(key: str):
        if key not in hf:
            raise CheckpointError(f"{source}: config.json has no {key!r}; is this a Marian model?")
        return hf[key]

    if hf.get("model_type") != "marian":
        raise CheckpointError(f"{source}: not a Marian model (model_type={hf.get('model_type')!r})")
    if get("encoder_attention_heads") != get("decoder_attention_heads"):
        raise CheckpointError(f"{source}: different head counts in encoder and decoder are not supported")
    if get("encoder_ffn_dim") != get("decoder_ffn_dim"):
        raise CheckpointError(f"{source}: different FFN sizes in encoder and decoder are not supported")
    activation = MARIAN_ACTIVATIONS.get(get("activation_function"))
    if activation is None:
        raise CheckpointError(f"{source}: unsupported activation {hf['activation_function']!r}")
    if hf.get("normalize_before") or hf.get("normalize_embedding"):
        raise CheckpointError(f"{source}: pre-norm Marian variants are not supported")
    shared = hf.get("share_encoder_decoder_embeddings", True)
    vocab_size = get("vocab_size")
    try:
        return TransformerConfig(
            src_vocab_size=vocab_size,
            tgt_vocab_size=vocab_size if shared else (hf.get("decoder_vocab_size") or vocab_size),
            d_model=get("d_model"),
            n_heads=get("encoder_attention_heads"),
            n_encoder_layers=get("encoder_layers"),
            n_decoder_layers=get("decoder_layers"),
            d_ff=get("encoder_ffn_dim"),
            activation=activation,
            norm_position="post",
            positional_encoding="sinusoidal_concat",
            max_positions=hf.get("max_position_embeddings", 512),
            scale_embedding=hf.get("scale_embedding", True),
            share_embeddings=shared,
            tie_output=hf.get("tie_word_embeddings", True),
            final_logits_bias=True,
            dropout=hf.get("dropout", 0.1),
            attention_dropout=hf.get("attention_dropout", 0.0),
            activation_dropout=hf.get("activation_dropout", 0.0),
            layer_norm_eps=1e-5,
            pad_id=get("pad_token_id"),
            eos_id=get("eos_token_id"),
            decoder_start_id=hf.get("decoder_start_token_id", hf["pad_token_id"]),
        )
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{source}: impossible model sizes in config.json ({error})") from None


def marian_weights(state: dict[str, torch.Tensor], config: TransformerConfig, source: Path) -> dict[str, torch.Tensor]:
    """Rename a Marian state dict to ours, resolving the ties (see MARIAN.md: older repos store more keys)."""
    ours: dict[str, torch.Tensor] = {}
    layer_key = re.compile(r"model\.(encoder|decoder)\.layers\.(\d+)\.(.+)")
    for name, tensor in state.items():
        if match := layer_key.fullmatch(name):
            stack, index, rest = match.groups()
            for theirs, mine in MARIAN_LAYER_KEYS.items():
                if rest.startswith(theirs):
                    ours[f"{stack}_layers.{index}.{mine}{rest[len(theirs) :]}"] = tensor
                    break
            else:
                raise CheckpointError(f"{source}: unexpected weight {name}")

    src_embed = state.get("model.shared.weight", state.get("model.encoder.embed_tokens.weight"))
    if src_embed is None:
        raise CheckpointError(f"{source}: no token embeddings (model.shared.weight) in the weights")
    ours["src_embed.tokens.weight"] = src_embed
    if not config.share_embeddings:
        tgt_embed = state.get("model.decoder.embed_tokens.weight")
        if tgt_embed is None:
            raise CheckpointError(f"{source}: separate vocabularies but no model.decoder.embed_tokens.weight")
        ours["tgt_embed.tokens.weight"] = tgt_embed
    if not config.tie_output:
        if "lm_head.weight" not in state:
            raise CheckpointError(f"{source}: untied output projection but no lm_head.weight")
        ours["output_proj.weight"] = state["lm_head.weight"]
    bias = state.get("final_logits_bias")
    ours["logits_bias"] = bias.reshape(-1) if bias is not None else torch.zeros(config.tgt_vocab_size)
    return ours


def read_marian_state(folder: Path) -> dict[str, torch.Tensor]:
    """model.safetensors, else pytorch_model.bin through the tensors-only unpickler."""
    if (folder / "model.safetensors").is_file():
        return load_weights(folder / "model.safetensors")
    path = folder / "pytorch_model.bin"
    if not path.is_file():
        raise CheckpointError(f"{folder}: no model.safetensors or pytorch_model.bin")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # UnpicklingError for payloads, RuntimeError/EOFError for damage
        raise CheckpointError(
            f"{path}: refused to load ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); "
            "only plain tensors are accepted"
        ) from None
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise CheckpointError(f"{path}: expected a dict of tensors")
    return state


def load_marian(folder: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Import an opus-mt model saved in the Hugging Face layout (e.g. by `save_pretrained`) into our model."""
    folder = Path(folder)
    hf = read_json(folder / "config.json")
    config = marian_config(hf, folder)
    try:
        shared = config.share_embeddings
        tokenizer = Tokenizer.from_files(
            folder / "source.spm",
            folder / "target.spm",
            folder / "vocab.json",
            None if shared or not (folder / "target_vocab.json").is_file() else folder / "target_vocab.json",
        )
    except (FileNotFoundError, ValueError) as error:
        raise CheckpointError(f"{folder}: tokenizer files: {error}") from None
    check_vocabulary(config, tokenizer, folder)
    model = Transformer(config)
    fill_model(model, marian_weights(read_marian_state(folder), config, folder), folder)
    generation = marian_generation_defaults(folder, hf)
    name = hf.get("_name_or_path") or folder.name
    return Checkpoint(model.to(device).eval(), tokenizer, str(name), generation)


def marian_generation_defaults(folder: Path, hf: dict) -> dict:
    """num_beams / max_length / length_penalty from generation_config.json (or config.json)."""
    values = dict(hf)
    if (folder / "generation_config.json").is_file():
        values.update(read_json(folder / "generation_config.json"))
    keys = ("num_beams", "max_length", "length_penalty")
    return {k: values[k] for k in keys if isinstance(values.get(k), int | float)}


# --------------------------------------------------------------------------------------------------------
# The Hugging Face Hub
# --------------------------------------------------------------------------------------------------------

MARIAN_FILES = ["config.json", "generation_config.json", "source.spm", "target.spm", "vocab.json", "target_vocab.json"]


def download_marian(repo_id: str, *, revision: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """Fetch an opus-mt repo (e.g. "Helsinki-NLP/opus-mt-en-de") into the standard Hugging Face cache.

    Only the files a Marian model needs are downloaded: model.safetensors when the repo has it,
    pytorch_model.bin otherwise. Offline (or with HF_HUB_OFFLINE=1), a model already in the cache is used.
    Raises CheckpointError naming the repo and the cause.
    """
    from huggingface_hub import errors as hub_errors
    from huggingface_hub import hf_hub_download, snapshot_download
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except hub_errors.HFValidationError as error:
        raise CheckpointError(f"{repo_id!r} is not a valid Hub repo id ({error})") from None

    try:
        folder = Path(
            snapshot_download(
                repo_id,
                revision=revision,
                cache_dir=cache_dir,
                allow_patterns=MARIAN_FILES + ["model.safetensors"],
            )
        )
        if not (folder / "config.json").is_file():
            raise CheckpointError(f"{repo_id}: the repo has no config.json; it is not a Marian model")
        if not (folder / "model.safetensors").is_file():
            hf_hub_download(repo_id, "pytorch_model.bin", revision=revision, cache_dir=cache_dir)
    except CheckpointError:
        raise
    # (LocalEntryNotFoundError is a subclass of EntryNotFoundError: it must come first)
    except (hub_errors.LocalEntryNotFoundError, hub_errors.OfflineModeIsEnabled):
        raise CheckpointError(
            f"{repo_id}: cannot download it (no connection to the Hugging Face Hub, or HF_HUB_OFFLINE=1) "
            "and it is not in the local cache"
        ) from None
    except (hub_errors.RepositoryNotFoundError, hub_errors.GatedRepoError):
        raise CheckpointError(f"{repo_id}: no such model on the Hugging Face Hub (or it is private/gated)") from None
    except hub_errors.RevisionNotFoundError:
        raise CheckpointError(f"{repo_id}: revision {revision!r} not found") from None
    except hub_errors.EntryNotFoundError:
        raise CheckpointError(f"{repo_id}: the repo has no model weights; it is not a Marian model") from None
    except (hub_errors.HfHubHTTPError, OSError) as error:
        raise CheckpointError(f"{repo_id}: download failed ({type(error).__name__}: {error})") from None
    return folder


def load_pretrained(name: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Load a model by folder (ours or Marian's layout) or by Hub repo id."""
    path = Path(name)
    if path.is_dir():
        config = read_json(path / "config.json")
        return load_checkpoint(path, device) if config.get("format") == FORMAT else load_marian(path, device)
    checkpoint = load_marian(download_marian(str(name)), device)
    checkpoint.name = str(name)
    return checkpoint
