"""One translation step worked through by hand: every intermediate tensor of the model, with its shape.

`Transformer.forward` computes all positions and layers at once, with fused code paths and a cache. This module
computes the same numbers a second way, explicitly, in the order of the paper's Figure 1, as the tutorials do:

    token id -> embedding × √d_model -> + positional encoding
    -> for each layer: Q, K, V -> scores QKᵀ/√d_k -> mask -> softmax -> weights · V -> concat heads -> W^O
                       -> residual + LayerNorm -> (decoder: cross-attention, the same way) -> feed-forward
                       -> residual + LayerNorm
    -> final vector -> logits -> softmax

and keeps every intermediate tensor, for every position, so that a page can show how the token being predicted
now comes about, stage by stage. `work_through` only reads the model's weights: it never changes the model or
hooks into it (several users may run the same model object at the same moment). The tests check that its logits
and attention weights equal the model's own for every architecture variant and for an imported Marian model.

Shapes use the tutorials' notation: S source length, T target length (the decoder's input so far), H heads,
d_k = d_model / H, F = d_ff, V vocabulary size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from .model import (
    ACTIVATIONS,
    AS_TRAINED,
    Embedding,
    FeedForward,
    ModelSwitches,
    MultiHeadAttention,
    Residual,
    Transformer,
)


@dataclass(frozen=True)
class EmbeddingStage:
    """token id -> E[id] · √d_model (+ PE[pos]): the input of the first layer, for every position."""

    ids: Tensor  # (L,) token ids
    token_vectors: Tensor  # (L, d): the rows of the embedding table
    scale: float  # √d_model, or 1 when the model does not scale
    positions: Tensor  # (L, d): the positional encoding added (zeros when positions are switched off)
    out: Tensor  # (L, d) = token_vectors · scale + positions


@dataclass(frozen=True)
class AttentionStage:
    """Multi-head attention, one step at a time (§3.2): for every query position and every head."""

    input: Tensor  # (L, d): what the sub-layer reads (after LayerNorm in a pre-norm model)
    q: Tensor  # (H, L, d_k): queries, x W_Q + b_Q split into heads
    k: Tensor  # (H, K, d_k): keys (cross-attention: from the encoder output, computed once per sentence)
    v: Tensor  # (H, K, d_k): values
    scores: Tensor  # (H, L, K): q · k / √d_k, before the mask
    allowed: Tensor  # (L, K) bool: True where the query may attend to the key (the mask)
    weights: Tensor  # (H, L, K): softmax of the masked scores; every row sums to 1
    heads: Tensor  # (H, L, d_k): weights · V, with a silenced head's output set to zero
    kept: Tensor  # (H,) bool: False for a silenced head
    concat: Tensor  # (L, d): the heads side by side
    out: Tensor  # (L, d): concat W^O + b_O

    @property
    def masked_scores(self) -> Tensor:
        """The scores with −∞ where the mask forbids (how the tutorials show them before the softmax)."""
        return self.scores.masked_fill(~self.allowed, float("-inf"))


@dataclass(frozen=True)
class AddNormStage:
    """The residual connection and LayerNorm around a sub-layer (§3.1, §5.4).

    Post-norm (the paper): out = LayerNorm(residual + sublayer). Pre-norm: the LayerNorm was applied to the
    sub-layer's input instead (`norm` holds that one), and out = residual + sublayer.
    """

    pre_norm: bool
    residual: Tensor  # (L, d): the stream that skips the sub-layer
    sublayer: Tensor  # (L, d): the sub-layer's output
    total: Tensor  # (L, d) = residual + sublayer
    normalised_input: Tensor  # (L, d): what LayerNorm reads (post-norm: total; pre-norm: residual)
    mean: Tensor  # (L,): of each position's vector
    variance: Tensor  # (L,): biased, as LayerNorm computes it
    gamma: Tensor  # (d,): LayerNorm's learned scale
    beta: Tensor  # (d,): LayerNorm's learned shift
    normalised: Tensor  # (L, d) = (x − mean) / √(variance + ε) · γ + β
    out: Tensor  # (L, d): the layer stream after this sub-layer


@dataclass(frozen=True)
class FeedForwardStage:
    """FFN(x) = act(x W_1 + b_1) W_2 + b_2 at every position (§3.3)."""

    input: Tensor  # (L, d)
    pre_activation: Tensor  # (L, F) = x W_1 + b_1
    hidden: Tensor  # (L, F): after the nonlinearity
    activation: str  # "relu", "gelu" or "silu"
    out: Tensor  # (L, d)

    def exactly_zero(self, position: int) -> int:
        """How many of the position's F hidden activations are exactly 0 (ReLU switches them off)."""
        return int((self.hidden[position] == 0).sum())


