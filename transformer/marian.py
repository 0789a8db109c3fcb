"""opus-mt (Marian) models in the Hugging Face layout, both ways: `load_marian` imports one into our model, and
`to_marian` exports one of ours as a `transformers` MarianMTModel with the same function.

Marian is a post-norm Transformer with scaled embeddings, [sin | cos] sinusoidal positions and a bias on the logits.
Two tables say how its config.json and its weights are named against ours, and both directions read them:
`CONFIG` (with `FIXED`, our fields Marian has no key for) and the weight names (`LAYER_PARTS`, `WEIGHTS`).

Loading never unpickles anything: weights come from safetensors or, for repos that only ship `pytorch_model.bin`,
from `torch.load(weights_only=True)`, which refuses every pickled object that is not a tensor.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open

from .checkpoint import Checkpoint, CheckpointError, check_vocabulary, fill_model, load_weights, read_json
from .decoding import banned_tokens
from .model import Transformer, TransformerConfig
from .tokenizer import Tokenizer

# --------------------------------------------------------------------------------------------------------
# The config: one table for both directions
# --------------------------------------------------------------------------------------------------------

REQUIRED = object()  # a key an import cannot do without


@dataclass(frozen=True)
class Field:
    """One field of our config and the key(s) of Marian's config.json that hold it."""

    ours: str
    keys: tuple[str, ...]  # two where Marian has one for the encoder and one for the decoder; they must agree
    default: Any = REQUIRED  # what an import takes where config.json has no such key (None: config_from_marian)
    spelling: Mapping[str, str] | None = None  # our value -> Marian's, where they name it differently


CONFIG = (
    Field("src_vocab_size", ("vocab_size",)),
    Field("tgt_vocab_size", ("decoder_vocab_size",), default=None),  # None: the source vocabulary's size
    Field("share_embeddings", ("share_encoder_decoder_embeddings",), default=True),
    Field("tie_output", ("tie_word_embeddings",), default=True),
    Field("d_model", ("d_model",)),
    Field("n_heads", ("encoder_attention_heads", "decoder_attention_heads")),
    Field("n_encoder_layers", ("encoder_layers",)),
    Field("n_decoder_layers", ("decoder_layers",)),
    Field("d_ff", ("encoder_ffn_dim", "decoder_ffn_dim")),
    Field("activation", ("activation_function",), spelling={"relu": "relu", "gelu": "gelu", "silu": "swish"}),
    Field("max_positions", ("max_position_embeddings",), default=512),
    Field("scale_embedding", ("scale_embedding",), default=True),
    Field("dropout", ("dropout",), default=0.1),
    Field("attention_dropout", ("attention_dropout",), default=0.0),
    Field("activation_dropout", ("activation_dropout",), default=0.0),
    Field("pad_id", ("pad_token_id",)),
    Field("eos_id", ("eos_token_id",)),
    Field("decoder_start_id", ("decoder_start_token_id",), default=None),  # None: <pad>, where Marian starts
)

# Our fields Marian has no key for: first the value every Marian model has (an import's), then any other value an
# export can rewrite into it. Paper-style interleaved sinusoids are the same encoding with the dimensions in another
# order (see `marian_order`); a model without a bias on the logits has a zero one.
FIXED: dict[str, tuple] = {
    "norm_position": ("post",),
    "positional_encoding": ("sinusoidal_concat", "sinusoidal_interleaved"),
    "positional_base": (10000.0,),
    "layer_norm_eps": (1e-5,),
    "final_logits_bias": (True, False),
}
MARIAN_FIXED = {name: allowed[0] for name, allowed in FIXED.items()}  # what every imported model has

# Keys of other tools' Marian configs (transformers' has no such switch) that ask for a pre-norm model.
PRE_NORM_KEYS = ("normalize_before", "normalize_embedding")


def config_from_marian(hf: dict, source: Path) -> TransformerConfig:
    """Our config of a Marian `config.json` (`hf`, read from the folder `source`)."""
    if hf.get("model_type") != "marian":
        raise CheckpointError(f"{source}: not a Marian model (model_type={hf.get('model_type')!r})")
    if any(hf.get(key) for key in PRE_NORM_KEYS):
        raise CheckpointError(f"{source}: pre-norm Marian variants are not supported")
    values = {field.ours: marian_value(hf, field, source) for field in CONFIG}
    if values["share_embeddings"] or values["tgt_vocab_size"] is None:  # one vocabulary: the source's
        values["tgt_vocab_size"] = values["src_vocab_size"]
    if values["decoder_start_id"] is None:
        values["decoder_start_id"] = values["pad_id"]
    try:
        return TransformerConfig(**values, **MARIAN_FIXED)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{source}: impossible model sizes in config.json ({error})") from None


