"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), written to be read.

The file follows the paper from top to bottom:

    config -> scaled dot-product attention (§3.2.1) -> multi-head attention (§3.2.2)
    -> position-wise feed-forward (§3.3) -> embeddings (§3.4) and positional encoding (§3.5)
    -> encoder layer / decoder layer (§3.1) -> encoder / decoder stacks -> Transformer

Every variant a learner meets in the classic write-ups is a config switch, so the explorer can put them
side by side: post-norm (the paper) or pre-norm (modern code), interleaved or concatenated sinusoids or
learned positions, ReLU / GELU / SiLU, shared or separate vocabularies, tied or separate output projection.

Shape letters used in the comments:
    B  batch size                 H    number of heads
    S  source length              d    d_model
    T  target length              d_k  d_model / H (size of one head)
    Q  number of queries          K    number of keys
    V  vocabulary size            F    d_ff (inner size of the feed-forward network)

Mask convention (one for the whole library): a mask is a boolean tensor that broadcasts to the attention
scores (B, H, Q, K) and is **True where the query may attend to the key**. False entries get exactly zero
weight. (`torch.nn.Transformer` uses the opposite convention for boolean masks: True there means "blocked".)

Everything that can change per request — whether to return attention weights, and the `ModelSwitches`: the causal
and padding masks, the positional encodings, which heads are silenced — is an argument of the forward pass, never
state on a module: in a web app several users run the same read-only model at once.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor, nn

Activation = Literal["relu", "gelu", "silu"]
NormPosition = Literal["post", "pre"]
PositionKind = Literal["sinusoidal_interleaved", "sinusoidal_concat", "learned"]
Family = Literal["encoder", "decoder_self", "cross"]

ATTENTION_FAMILIES: tuple[str, ...] = ("encoder", "decoder_self", "cross")
"""The three kinds of attention: encoder self-attention, decoder (masked) self-attention, cross-attention."""

HeadRef = tuple[str, int, int]
"""A head to silence: (attention family, layer index, head index), all counted from 0."""


# --------------------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransformerConfig:
    """Every size and switch of the model. Frozen: change it with `dataclasses.replace`."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512
    n_heads: int = 8
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    d_ff: int = 2048
    activation: Activation = "relu"
    norm_position: NormPosition = "post"
    positional_encoding: PositionKind = "sinusoidal_interleaved"
    max_positions: int = 512
    positional_base: float = 10000.0
    scale_embedding: bool = True  # multiply token embeddings by sqrt(d_model) (§3.4)
    share_embeddings: bool = False  # one embedding matrix for source and target (needs one vocabulary)
    tie_output: bool = True  # output projection = target embedding matrix (§3.4)
    final_logits_bias: bool = False  # a learned bias on the logits (Marian has one)
    dropout: float = 0.1  # residual dropout (§5.4): on embeddings + positions and on every sub-layer output
    attention_dropout: float = 0.0  # on the attention weights
    activation_dropout: float = 0.0  # inside the feed-forward network, after the activation
    layer_norm_eps: float = 1e-5
    init: Literal["xavier", "normal"] = "xavier"
    init_std: float = 0.02  # for init="normal"
    pad_id: int = 0
    eos_id: int = 2
    decoder_start_id: int = 1  # the token the decoder starts from (BOS; Marian uses <pad>)

    def __post_init__(self) -> None:
        def require(condition: bool, message: str) -> None:
            if not condition:
                raise ValueError(f"Invalid TransformerConfig: {message}")

        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_positions"):
            value = getattr(self, name)
            require(isinstance(value, int) and value > 0, f"{name} must be a positive integer, got {value!r}")
        for name in ("n_encoder_layers", "n_decoder_layers"):
            value = getattr(self, name)
            require(isinstance(value, int) and value >= 0, f"{name} must be an integer >= 0, got {value!r}")
        require(
            self.d_model % self.n_heads == 0, f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
        )
        require(self.d_model % 2 == 0, f"d_model must be even for sinusoidal positions, got {self.d_model}")
        require(self.activation in ("relu", "gelu", "silu"), f"unknown activation {self.activation!r}")
        require(
            self.norm_position in ("post", "pre"), f"norm_position must be 'post' or 'pre', got {self.norm_position!r}"
        )
        require(
            self.positional_encoding in ("sinusoidal_interleaved", "sinusoidal_concat", "learned"),
            f"unknown positional_encoding {self.positional_encoding!r}",
        )
        require(self.init in ("xavier", "normal"), f"init must be 'xavier' or 'normal', got {self.init!r}")
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            value = getattr(self, name)
            require(0.0 <= value < 1.0, f"{name} must be in [0, 1), got {value!r}")
        require(self.positional_base > 1.0, f"positional_base must be > 1, got {self.positional_base!r}")
        require(self.layer_norm_eps > 0, f"layer_norm_eps must be > 0, got {self.layer_norm_eps!r}")
        require(
            not self.share_embeddings or self.src_vocab_size == self.tgt_vocab_size,
            "share_embeddings needs src_vocab_size == tgt_vocab_size",
        )
        for name in ("pad_id", "eos_id", "decoder_start_id"):
            value = getattr(self, name)
            require(
                isinstance(value, int) and 0 <= value < min(self.src_vocab_size, self.tgt_vocab_size),
                f"{name}={value!r} is outside the vocabulary",
            )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def n_layers(self, family: str) -> int:
        """How many layers have attention of this family."""
        return self.n_encoder_layers if family == "encoder" else self.n_decoder_layers

    def same_architecture(self, other: TransformerConfig) -> bool:
        """Equal but for the dropout rates, which only act in training (a model may be trained on with others)."""
        no_dropout = {"dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0}
        return dataclasses.replace(self, **no_dropout) == dataclasses.replace(other, **no_dropout)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> TransformerConfig:
        """Build a config from a dict (e.g. `config.json`); unknown keys are an error, not silently ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"Invalid TransformerConfig: unknown key(s) {', '.join(unknown)}")
        return cls(**values)