@dataclass(frozen=True)
class EncoderLayerStages:
    self_attention: AttentionStage
    self_attention_add_norm: AddNormStage
    ffn: FeedForwardStage
    ffn_add_norm: AddNormStage

    @property
    def out(self) -> Tensor:
        return self.ffn_add_norm.out


@dataclass(frozen=True)
class DecoderLayerStages:
    self_attention: AttentionStage
    self_attention_add_norm: AddNormStage
    cross_attention: AttentionStage
    cross_attention_add_norm: AddNormStage
    ffn: FeedForwardStage
    ffn_add_norm: AddNormStage

    @property
    def out(self) -> Tensor:
        return self.ffn_add_norm.out


@dataclass(frozen=True)
class OutputStage:
    """The final vector of one position -> logits -> probabilities (§3.4)."""

    final_input: Tensor  # (d,): the last layer's output at the position
    final: Tensor  # (d,): after the final LayerNorm of a pre-norm model (else the same vector)
    logits: Tensor  # (V,) = final W_outᵀ (+ bias): kept here, never sent to a page whole
    probabilities: Tensor  # (V,) softmax of the logits

    def top(self, k: int = 10) -> tuple[Tensor, Tensor]:
        """The k most probable token ids and their probabilities."""
        values, ids = self.probabilities.topk(min(k, self.probabilities.numel()))
        return ids, values


@dataclass(frozen=True)
class LayerPrediction:
    """What one decoder layer would say if it were the last (its output put through the output projection)."""

    layer: int
    top_ids: list[int]
    top_probabilities: list[float]
    chosen_probability: float  # the probability this layer gives the token the whole model chooses


@dataclass(frozen=True)
class WorkedStep:
    """Every stage of one forward pass over a source and the decoder's input so far."""

    source_embedding: EmbeddingStage
    encoder: list[EncoderLayerStages]
    memory: Tensor  # (S, d): the encoder's output (after its final LayerNorm in a pre-norm model)
    target_embedding: EmbeddingStage
    decoder: list[DecoderLayerStages]
    output: OutputStage  # of the last target position: the token being predicted now
    chosen: int  # the token chosen there (the most probable one, unless given), followed through the layers
    layer_predictions: list[LayerPrediction]
    pre_norm: bool

    @property
    def position(self) -> int:
        """The target position being predicted from (the last one)."""
        return self.target_embedding.ids.numel() - 1

    def residual_stream(self, stack: str, position: int) -> list[tuple[str, Tensor]]:
        """The vector of one position on its way up a stack ("encoder" or "decoder"), as (where, (d,) vector):
        after the embedding, then after each sub-layer's residual add (and LayerNorm, post-norm), named as
        "L1 cross-attn" (layer 1, after its cross-attention), and for a
        pre-norm stack after its final LayerNorm: the encoder's memory, or the vector the output projection reads
        (only the last target position has one)."""
        if stack == "encoder":
            layers, embedding = self.encoder, self.source_embedding
            names = ("self_attention_add_norm", "ffn_add_norm")
        elif stack == "decoder":
            layers, embedding = self.decoder, self.target_embedding
            names = ("self_attention_add_norm", "cross_attention_add_norm", "ffn_add_norm")
        else:
            raise ValueError(f"unknown stack {stack!r}: encoder or decoder")
        short = {
            "self_attention_add_norm": "self-attn",
            "cross_attention_add_norm": "cross-attn",
            "ffn_add_norm": "FFN",
        }
        stream = [("embedding", embedding.out[position])]
        for i, layer in enumerate(layers):
            stream += [(f"L{i} {short[name]}", getattr(layer, name).out[position]) for name in names]
        if self.pre_norm and stack == "encoder":
            stream.append(("final norm: memory", self.memory[position]))
        elif self.pre_norm and position == self.position:
            stream.append(("final norm", self.output.final))
        return stream


# --------------------------------------------------------------------------------------------------------
# The stages, each written out
# --------------------------------------------------------------------------------------------------------


def linear(x: Tensor, layer: torch.nn.Linear) -> Tensor:
    """x W + b, with W stored as (out, in) as torch.nn.Linear keeps it."""
    out = x @ layer.weight.T
    return out + layer.bias if layer.bias is not None else out