# What a model may cost before anything of it is allocated (a config is only numbers: a hostile one asked for 10⁷
# positions, 15.6 s of CPU and 4.1 GB to build its table, or a vocabulary of 2³¹, which crashed the allocation). The
# largest opus-mt models (the "big" ones) have about 240 million parameters and 1,024 positions.
MAX_PARAMETERS = 600_000_000
MAX_POSITIONS = 4096


def parameter_count(config: TransformerConfig) -> int:
    """The numbers a model of `config` holds, weights and position table, counted from its sizes alone."""
    d, ff = config.d_model, config.d_ff
    attention, norm, ffn = 4 * d * d + 4 * d, 2 * d, 2 * d * ff + d + ff
    encoder = config.n_encoder_layers * (attention + ffn + 2 * norm)
    decoder = config.n_decoder_layers * (2 * attention + ffn + 3 * norm)
    embeddings = config.src_vocab_size * d + (0 if config.share_embeddings else config.tgt_vocab_size * d)
    output = (0 if config.tie_output else config.tgt_vocab_size * d) + config.tgt_vocab_size
    return encoder + decoder + embeddings + output + 2 * config.max_positions * d  # a position table per side


def check_budget(config: TransformerConfig, source: Path | str) -> None:
    """Refuse a model larger than this server takes (`MAX_PARAMETERS`, `MAX_POSITIONS`), before it is built."""
    if config.max_positions > MAX_POSITIONS:
        raise CheckpointError(
            f"{source}: {config.max_positions:,} positions is more than this server takes ({MAX_POSITIONS:,})"
        )
    count = parameter_count(config)
    if count > MAX_PARAMETERS:
        raise CheckpointError(
            f"{source}: a model of {count:,} parameters is larger than this server takes ({MAX_PARAMETERS:,})"
        )


def check_stored_shapes(folder: Path, config: TransformerConfig) -> None:
    """The weights file's own shapes, read from its header without reading a weight: they must hold no more numbers
    than the budget, and the embeddings must be the config's vocabulary × d_model (a config that lies about its
    sizes is caught before the model is built). A pytorch_model.bin, whose shapes cannot be read without loading
    it, must be no larger than the budget's bytes."""
    safetensors = folder / "model.safetensors"
    if not safetensors.is_file():
        weights = folder / "pytorch_model.bin"
        if weights.is_file() and weights.stat().st_size > 4 * MAX_PARAMETERS + (1 << 20):
            raise CheckpointError(f"{weights}: a weights file larger than this server takes")
        return
    try:
        with safe_open(safetensors, framework="pt") as stored:
            shapes = {name: tuple(stored.get_slice(name).get_shape()) for name in stored.keys()}  # noqa: SIM118
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        raise CheckpointError(f"{safetensors}: the weights file is corrupted or truncated ({error})") from None
    if sum(math.prod(shape) for shape in shapes.values()) > MAX_PARAMETERS:
        raise CheckpointError(f"{safetensors}: weights larger than this server takes ({MAX_PARAMETERS:,} numbers)")
    for theirs in ("model.shared.weight", "model.encoder.embed_tokens.weight"):  # the source's embedding
        if theirs in shapes and shapes[theirs] != (config.src_vocab_size, config.d_model):
            raise CheckpointError(
                f"{folder}: weight {theirs} has shape {shapes[theirs]}, config.json says "
                f"({config.src_vocab_size}, {config.d_model})"
            )


def marian_value(hf: dict, field: Field, source: Path) -> Any:
    """The value of one field in a Marian `config.json`, checked and spelled as ours."""
    found = [hf.get(key, field.default) for key in field.keys]
    for key, value in zip(field.keys, found, strict=True):
        if value is REQUIRED:
            raise CheckpointError(f"{source}: config.json has no {key!r}; is this a Marian model?")
    if len(set(found)) > 1:
        listed = " and ".join(f"{key} {value!r}" for key, value in zip(field.keys, found, strict=True))
        raise CheckpointError(f"{source}: {listed} differ; our model has one {field.ours} for both")
    value = found[0]
    if field.spelling is None:
        return value
    ours = {theirs: mine for mine, theirs in field.spelling.items()} | {mine: mine for mine in field.spelling}
    if value not in ours:  # transformers reads both its own names ("swish") and ours ("silu")
        raise CheckpointError(f"{source}: unsupported {field.keys[0]} {value!r}")
    return ours[value]


def config_to_marian(config: TransformerConfig) -> dict:
    """The keyword arguments of a `transformers` MarianConfig with our config's function.

    Raises ValueError for a model Marian cannot express (pre-norm, learned positions, other sinusoids or epsilon)."""
    for name, allowed in FIXED.items():
        if getattr(config, name) not in allowed:
            raise ValueError(
                "Marian is post-norm with sinusoidal positions (base 10000) and LayerNorm epsilon 1e-5; "
                f"this model has {name}={getattr(config, name)!r}"
            )
    values = {}
    for field in CONFIG:
        value = getattr(config, field.ours)
        values |= dict.fromkeys(field.keys, field.spelling[value] if field.spelling else value)
    return values