# --------------------------------------------------------------------------------------------------------
# Attention (§3.2)
# --------------------------------------------------------------------------------------------------------


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout: nn.Module | None = None
) -> tuple[Tensor, Tensor]:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, computed explicitly (§3.2.1).

    Args:
        q, k, v: (..., Q, d_k), (..., K, d_k), (..., K, d_v).
        mask: boolean, broadcastable to (..., Q, K), True where the query may attend to the key.
        dropout: applied to the weights before they multiply V (the returned weights are before dropout).
    Returns:
        (output (..., Q, d_v), weights (..., Q, K)) with every row of the weights summing to 1.
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., Q, K)
    if mask is not None:
        # The most negative finite number, not -inf: a row with every key masked then gets uniform weights
        # instead of NaN, and every masked entry of a row with some allowed key still gets exactly 0.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)  # (..., Q, K)
    attended = dropout(weights) if dropout is not None else weights
    return attended @ v, weights  # (..., Q, d_v), (..., Q, K)


@dataclass(frozen=True)
class KeyValue:
    """The projected keys and values of one attention module, kept for incremental decoding."""

    k: Tensor  # (B, H, K, d_k)
    v: Tensor  # (B, H, K, d_k)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V) (§3.2.2)."""

    def __init__(self, d_model: int, n_heads: int, attention_dropout: float = 0.0):
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        # One projection each for Q, K, V (all heads at once) and for the output W^O.
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(attention_dropout)

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, L, d) -> (B, H, L, d_k)"""
        B, L, _ = x.shape
        return x.view(B, L, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, L, d_k)

    def project_kv(self, source: Tensor) -> KeyValue:
        """Keys and values for `source` (B, K, d): computed once per encoder output for cross-attention."""
        return KeyValue(self.split_heads(self.k_proj(source)), self.split_heads(self.v_proj(source)))

    def forward(
        self,
        query: Tensor,
        source: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        past: KeyValue | None = None,
        fixed_kv: KeyValue | None = None,
        head_keep: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, KeyValue]:
        """
        Args:
            query: (B, Q, d), the positions that ask.
            source: (B, K, d), the positions that answer; None means self-attention (source = query).
            mask: boolean, broadcastable to (B, H, Q, K), True = may attend.
            past: keys/values of earlier positions (self-attention while decoding step by step);
                the new ones are appended.
            fixed_kv: precomputed keys/values (cross-attention while decoding); `source` is then unused.
            head_keep: (H,) of 0/1: a 0 silences that head by zeroing its output before W^O.
        Returns:
            output (B, Q, d), weights (B, H, Q, K), and the keys/values used (B, H, K, d_k) each.
        """
        B, Q, _ = query.shape
        q = self.split_heads(self.q_proj(query))  # (B, H, Q, d_k)
        if fixed_kv is not None:
            kv = fixed_kv
        else:
            kv = self.project_kv(query if source is None else source)
            if past is not None:
                kv = KeyValue(torch.cat([past.k, kv.k], dim=2), torch.cat([past.v, kv.v], dim=2))  # (B, H, K, d_k)

        heads, weights = scaled_dot_product_attention(q, kv.k, kv.v, mask, self.dropout)  # (B, H, Q, d_k)
        if head_keep is not None:
            heads = heads * head_keep.view(1, -1, 1, 1).to(heads.dtype)  # silenced heads contribute nothing
        concat = heads.transpose(1, 2).reshape(B, Q, self.n_heads * self.d_head)  # (B, Q, d)
        return self.out_proj(concat), weights, kv


# --------------------------------------------------------------------------------------------------------
# Position-wise feed-forward network (§3.3)
# --------------------------------------------------------------------------------------------------------

ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}  # SiLU = "swish"


class FeedForward(nn.Module):
    """FFN(x) = act(x W_1 + b_1) W_2 + b_2, applied to each position separately (§3.3)."""

    def __init__(self, d_model: int, d_ff: int, activation: str, activation_dropout: float = 0.0):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.activation = ACTIVATIONS[activation]()
        self.dropout = nn.Dropout(activation_dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.dropout(self.activation(self.fc1(x))))  # (B, L, F) inside, (B, L, d) out


# --------------------------------------------------------------------------------------------------------
# Embeddings and positional encoding (§3.4, §3.5)
# --------------------------------------------------------------------------------------------------------


def sinusoidal_position_encoding(
    n_positions: int, d_model: int, layout: str = "interleaved", base: float = 10000.0
) -> Tensor:
    """The fixed positional encoding of §3.5, as a (n_positions, d_model) float32 table.

        PE(pos, 2i)   = sin(pos / base^(2i / d_model))
        PE(pos, 2i+1) = cos(pos / base^(2i / d_model))

    layout="interleaved" puts these in the paper's order (sin on even columns, cos on odd ones);
    layout="concat" puts all sines first and all cosines second ([sin | cos], as tensor2tensor and Marian do):
    column i and column i + d_model/2 then share one frequency. Computed in float64, then rounded to float32.
    """
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    position = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,)
    angle = position / base ** (two_i / d_model)  # (P, d/2)
    if layout == "interleaved":
        table = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)  # (P, d): sin, cos, sin, cos, …
    elif layout == "concat":
        table = torch.cat([angle.sin(), angle.cos()], dim=-1)  # (P, d): sin … sin | cos … cos
    else:
        raise ValueError(f"layout must be 'interleaved' or 'concat', got {layout!r}")
    return table.float()


class PositionalEncoding(nn.Module):
    """Adds position information to the embeddings: fixed sinusoids (§3.5) or learned vectors."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.kind = config.positional_encoding
        if self.kind == "learned":
            self.learned = nn.Embedding(config.max_positions, config.d_model)
        else:
            layout = "interleaved" if self.kind == "sinusoidal_interleaved" else "concat"
            table = sinusoidal_position_encoding(config.max_positions, config.d_model, layout, config.positional_base)
            # Not a parameter and not saved: the table is a pure function of the config.
            self.register_buffer("table", table, persistent=False)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        """The encodings of positions offset … offset+length-1, shape (length, d)."""
        max_positions = self.learned.num_embeddings if self.kind == "learned" else self.table.size(0)
        if offset + length > max_positions:
            raise ValueError(f"sequence of {offset + length} positions is longer than max_positions={max_positions}")
        if self.kind == "learned":
            return self.learned.weight[offset : offset + length]
        return self.table[offset : offset + length]