def embed(module: Embedding, ids: Tensor, use_positions: bool) -> EmbeddingStage:
    token_vectors = module.tokens.weight[ids]  # (L, d)
    positions = module.positions(ids.numel()) if use_positions else torch.zeros_like(token_vectors)
    return EmbeddingStage(ids, token_vectors, module.scale, positions, token_vectors * module.scale + positions)


def attend(attention: MultiHeadAttention, x: Tensor, source: Tensor, allowed: Tensor, kept: Tensor) -> AttentionStage:
    """Multi-head attention of the queries `x` (L, d) over `source` (K, d); `allowed` (L, K) is the mask."""
    n_heads, d_k = attention.n_heads, attention.d_head

    def split(y: Tensor) -> Tensor:  # (n, d) -> (H, n, d_k)
        return y.view(y.size(0), n_heads, d_k).transpose(0, 1)

    q = split(linear(x, attention.q_proj))  # (H, L, d_k)
    k, v = split(linear(source, attention.k_proj)), split(linear(source, attention.v_proj))  # (H, K, d_k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (H, L, K)
    # As in the model: the most negative finite number where masked (a fully masked row gets uniform weights).
    weights = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min).softmax(dim=-1)  # (H, L, K)
    heads = (weights @ v) * kept.view(-1, 1, 1).to(v.dtype)  # (H, L, d_k): a silenced head gives zeros
    concat = heads.transpose(0, 1).reshape(x.size(0), n_heads * d_k)  # (L, d)
    return AttentionStage(x, q, k, v, scores, allowed, weights, heads, kept, concat, linear(concat, attention.out_proj))


def layer_norm(x: Tensor, norm: torch.nn.LayerNorm) -> tuple[Tensor, Tensor, Tensor]:
    """(normalised, mean, variance) of each row of x, as torch.nn.LayerNorm computes them."""
    mean = x.mean(dim=-1)
    variance = x.var(dim=-1, unbiased=False)
    normalised = (x - mean[:, None]) / torch.sqrt(variance[:, None] + norm.eps) * norm.weight + norm.bias
    return normalised, mean, variance


def add_norm(residual_module: Residual, residual: Tensor, sublayer: Tensor) -> AddNormStage:
    """The residual sum around a sub-layer and its LayerNorm (in a pre-norm model, the LayerNorm that made the
    sub-layer's input, `sublayer_input`; the stream then goes on unnormalised)."""
    norm, pre = residual_module.norm, residual_module.pre_norm
    total = residual + sublayer
    normalised_input = residual if pre else total
    normalised, mean, variance = layer_norm(normalised_input, norm)
    out = total if pre else normalised
    return AddNormStage(
        pre, residual, sublayer, total, normalised_input, mean, variance, norm.weight, norm.bias, normalised, out
    )


def feed_forward(ffn: FeedForward, x: Tensor, activation: str) -> FeedForwardStage:
    pre_activation = linear(x, ffn.fc1)  # (L, F)
    hidden = ACTIVATIONS[activation]()(pre_activation)
    return FeedForwardStage(x, pre_activation, hidden, activation, linear(hidden, ffn.fc2))


def sublayer_input(residual: Residual, x: Tensor) -> Tensor:
    """What a sub-layer reads: x itself (post-norm), or LayerNorm(x) computed here by hand (pre-norm)."""
    return layer_norm(x, residual.norm)[0] if residual.pre_norm else x


# --------------------------------------------------------------------------------------------------------
# The whole pass
# --------------------------------------------------------------------------------------------------------


def work_through(
    model: Transformer,
    src_ids: list[int] | Tensor,
    tgt_ids: list[int] | Tensor,
    *,
    switches: ModelSwitches = AS_TRAINED,
    chosen: int | None = None,
    top_k: int = 3,
) -> WorkedStep:
    """Every stage of the model on one sentence: the source ids (S,) and the decoder's input so far (T,),
    starting with the decoder start token. The output stage is that of the last target position, the one that
    predicts the next token; `chosen` is that token (default: the most probable one), whose probability
    `layer_predictions` follows through the decoder layers. The switches are those of `Transformer.forward`.

    Always in float32, the precision of the weights: where the caller decodes in reduced precision
    (`torch.autocast`), these numbers, which a learner checks by hand, are not rounded to it."""
    device = next(model.parameters()).device
    with torch.autocast(device.type, enabled=False):
        return _work_through(model, src_ids, tgt_ids, switches.checked(model.config), chosen, top_k)