def opus_mt_config(vocab_size: int, **sizes: Any) -> TransformerConfig:
    """Our config of an opus-mt model with one vocabulary of `vocab_size` pieces and the given `sizes` (our field
    names: d_model, n_heads, n_encoder_layers, …): what an import of its config.json gives. As in every opus-mt
    model, `</s>` is id 0, `<pad>` the last id and the decoder's start, the activation SiLU (Marian's swish), and
    the fields the table gives a default take it."""
    pad = vocab_size - 1
    opus_mt = {field.ours: field.default for field in CONFIG if field.default not in (REQUIRED, None)}
    values = opus_mt | {"activation": "silu", "src_vocab_size": vocab_size, "tgt_vocab_size": vocab_size}
    values |= {"pad_id": pad, "eos_id": 0, "decoder_start_id": pad}
    return TransformerConfig(**(values | MARIAN_FIXED | sizes))


# --------------------------------------------------------------------------------------------------------
# The weights: one map of names for both directions
# --------------------------------------------------------------------------------------------------------

# The parts of a layer: Marian's under model.{encoder,decoder}.layers.{i}., ours under {encoder,decoder}_layers.{i}.
LAYER_PARTS = (
    ("self_attn.", "self_attn."),
    ("self_attn_layer_norm.", "self_attn_residual.norm."),
    ("encoder_attn.", "cross_attn."),
    ("encoder_attn_layer_norm.", "cross_attn_residual.norm."),
    ("fc1.", "ffn.fc1."),
    ("fc2.", "ffn.fc2."),
    ("final_layer_norm.", "ffn_residual.norm."),
)
MARIAN_LAYER = re.compile(r"model\.(encoder|decoder)\.layers\.(\d+)\.(.+)")

# The weights outside the layers. Marian stores the shared embedding under several names (model.shared, the
# encoder's embed_tokens and, in older repos, the decoder's): an import reads the first one listed that it finds.
WEIGHTS = (
    ("model.shared.weight", "src_embed.tokens.weight"),
    ("model.encoder.embed_tokens.weight", "src_embed.tokens.weight"),
    ("model.decoder.embed_tokens.weight", "tgt_embed.tokens.weight"),
    ("lm_head.weight", "output_proj.weight"),
    ("final_logits_bias", "logits_bias"),  # (1, V) in Marian, (V,) in ours
)


def our_name(theirs: str) -> str | None:
    """Our name of one of Marian's weights; None for its positions (ours are computed) and names we do not know."""
    if match := MARIAN_LAYER.fullmatch(theirs):
        stack, index, part = match.groups()
        for their_part, our_part in LAYER_PARTS:
            if part.startswith(their_part):
                return f"{stack}_layers.{index}.{our_part}{part.removeprefix(their_part)}"
        return None
    return dict(WEIGHTS).get(theirs)


def tied_away(ours: str, config: TransformerConfig) -> bool:
    """Whether this weight of ours is, in this config, another one under a second name (the ties of §3.4)."""
    return (ours == "tgt_embed.tokens.weight" and config.share_embeddings) or (
        ours == "output_proj.weight" and config.tie_output
    )


def weights_from_marian(
    state: dict[str, torch.Tensor], config: TransformerConfig, source: Path
) -> dict[str, torch.Tensor]:
    """A Marian state dict under our names, each tied tensor once (the config's ties decide which names count)."""
    ours: dict[str, torch.Tensor] = {}
    for theirs, tensor in state.items():
        if MARIAN_LAYER.fullmatch(theirs):
            if (mine := our_name(theirs)) is None:
                raise CheckpointError(f"{source}: unexpected weight {theirs}")
            ours[mine] = tensor
    for theirs, mine in WEIGHTS:
        if theirs in state and not tied_away(mine, config):
            ours.setdefault(mine, state[theirs])
    bias = ours.get("logits_bias")
    zeros = torch.zeros(config.tgt_vocab_size, device="cpu")  # as the weights: read to the CPU, then moved
    ours["logits_bias"] = bias.reshape(-1) if bias is not None else zeros
    for _, mine in WEIGHTS:
        if mine not in ours and not tied_away(mine, config):
            names = " or ".join(theirs for theirs, ours_too in WEIGHTS if ours_too == mine)
            raise CheckpointError(f"{source}: no {names} in the weights")
    return ours