class Embedding(nn.Module):
    """Token embedding × √d_model (§3.4) + positional encoding, then dropout."""

    def __init__(self, tokens: nn.Embedding, positions: PositionalEncoding, config: TransformerConfig):
        super().__init__()
        self.tokens = tokens
        self.positions = positions
        self.scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self, ids: Tensor, offset: int = 0, use_positions: bool = True, token_vectors: Tensor | None = None
    ) -> Tensor:
        """`token_vectors` (B, L, d): rows to use instead of the table's for `ids` (integrated gradients moves them
        along a path from zero: `transformer/explain.py`)."""
        x = (self.tokens(ids) if token_vectors is None else token_vectors) * self.scale  # (B, L, d)
        if use_positions:
            x = x + self.positions(ids.size(1), offset)  # (L, d) broadcasts over the batch
        return self.dropout(x)


# --------------------------------------------------------------------------------------------------------
# Encoder and decoder layers (§3.1)
# --------------------------------------------------------------------------------------------------------


class Residual(nn.Module):
    """One sub-layer with its residual connection and LayerNorm.

    post-norm (the paper):  x = LayerNorm(x + Dropout(sublayer(x)))
    pre-norm (modern code): x = x + Dropout(sublayer(LayerNorm(x)))
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.pre_norm = config.norm_position == "pre"
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def before(self, x: Tensor) -> Tensor:
        """What the sub-layer reads."""
        return self.norm(x) if self.pre_norm else x

    def after(self, x: Tensor, sublayer_out: Tensor) -> Tensor:
        """The residual sum (normalised here in post-norm)."""
        y = x + self.dropout(sublayer_out)
        return y if self.pre_norm else self.norm(y)


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward; each wrapped in a residual connection with LayerNorm."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.attention_dropout)
        self.self_attn_residual = Residual(config)
        self.ffn = FeedForward(config.d_model, config.d_ff, config.activation, config.activation_dropout)
        self.ffn_residual = Residual(config)

    def forward(self, x: Tensor, mask: Tensor | None, head_keep: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x: (B, S, d), mask: (B, 1, 1, S) -> (B, S, d) and self-attention weights (B, H, S, S)."""
        h = self.self_attn_residual.before(x)
        attn_out, weights, _ = self.self_attn(h, mask=mask, head_keep=head_keep)
        x = self.self_attn_residual.after(x, attn_out)
        x = self.ffn_residual.after(x, self.ffn(self.ffn_residual.before(x)))
        return x, weights