def _work_through(
    model: Transformer,
    src_ids: list[int] | Tensor,
    tgt_ids: list[int] | Tensor,
    switches: ModelSwitches,
    chosen: int | None,
    top_k: int,
) -> WorkedStep:
    config = model.config
    heads = switches.silenced
    device = next(model.parameters()).device
    src = torch.as_tensor(src_ids, dtype=torch.long, device=device).reshape(-1)
    tgt = torch.as_tensor(tgt_ids, dtype=torch.long, device=device).reshape(-1)
    n_src, n_tgt = src.numel(), tgt.numel()
    real = src != config.pad_id if switches.padding_mask_on else torch.ones(n_src, dtype=torch.bool, device=device)

    def kept(family: str, layer: int) -> Tensor:
        keep = torch.ones(config.n_heads, dtype=torch.bool, device=device)
        keep[[h for (f, lyr, h) in heads if f == family and lyr == layer]] = False
        return keep

    with torch.no_grad():
        source_embedding = embed(model.src_embed, src, switches.use_positions)
        x, encoder = source_embedding.out, []
        for i, layer in enumerate(model.encoder_layers):
            allowed = real.expand(n_src, n_src)  # every source position sees every real source token
            h = sublayer_input(layer.self_attn_residual, x)
            attention = attend(layer.self_attn, h, h, allowed, kept("encoder", i))
            after_attention = add_norm(layer.self_attn_residual, x, attention.out)
            x = after_attention.out
            h = sublayer_input(layer.ffn_residual, x)
            ffn = feed_forward(layer.ffn, h, config.activation)
            after_ffn = add_norm(layer.ffn_residual, x, ffn.out)
            x = after_ffn.out
            encoder.append(EncoderLayerStages(attention, after_attention, ffn, after_ffn))
        memory = layer_norm(x, model.encoder_norm)[0] if config.norm_position == "pre" else x

        target_embedding = embed(model.tgt_embed, tgt, switches.use_positions)
        causal = torch.ones(n_tgt, n_tgt, dtype=torch.bool, device=device)
        causal = causal.tril() if switches.causal_mask_on else causal  # position t sees positions 0 … t
        y, decoder = target_embedding.out, []
        for i, layer in enumerate(model.decoder_layers):
            h = sublayer_input(layer.self_attn_residual, y)
            self_attention = attend(layer.self_attn, h, h, causal, kept("decoder_self", i))
            after_self = add_norm(layer.self_attn_residual, y, self_attention.out)
            y = after_self.out
            h = sublayer_input(layer.cross_attn_residual, y)
            cross_attention = attend(layer.cross_attn, h, memory, real.expand(n_tgt, n_src), kept("cross", i))
            after_cross = add_norm(layer.cross_attn_residual, y, cross_attention.out)
            y = after_cross.out
            h = sublayer_input(layer.ffn_residual, y)
            ffn = feed_forward(layer.ffn, h, config.activation)
            after_ffn = add_norm(layer.ffn_residual, y, ffn.out)
            y = after_ffn.out
            decoder.append(DecoderLayerStages(self_attention, after_self, cross_attention, after_cross, ffn, after_ffn))

        output = output_stage(model, y[-1])
        chosen = int(output.probabilities.argmax()) if chosen is None else int(chosen)
        predictions = [layer_prediction(model, i, stages.out[-1], chosen, top_k) for i, stages in enumerate(decoder)]
    pre = config.norm_position == "pre"
    return WorkedStep(source_embedding, encoder, memory, target_embedding, decoder, output, chosen, predictions, pre)


def output_stage(model: Transformer, vector: Tensor) -> OutputStage:
    """A decoder output vector (d,) -> (final LayerNorm in a pre-norm model) -> logits (V,) -> probabilities."""
    final = layer_norm(vector[None], model.decoder_norm)[0][0] if model.config.norm_position == "pre" else vector
    weight = model.output_proj.weight if model.output_proj is not None else model.tgt_embed.tokens.weight  # (V, d)
    logits = weight @ final  # (V,): one score per vocabulary entry
    if model.logits_bias is not None:
        logits = logits + model.logits_bias
    return OutputStage(vector, final, logits, logits.softmax(dim=-1))


def layer_prediction(model: Transformer, layer: int, vector: Tensor, chosen: int, k: int) -> LayerPrediction:
    """Layer `layer`'s output at the position put through the final projection, as if no layer followed."""
    probabilities = output_stage(model, vector).probabilities
    values, ids = probabilities.topk(min(k, probabilities.numel()))
    return LayerPrediction(layer, ids.tolist(), values.tolist(), float(probabilities[chosen]))