def marian_order(config: TransformerConfig, device: torch.device | str = "cpu") -> torch.Tensor:
    """Marian's order of the model dimensions as indices into ours (on `device`, the weights'). Our interleaved
    sinusoids (sin, cos, sin, …) are Marian's [sin | cos] with dimension 2i at i and 2i+1 at d/2 + i; every other
    layout is Marian's already."""
    d = config.d_model
    if config.positional_encoding == "sinusoidal_interleaved":
        return torch.cat([torch.arange(0, d, 2, device=device), torch.arange(1, d, 2, device=device)])
    return torch.arange(d, device=device)


# Weights that read the residual stream (its dimensions are their columns) and those that write it (their rows).
READS_RESIDUAL = (
    ".q_proj.weight",
    ".k_proj.weight",
    ".v_proj.weight",
    ".fc1.weight",
    "tokens.weight",
    "output_proj.weight",
)
WRITES_RESIDUAL = (".out_proj.weight", ".out_proj.bias", ".fc2.weight", ".fc2.bias", ".norm.weight", ".norm.bias")


def weights_to_marian(model: Transformer, expected: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Our weights under Marian's names, for every weight of `expected` (a MarianMTModel's state dict) but its
    positions, with the model dimensions in Marian's order: rewritten that way, every output stays the same."""
    config = model.config
    ours = {name: tensor.detach().float() for name, tensor in model.state_dict().items()}  # ties under each name
    ours.setdefault("output_proj.weight", ours["tgt_embed.tokens.weight"])
    device = ours["tgt_embed.tokens.weight"].device  # the model's
    ours.setdefault("logits_bias", torch.zeros(config.tgt_vocab_size, device=device))
    order = marian_order(config, device)
    state = {}
    for theirs, target in expected.items():
        mine = our_name(theirs)
        if mine is None:
            if "embed_positions" in theirs:  # the sinusoids are computed, not learned
                continue
            raise ValueError(f"MarianMTModel has a weight {theirs} that our model has no name for")
        tensor = ours[mine]
        if mine.endswith(READS_RESIDUAL):
            tensor = tensor[:, order]
        elif mine.endswith(WRITES_RESIDUAL):
            tensor = tensor[order]
        state[theirs] = tensor.reshape(target.shape)
    return state


# --------------------------------------------------------------------------------------------------------
# Import: a Marian folder -> our Checkpoint
# --------------------------------------------------------------------------------------------------------


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
    config = config_from_marian(hf, folder)
    check_budget(config, folder)  # before anything of the model is read or built
    try:
        separate = not config.share_embeddings and (folder / "target_vocab.json").is_file()
        tokenizer = Tokenizer.from_files(
            folder / "source.spm",
            folder / "target.spm",
            folder / "vocab.json",
            folder / "target_vocab.json" if separate else None,
        )
    except (FileNotFoundError, ValueError) as error:
        raise CheckpointError(f"{folder}: tokenizer files: {error}") from None
    check_vocabulary(config, tokenizer, folder)
    check_stored_shapes(folder, config)
    model = Transformer.on_cpu(config)
    fill_model(model, weights_from_marian(read_marian_state(folder), config, folder), folder)
    name = hf.get("_name_or_path") or folder.name
    return Checkpoint(model.to(device).eval(), tokenizer, str(name), generation_from_marian(folder, hf))


def generation_from_marian(folder: Path, hf: dict) -> dict:
    """num_beams / max_length / length_penalty from generation_config.json (or config.json)."""
    values = dict(hf)
    if (folder / "generation_config.json").is_file():
        values.update(read_json(folder / "generation_config.json"))
    keys = ("num_beams", "max_length", "length_penalty")
    return {k: values[k] for k in keys if isinstance(values.get(k), int | float)}


# --------------------------------------------------------------------------------------------------------
# Export: our model -> a transformers MarianMTModel
# --------------------------------------------------------------------------------------------------------


def to_marian(model: Transformer):
    """The same model as a `transformers` MarianMTModel (eager attention); needs `transformers` installed.

    Used by the benchmark to run the shipped model in both implementations, and tested to give the same logits.
    Raises ValueError for a model Marian cannot express (see `config_to_marian`).
    """
    from transformers import MarianConfig, MarianMTModel

    hf = MarianMTModel(MarianConfig(**config_to_marian(model.config))).eval()
    hf.load_state_dict(weights_to_marian(model, hf.state_dict()), strict=False)  # all but the computed positions
    hf.set_attn_implementation("eager")
    # Our generation rules: </s> forced at the length limit; padding and a separate BOS never generated.
    config, generation = model.config, hf.generation_config
    generation.decoder_start_token_id, generation.pad_token_id = config.decoder_start_id, config.pad_id
    generation.eos_token_id = generation.forced_eos_token_id = config.eos_id
    generation.bad_words_ids = [[t] for t in banned_tokens(config)]
    return hf