@dataclass(frozen=True)
class LayerCache:
    """What one decoder layer keeps between decoding steps."""

    self_kv: KeyValue | None  # (B, H, T_so_far, d_k): grows by one position per step
    cross_kv: KeyValue  # (B, H, S, d_k): computed once from the encoder output


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output, then feed-forward (§3.1)."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.attention_dropout)
        self.self_attn_residual = Residual(config)
        self.cross_attn = MultiHeadAttention(config.d_model, config.n_heads, config.attention_dropout)
        self.cross_attn_residual = Residual(config)
        self.ffn = FeedForward(config.d_model, config.d_ff, config.activation, config.activation_dropout)
        self.ffn_residual = Residual(config)

    def forward(
        self,
        y: Tensor,
        memory: Tensor,
        self_mask: Tensor | None,
        memory_mask: Tensor | None,
        cache: LayerCache | None = None,
        self_keep: Tensor | None = None,
        cross_keep: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor, LayerCache]:
        """
        Args:
            y: (B, T, d) target positions; memory: (B, S, d) encoder output.
            self_mask: broadcastable to (B, H, T, T_total); memory_mask: (B, 1, 1, S).
            cache: keys/values from earlier steps (None: nothing cached, e.g. training).
        Returns:
            y (B, T, d), self-attention weights (B, H, T, T_total), cross weights (B, H, T, S), new cache.
        """
        h = self.self_attn_residual.before(y)
        past = cache.self_kv if cache is not None else None
        attn_out, self_weights, self_kv = self.self_attn(h, mask=self_mask, past=past, head_keep=self_keep)
        y = self.self_attn_residual.after(y, attn_out)

        h = self.cross_attn_residual.before(y)
        cross_kv = cache.cross_kv if cache is not None else None
        attn_out, cross_weights, cross_kv = self.cross_attn(
            h, memory, memory_mask, fixed_kv=cross_kv, head_keep=cross_keep
        )
        y = self.cross_attn_residual.after(y, attn_out)

        y = self.ffn_residual.after(y, self.ffn(self.ffn_residual.before(y)))
        return y, self_weights, cross_weights, LayerCache(self_kv, cross_kv)


# --------------------------------------------------------------------------------------------------------
# Masks and head ablation (arguments of the forward pass, never module state)
# --------------------------------------------------------------------------------------------------------


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """(B, L) token ids -> (B, 1, 1, L), True at real tokens: every query may attend to them, not to padding."""
    return (ids != pad_id)[:, None, None, :]


def causal_mask(n_queries: int, n_keys: int, device: torch.device | None = None) -> Tensor:
    """(1, 1, Q, K), True where key position <= query position.

    The queries are the last Q of the K positions (earlier ones are cached), so query i sits at position
    K - Q + i and may attend to keys 0 … K - Q + i: a lower-triangular band, nothing from the future.
    """
    query_pos = torch.arange(n_keys - n_queries, n_keys, device=device).unsqueeze(1)  # (Q, 1)
    key_pos = torch.arange(n_keys, device=device).unsqueeze(0)  # (1, K)
    return (key_pos <= query_pos)[None, None]  # (1, 1, Q, K)


def validate_heads(config: TransformerConfig, heads: Collection[HeadRef]) -> frozenset[HeadRef]:
    """Check (family, layer, head) triples against the config; raise ValueError naming the bad one."""
    checked = set()
    for ref in heads:
        try:
            family, layer, head = ref
        except (TypeError, ValueError):
            raise ValueError(f"a head is (family, layer, head), got {ref!r}") from None
        if family not in ATTENTION_FAMILIES:
            raise ValueError(f"unknown attention family {family!r}; expected one of {', '.join(ATTENTION_FAMILIES)}")
        n_layers = config.n_layers(family)
        if not isinstance(layer, int) or not 0 <= layer < n_layers:
            raise ValueError(f"{family} layer {layer!r} does not exist (the model has {n_layers} layers)")
        if not isinstance(head, int) or not 0 <= head < config.n_heads:
            raise ValueError(f"head {head!r} does not exist (the model has {config.n_heads} heads per layer)")
        checked.add((family, layer, head))
    return frozenset(checked)


@dataclass(frozen=True)
class ModelSwitches:
    """What one call of the model may switch off, to show what each part is worth (the defaults: as trained).

    causal_mask_on: each decoder position attends only to itself and earlier positions. Off, positions see the
        future of the given target, which the model was never trained on.
    padding_mask_on: no query attends to the source's padding (encoder self-attention and cross-attention).
    use_positions: add the positional encodings; off, the model sees its input as a bag of words.
    silenced: heads whose output is set to zero, as (family, layer, head).

    With the causal mask off, every decoder position also sees the positions after it. While generating, the earlier
    positions then see each new token, so their hidden states change at every step: `Decoding` recomputes the whole
    prefix at each step instead of reusing the cache, which holds the earlier positions' keys and values as they
    were computed, and is only valid when they cannot see the future (the mask on).
    """

    causal_mask_on: bool = True
    padding_mask_on: bool = True
    use_positions: bool = True
    silenced: frozenset[HeadRef] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "silenced", frozenset(self.silenced))  # any collection of heads, stored as a set

    def checked(self, config: TransformerConfig) -> ModelSwitches:
        """These switches, their heads checked against the model's config (ValueError naming a head that is not)."""
        return dataclasses.replace(self, silenced=validate_heads(config, self.silenced))


AS_TRAINED = ModelSwitches()  # both masks on, the positions added, every head heard


def head_keep(silenced: frozenset[HeadRef], family: str, layer: int, n_heads: int, device) -> Tensor | None:
    """(H,) of 1.0 (keep) / 0.0 (silence) for one attention module, or None if no head of it is silenced."""
    off = [head for (f, lyr, head) in silenced if f == family and lyr == layer]
    if not off:
        return None
    keep = torch.ones(n_heads, device=device)
    keep[off] = 0.0
    return keep


# --------------------------------------------------------------------------------------------------------
# The encoder, the decoder, and the whole model
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncoderOutput:
    """The encoder's result, everything the decoder needs to attend to the source."""

    memory: Tensor  # (B, S, d): one vector per source token
    memory_mask: Tensor | None  # (B, 1, 1, S) True at real tokens, or None when the padding mask is off
    attention: list[Tensor] = field(default_factory=list)  # per layer (B, H, S, S) when asked for

    def repeat_interleave(self, n: int) -> EncoderOutput:
        """Each batch row n times (beam search runs n hypotheses per sentence)."""
        mask = self.memory_mask.repeat_interleave(n, dim=0) if self.memory_mask is not None else None
        return EncoderOutput(self.memory.repeat_interleave(n, dim=0), mask, self.attention)

    def select(self, rows: Tensor) -> EncoderOutput:
        """Keep only these batch rows (batched greedy decoding drops finished sentences); attention not kept."""
        mask = self.memory_mask.index_select(0, rows) if self.memory_mask is not None else None
        return EncoderOutput(self.memory.index_select(0, rows), mask)


@dataclass(frozen=True)
class DecoderCache:
    """Keys and values of every decoder layer, for incremental decoding; immutable, each step returns a new one."""

    layers: tuple[LayerCache, ...]

    @property
    def length(self) -> int:
        """How many target positions are cached."""
        first = self.layers[0].self_kv if self.layers else None
        return 0 if first is None else first.k.size(2)

    def truncate(self, length: int) -> DecoderCache:
        """The cache of the first `length` target positions (to step back)."""

        def cut(kv: KeyValue | None) -> KeyValue | None:
            if kv is None or length == 0:
                return None
            return KeyValue(kv.k[:, :, :length], kv.v[:, :, :length])

        return DecoderCache(tuple(LayerCache(cut(lc.self_kv), lc.cross_kv) for lc in self.layers))

    def select(self, rows: Tensor) -> DecoderCache:
        """Reorder/select batch rows (beam search keeps the cache of each surviving hypothesis)."""

        def pick(kv: KeyValue | None) -> KeyValue | None:
            return None if kv is None else KeyValue(kv.k.index_select(0, rows), kv.v.index_select(0, rows))

        return DecoderCache(tuple(LayerCache(pick(lc.self_kv), pick(lc.cross_kv)) for lc in self.layers))


@dataclass(frozen=True)
class DecoderOutput:
    logits: Tensor  # (B, T, V) unnormalised next-token scores
    cache: DecoderCache | None  # updated cache (None if decoding without one)
    self_attention: list[Tensor] = field(default_factory=list)  # per layer (B, H, T, T_total)
    cross_attention: list[Tensor] = field(default_factory=list)  # per layer (B, H, T, S)


@dataclass(frozen=True)
class Attention:
    """Every layer's per-head attention weights after softmax, one tensor per layer."""

    encoder: list[Tensor]  # (B, H, S, S)
    decoder_self: list[Tensor]  # (B, H, T, T)
    cross: list[Tensor]  # (B, H, T, S)


@dataclass(frozen=True)
class ModelOutput:
    logits: Tensor  # (B, T, V)
    attention: Attention | None


class Transformer(nn.Module):
    """The encoder–decoder Transformer (§3, Figure 1)."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        src_tokens = nn.Embedding(config.src_vocab_size, config.d_model)
        tgt_tokens = src_tokens if config.share_embeddings else nn.Embedding(config.tgt_vocab_size, config.d_model)
        self.src_embed = Embedding(src_tokens, PositionalEncoding(config), config)
        self.tgt_embed = Embedding(tgt_tokens, PositionalEncoding(config), config)

        self.encoder_layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_decoder_layers))
        # Pre-norm stacks end with a LayerNorm: the last residual sum was never normalised.
        pre = config.norm_position == "pre"
        self.encoder_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if pre else nn.Identity()
        self.decoder_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if pre else nn.Identity()

        # Output projection to vocabulary scores: the target embedding matrix itself when tied (§3.4).
        self.output_proj = None if config.tie_output else nn.Linear(config.d_model, config.tgt_vocab_size, bias=False)
        self.logits_bias = nn.Parameter(torch.zeros(config.tgt_vocab_size)) if config.final_logits_bias else None
        self.reset_parameters()

    @classmethod
    def on_cpu(cls, config: TransformerConfig) -> Transformer:
        """A new model built on the CPU whatever PyTorch's default device (`torch.set_default_device`, a
        `with torch.device(...)` block): its first weights come from the CPU's random generator, so one
        `torch.manual_seed` gives the same model whichever device it then goes to (`.to(device)`), and loading or
        training never depends on a default set elsewhere."""
        with torch.device("cpu"):
            return cls(config)

    def reset_parameters(self) -> None:
        """Xavier-uniform (or normal) weight matrices, zero biases, unit LayerNorms (see `init_rule`)."""
        for name, p in self.named_parameters():
            rule, value = self.init_rule(name, p)
            if rule == "normal":
                nn.init.normal_(p, mean=0.0, std=value)
            elif rule == "uniform":
                nn.init.uniform_(p, -value, value)
            else:
                nn.init.constant_(p, value)

    def init_rule(self, name: str, p: Tensor) -> tuple[str, float]:
        """How parameter `name` starts: ("normal", std), ("uniform", bound) or ("constant", value).

        Token embeddings get N(0, d_model^-0.5): multiplied by √d_model they enter with unit scale, and as the
        tied output projection they start with logits of order one (an N(0, 1) start makes the first losses
        explode when embeddings are scaled and tied). Matrices get Xavier-uniform, U(±√(6 / (fan_in + fan_out))).
        """
        cfg = self.config
        if "tokens" in name or "learned" in name:  # token (and learned position) embeddings
            return "normal", cfg.d_model**-0.5
        if p.dim() > 1:
            if cfg.init == "xavier":
                fan_out, fan_in = p.shape[0], p[0].numel()
                return "uniform", math.sqrt(6.0 / (fan_in + fan_out))
            return "normal", cfg.init_std
        if "norm" in name and name.endswith("weight"):
            return "constant", 1.0
        return "constant", 0.0

    # ---- the two halves -------------------------------------------------------------------------------

    def encode(
        self,
        src: Tensor,
        *,
        switches: ModelSwitches = AS_TRAINED,
        return_attention: bool = False,
        layers: int | None = None,
        token_vectors: Tensor | None = None,
    ) -> EncoderOutput:
        """Run the encoder stack over source ids (B, S).

        Args:
            switches: the padding mask, the positions and the silenced heads of the "encoder" family are used here.
            return_attention: also return every layer's self-attention weights (B, H, S, S).
            layers: run only the first `layers` layers (what an intermediate layer already knows: the DecoderLens).
            token_vectors: (B, S, d) the source's embedding rows, given instead of looked up.
        """
        heads = validate_heads(self.config, switches.silenced)
        mask = padding_mask(src, self.config.pad_id) if switches.padding_mask_on else None  # (B, 1, 1, S)
        x = self.src_embed(src, use_positions=switches.use_positions, token_vectors=token_vectors)  # (B, S, d)
        attention = []
        for i, layer in enumerate(itertools.islice(self.encoder_layers, layers)):
            x, weights = layer(x, mask, head_keep(heads, "encoder", i, self.config.n_heads, x.device))
            if return_attention:
                attention.append(weights)
        return EncoderOutput(self.encoder_norm(x), mask, attention)

    def init_cache(self, encoded: EncoderOutput) -> DecoderCache:
        """An empty decoder cache holding each layer's cross-attention keys/values, computed once."""
        return DecoderCache(
            tuple(LayerCache(None, layer.cross_attn.project_kv(encoded.memory)) for layer in self.decoder_layers)
        )

    def decode(
        self,
        tgt: Tensor,
        encoded: EncoderOutput,
        *,
        cache: DecoderCache | None = None,
        switches: ModelSwitches = AS_TRAINED,
        return_attention: bool = False,
        token_vectors: Tensor | None = None,
        last_only: bool = False,
    ) -> DecoderOutput:
        """Run the decoder stack over target ids (B, T) and return next-token logits (B, T, V).

        With a cache, `tgt` holds only the new positions (usually one): their positions continue after the
        cached ones, self-attention also sees the cached keys/values, and the returned cache has them appended.

        Args:
            switches: the causal mask, the positions and the silenced heads of the "decoder_self" and "cross"
                families are used here (the padding mask is the encoder's, in `encoded`).
            token_vectors: (B, T, d) the target's embedding rows, given instead of looked up.
            last_only: the logits of the last position only, (B, 1, V): the one step a caller asks about.
        """
        heads = validate_heads(self.config, switches.silenced)
        n_heads = self.config.n_heads
        past_len = cache.length if cache is not None else 0
        T = tgt.size(1)
        y = self.tgt_embed(tgt, offset=past_len, use_positions=switches.use_positions, token_vectors=token_vectors)
        self_mask = causal_mask(T, past_len + T, tgt.device) if switches.causal_mask_on else None  # (1, 1, T, past+T)

        layer_caches, self_attention, cross_attention = [], [], []
        for i, layer in enumerate(self.decoder_layers):
            y, self_w, cross_w, layer_cache = layer(
                y,
                encoded.memory,
                self_mask,
                encoded.memory_mask,
                cache.layers[i] if cache is not None else None,
                head_keep(heads, "decoder_self", i, n_heads, y.device),
                head_keep(heads, "cross", i, n_heads, y.device),
            )
            layer_caches.append(layer_cache)
            if return_attention:
                self_attention.append(self_w)
                cross_attention.append(cross_w)
        logits = self.project(self.decoder_norm(y[:, -1:] if last_only else y))
        new_cache = DecoderCache(tuple(layer_caches)) if cache is not None else None
        return DecoderOutput(logits, new_cache, self_attention, cross_attention)

    def project(self, y: Tensor) -> Tensor:
        """Decoder output (B, T, d) -> vocabulary scores (B, T, V): y W_outᵀ (+ a bias)."""
        weight = self.output_proj.weight if self.output_proj is not None else self.tgt_embed.tokens.weight  # (V, d)
        # Without gradients (inference) the same product is read from a (d, V) copy of W_outᵀ: see `output_matrix`.
        w_out_t = weight.T if torch.is_grad_enabled() else self.output_matrix(weight)  # (d, V)
        logits = y @ w_out_t  # (B, T, V)
        return logits + self.logits_bias if self.logits_bias is not None else logits

    def output_matrix(self, weight: Tensor) -> Tensor:
        """W_outᵀ as a contiguous (d, V) matrix, for inference; copied once per version of the weights.

        While decoding one token at a time the output projection is a (1, d) × (d, V) product that only streams
        the matrix from memory; on the CPU it runs about twice as fast from this layout as from the (V, d) rows of
        the embedding table (measured in BENCHMARKS.md). Training and anything that needs gradients use `weight`.
        """
        key = (weight.data_ptr(), weight._version, weight.dtype, weight.device)
        if getattr(self, "_output_matrix_key", None) != key:
            with torch.inference_mode(False), torch.no_grad():  # an ordinary tensor, usable outside inference mode
                self._output_matrix = weight.t().contiguous()  # (d, V)
            self._output_matrix_key = key
        return self._output_matrix

    # ---- the whole model --------------------------------------------------------------------------------

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        *,
        switches: ModelSwitches = AS_TRAINED,
        return_attention: bool = False,
    ) -> ModelOutput:
        """Teacher forcing: source ids (B, S) and target input ids (B, T) -> logits (B, T, V).

        `tgt` starts with the decoder start token; logits[:, t] predicts target token t + 1.
        The switches are per call (see `ModelSwitches`).
        """
        encoded = self.encode(src, switches=switches, return_attention=return_attention)
        decoded = self.decode(tgt, encoded, switches=switches, return_attention=return_attention)
        attention = (
            Attention(encoded.attention, decoded.self_attention, decoded.cross_attention) if return_attention else None
        )
        return ModelOutput(decoded.logits, attention)

    def num_parameters(self) -> int:
        """Distinct trainable parameters (a shared embedding counts once)."""
        return sum(p.numel() for p in self.parameters())
