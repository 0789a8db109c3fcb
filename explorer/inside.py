"""Inside one step: from an `Explorer` to the "Inside a step" view, the whole computation of the token being
predicted now, stage by stage, with this sentence's numbers (`transformer.worked` computes them).

The architecture diagram (the paper's Figure 1) is the navigation: a stage is one of its blocks, of one layer,
and for attention of one head. Every stage shows its tensors with their shapes in the tutorials' notation, its
formula, and where its output goes next. Only small tensors reach the page: the logits are cut to the top ten.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import torch

from transformer.worked import (
    AddNormStage,
    AttentionStage,
    EmbeddingStage,
    FeedForwardStage,
    OutputStage,
    WorkedStep,
    work_through,
)

from . import figures
from .cache import SHARED, identity
from .figures import TensorPanel
from .session import Explorer
from .stages import DECODER_BLOCKS, ENCODER_BLOCKS, Block

TOP = 10  # candidates shown at the output
# The sub-layer each Add & Norm follows, and what reads its output, for the stage's text.
ADD_NORM = {
    "encoder.self_attention_add_norm": ("self-attention", "the *Feed forward* network, at each position on its own"),
    "encoder.ffn_add_norm": (
        "feed-forward network",
        "the next encoder layer; after the last one, it is the memory that every decoder layer's cross-attention reads",
    ),
    "decoder.self_attention_add_norm": ("masked self-attention", "the *Cross-attention*, which reads the memory"),
    "decoder.cross_attention_add_norm": ("cross-attention", "the *Feed forward* network"),
    "decoder.ffn_add_norm": (
        "feed-forward network",
        "the next decoder layer; after the last one, the *Linear + softmax*",
    ),
}


def stage_choices() -> list[tuple[str, str]]:
    """(label, key) of every stage, for the control beside the diagram, in the diagram's order; no two alike."""
    return [(f"Encoder · {b.name}", b.key) for b in ENCODER_BLOCKS] + [
        (f"Decoder · {b.name}" if b.stack or "embedding" in b.key else b.name, b.key) for b in DECODER_BLOCKS
    ]


def _blocks(blocks: tuple[Block, ...], pre_norm: bool) -> list[Block]:
    """The diagram's blocks; a pre-norm model adds (not normalises) after each sub-layer: its LayerNorm comes first."""
    if not pre_norm:
        return list(blocks)

    def added(block: Block) -> Block:  # "Add & Norm\nafter X" -> "Add\nafter X\n(LayerNorm first)"
        return Block(block.key, block.label.replace("Add & Norm", "Add") + "\n(LayerNorm first)", block.stack)

    return [added(b) if b.key.endswith("add_norm") else b for b in blocks]


def diagram(explorer: Explorer, stage: str) -> figures.Figure:
    """The paper's Figure 1 for this model, the chosen stage's block filled; in the presentation layout, drawn
    for its narrow column (`compact`)."""
    config = explorer.checkpoint.model.config
    pre = config.norm_position == "pre"
    decoder = _blocks(DECODER_BLOCKS, pre)
    if pre:  # the final LayerNorm of a pre-norm stack, before the output projection
        decoder[-2] = Block("output", "Final LayerNorm,\nlinear + softmax", "")
    return figures.architecture_diagram(
        _blocks(ENCODER_BLOCKS, pre),
        decoder,
        selected=stage,
        n_encoder=config.n_encoder_layers,
        n_decoder=config.n_decoder_layers,
        title=f"{explorer.state.model}: {config.norm_position}-norm",
        compact=explorer.state.presentation,
    )


@dataclass(frozen=True)
class ShownStage:
    """The stage shown: its key, layer, head and row (the position computed), each within the model's range."""

    stage: str
    layer: int
    head: int
    row: int


def worked_step(explorer: Explorer) -> WorkedStep:
    """The current step of the explorer, worked through (with its masks, silenced heads and positions); shared by
    every user at the same step of the same sentence alike (`cache.SHARED`: a `WorkedStep` is only read)."""
    state, model = explorer.state, explorer.checkpoint.model
    target = [model.config.decoder_start_id, *explorer.decoding.output_ids]
    if explorer.finished:
        target = target[:-1]  # the step that wrote </s> is the last one there is
    chosen = explorer.decoding.output_ids[-1] if explorer.finished else None
    source = explorer.source_ids()
    key = ("worked", identity(model), tuple(source), tuple(target), chosen, state.switches())
    switches = {
        "causal_mask_on": state.causal_mask,
        "padding_mask_on": state.padding_mask,
        "silenced": state.silenced,
        "use_positions": state.positions,
    }
    return SHARED.get(key, lambda: work_through(model, source, target, **switches, chosen=chosen))


def shown_stage(explorer: Explorer, worked: WorkedStep) -> ShownStage:
    """The state's stage, layer, head and source position, each brought into this model's range."""
    state = explorer.state
    encoder = state.stage.startswith("encoder")
    rows = worked.source_embedding.ids.numel() if encoder else worked.target_embedding.ids.numel()
    row = min(state.stage_position, rows - 1) if encoder else rows - 1
    layer, head = layer_and_head(explorer)
    return ShownStage(state.stage, layer, head, row)


def layer_and_head(explorer: Explorer) -> tuple[int, int]:
    """The state's stage layer and head, brought into the range of the model (and of the stage's stack)."""
    state, config = explorer.state, explorer.checkpoint.model.config
    n_layers = config.n_encoder_layers if state.stage.startswith("encoder") else config.n_decoder_layers
    return min(state.stage_layer, max(n_layers - 1, 0)), min(state.stage_head, config.n_heads - 1)


def stage_view(explorer: Explorer, worked: WorkedStep | None = None) -> tuple[str, str]:
    """The chosen stage's tensors (HTML, `figures.tensor_panels_html`) and its formula and numbers (Markdown)."""
    worked = worked or worked_step(explorer)
    shown = shown_stage(explorer, worked)
    tokenizer = explorer.checkpoint.tokenizer
    source = [tokenizer.source_piece(int(i)) for i in worked.source_embedding.ids]
    target = [tokenizer.target_piece(int(i)) for i in worked.target_embedding.ids]
    family, _, part = shown.stage.partition(".")
    if shown.stage == "output":
        return output_view(worked.output, explorer, target[-1])
    if shown.stage == "layers":
        return layers_view(worked, explorer)
    if shown.stage == "stacks":
        return stacks_view(worked, source, target, min(explorer.state.stage_position, len(source) - 1))
    tokens = source if family == "encoder" else target
    layers = worked.encoder if family == "encoder" else worked.decoder
    if part == "embedding":
        embedding = worked.source_embedding if family == "encoder" else worked.target_embedding
        return embedding_view(embedding, tokens, shown.row, family)
    stage = getattr(layers[shown.layer], part)
    place = f"{family} layer {shown.layer}, position {shown.row} (“{tokens[shown.row]}”)"
    if isinstance(stage, AttentionStage):
        keys = source if part == "cross_attention" else tokens
        return attention_view(stage, tokens, keys, shown, place, cross=part == "cross_attention")
    if isinstance(stage, AddNormStage):
        return add_norm_view(stage, shown.row, place, shown.stage)
    return ffn_view(stage, shown.row, place)


# ---- each stage's view: its tensors (HTML) and its text (Markdown); `place` names the layer and position ----


def embedding_view(embedding: EmbeddingStage, tokens: list[str], row: int, family: str) -> tuple[str, str]:
    d_model = embedding.out.shape[-1]
    token, token_id = tokens[row], int(embedding.ids[row])
    embedding_row = embedding.token_vectors[row]
    scaled = embedding_row * embedding.scale
    panels = [
        TensorPanel(f"E[{token_id}]: the embedding row of “{token}”   (d_model,) = ({d_model},)", embedding_row),
        TensorPanel(f"× √d_model = × {embedding.scale:.2f}   (d_model,)", scaled),
        TensorPanel(f"PE[{row}]: the positional encoding of position {row}   (d_model,)", embedding.positions[row]),
        TensorPanel(f"x = E · √d_model + PE: the input of layer 0   (d_model,) = ({d_model},)", embedding.out[row]),
        TensorPanel(
            f"X: every position so far, the input of layer 0   (L, d_model) = {tuple(embedding.out.shape)}",
            embedding.out,
            y_labels=tokens,
            highlight_row=row,
        ),
    ]
    what = "source" if family == "encoder" else "target"
    text = (
        f"**{what.capitalize()} embedding** of “{html.escape(token)}” (id {token_id}) at position {row}:\n\n"
        f"`x = E[{token_id}] · √{d_model} + PE[{row}]`, a vector of d_model = {d_model} numbers. The embedding says "
        f"*which* piece, the positional encoding *where* it is (§3.4, §3.5). Its length: ‖E‖·√d = "
        f"{float(scaled.norm()):.2f}, ‖PE‖ = {float(embedding.positions[row].norm()):.2f}.\n\n"
        "→ **Next:** x is the input of the first layer's self-attention, and the residual stream that skips it."
    )
    return figures.tensor_panels_html(panels), text


def attention_view(
    attention: AttentionStage, queries: list[str], keys: list[str], shown: ShownStage, place: str, *, cross: bool
) -> tuple[str, str]:
    h, row = shown.head, shown.row
    n_heads, _, d_k = attention.q.shape
    d_model = attention.concat.shape[-1]
    scores, weights = attention.scores[h, row], attention.weights[h, row]
    masked = ~attention.allowed[row]
    key_name = "S" if cross else "L"
    keys_shape, values_shape = tuple(attention.k[h].shape), tuple(attention.v[h].shape)
    silenced_note = "" if attention.kept[h] else "   silenced: zeros"
    bars = {"kind": "bars", "x_labels": keys, "number_format": ".2f"}
    panels = [
        TensorPanel(f"x: the input at “{queries[row]}”   (d_model,) = ({d_model},)", attention.input[row]),
        TensorPanel(f"q = x W_Q + b_Q, head {h}   (d_k,) = ({d_k},)", attention.q[h, row]),
        TensorPanel(f"K: the keys, head {h}   ({key_name}, d_k) = {keys_shape}", attention.k[h], y_labels=keys),
        TensorPanel(f"V: the values, head {h}   ({key_name}, d_k) = {values_shape}", attention.v[h], y_labels=keys),
        TensorPanel(
            f"scores = q · k / √d_k = q · k / {d_k**0.5:.2f}, masked ones −∞   ({key_name},)",
            scores,
            masked=masked,
            **bars,
        ),
        TensorPanel(f"weights = softmax(scores)   ({key_name},)", weights, **bars),
        TensorPanel(f"head {h} = weights · V   (d_k,) = ({d_k},){silenced_note}", attention.heads[h, row]),
        TensorPanel(f"Concat(head 0 … head {n_heads - 1})   (H·d_k,) = ({d_model},)", attention.concat[row]),
        TensorPanel(f"output = Concat · W^O + b_O   (d_model,) = ({d_model},)", attention.out[row]),
    ]
    best = int(weights.argmax())
    silenced = [str(i) for i in range(n_heads) if not attention.kept[i]]
    masked_self = shown.stage.startswith("decoder")  # not read from `place`, which quotes a piece of the sentence
    kind = "Cross-attention" if cross else ("Masked self-attention" if masked_self else "Self-attention")
    lines = [
        f"**{kind}**, {html.escape(place)}, head {h} of {n_heads}:\n",
        "`scores = q Kᵀ / √d_k` → `weights = softmax(scores)` (a masked score is −∞, so its weight is 0) → "
        "`head = weights · V`; then `MultiHead = Concat(head_0, …, head_H−1) W^O` (§3.2).\n",
        f"The query of “{html.escape(queries[row])}” scores highest against “{html.escape(keys[best])}” "
        f"({float(scores[best]):.2f}), which gets weight {float(weights[best]):.2f}.",
    ]
    if int(masked.sum()):
        lines.append(f" {int(masked.sum())} of its {len(keys)} keys are masked.")
    if cross:
        lines.append(
            "\n\nK and V come from the encoder's output (the *memory*, S × d_model): they were computed once, at "
            "the first step of this translation, and every later step reads them from the decoder's cache."
        )
    if silenced:
        lines.append(f"\n\nSilenced heads of this layer: {', '.join(silenced)}: their output is zeros before W^O.")
    after = "cross-attention" if cross else "self-attention"
    lines.append(f"\n\n→ **Next:** the output joins the residual stream in *Add & Norm after {after}*.")
    return figures.tensor_panels_html(panels), "".join(lines)


def add_norm_view(add_norm: AddNormStage, row: int, place: str, stage: str = "") -> tuple[str, str]:
    """The residual connection and LayerNorm of the Add & Norm `stage` (a key of `ADD_NORM`), which follows a
    sub-layer: its tensors and its text."""
    d_model = add_norm.out.shape[-1]
    mean, variance = float(add_norm.mean[row]), float(add_norm.variance[row])
    norm_title = f"LayerNorm: (x − μ) / √(σ² + ε) · γ + β, with μ = {mean:.3f}, σ² = {variance:.3f}   (d_model,)"
    residual = add_norm.residual[row]
    gamma = TensorPanel("γ: LayerNorm's scale   (d_model,)", add_norm.gamma)
    beta = TensorPanel("β: LayerNorm's shift   (d_model,)", add_norm.beta)
    if add_norm.pre_norm:
        panels = [
            TensorPanel(f"x: the residual stream   (d_model,) = ({d_model},)", residual),
            TensorPanel(norm_title + ": the sub-layer's input", add_norm.normalised[row]),
            gamma,
            beta,
            TensorPanel("sublayer(LayerNorm(x))   (d_model,)", add_norm.sublayer[row]),
            TensorPanel("out = x + sublayer(LayerNorm(x))   (d_model,)", add_norm.out[row]),
        ]
        formula = "`out = x + Sublayer(LayerNorm(x))` (pre-norm: the stream itself is never normalised)"
    else:
        panels = [
            TensorPanel(f"x: the residual stream, the sub-layer's input   (d_model,) = ({d_model},)", residual),
            TensorPanel("sublayer(x)   (d_model,)", add_norm.sublayer[row]),
            TensorPanel("x + sublayer(x)   (d_model,)", add_norm.total[row]),
            gamma,
            beta,
            TensorPanel(norm_title + " = out", add_norm.out[row]),
        ]
        formula = "`out = LayerNorm(x + Sublayer(x))` (post-norm, as in the paper, §3.1)"
    after, then = ADD_NORM.get(stage, ("sub-layer", "the next sub-layer, or the next layer"))
    text = (
        f"**Residual connection and LayerNorm after the {after}**, {html.escape(place)}:\n\n{formula}: here "
        f"Sublayer is the {after}. The vector's mean is {mean:.3f} and its variance {variance:.3f}; LayerNorm "
        "brings them to 0 and 1, then scales each dimension by γ and shifts it by β (both learned).\n\n"
        f"→ **Next:** {then}."
    )
    return figures.tensor_panels_html(panels), text


def ffn_view(ffn: FeedForwardStage, row: int, place: str) -> tuple[str, str]:
    d_model, n_hidden = ffn.out.shape[-1], ffn.hidden.shape[-1]
    zeros = ffn.exactly_zero(row)
    activation = ffn.activation
    panels = [
        TensorPanel(f"x: the input   (d_model,) = ({d_model},)", ffn.input[row]),
        TensorPanel(f"x W_1 + b_1   (d_ff,) = ({n_hidden},)", ffn.pre_activation[row]),
        TensorPanel(f"{activation}(x W_1 + b_1): {zeros} of {n_hidden} exactly zero   (d_ff,)", ffn.hidden[row]),
        TensorPanel(f"output = {activation}(…) W_2 + b_2   (d_model,) = ({d_model},)", ffn.out[row]),
    ]
    cut = " (ReLU cuts every negative one)" if activation == "relu" else ""
    text = (
        f"**Position-wise feed-forward network**, {html.escape(place)}:\n\n`FFN(x) = {activation}(x W_1 + "
        f"b_1) W_2 + b_2` (§3.3): up to d_ff = {n_hidden} dimensions, a nonlinearity, back down to {d_model}. Here "
        f"{zeros} of the {n_hidden} hidden activations are exactly zero{cut}.\n\n"
        "→ **Next:** *Add & Norm after feed forward*, then the next layer."
    )
    return figures.tensor_panels_html(panels), text


def output_view(output: OutputStage, explorer: Explorer, last: str) -> tuple[str, str]:
    tokenizer, model = explorer.checkpoint.tokenizer, explorer.checkpoint.model
    config = model.config
    ids, probabilities = output.top(TOP)
    labels = [tokenizer.target_piece(int(i)) for i in ids]
    d_model, n_vocab = output.final.numel(), config.tgt_vocab_size
    panels = [TensorPanel(f"y: the last layer's output at “{last}”   (d_model,) = ({d_model},)", output.final_input)]
    if config.norm_position == "pre":
        panels.append(TensorPanel("LayerNorm(y): the final LayerNorm of a pre-norm stack   (d_model,)", output.final))
    bias = " + b" if model.logits_bias is not None else ""
    panels += [
        TensorPanel(
            f"logits = y W_outᵀ{bias}: the {TOP} highest of V = {n_vocab:,}   (V,)",
            output.logits[ids],
            kind="bars",
            x_labels=labels,
            number_format=".2f",
        ),
        TensorPanel(f"p = softmax(logits): the same {TOP}   (V,)", probabilities, kind="bars", x_labels=labels),
    ]
    tied = "the target embedding matrix itself (tied, §3.4)" if config.tie_output else "its own matrix (untied)"
    text = (
        f"**Linear + softmax** at “{html.escape(last)}”:\n\n`logits = y W_outᵀ`, one score for each of the "
        f"{n_vocab:,} pieces of the vocabulary; W_out is {tied}. `p = softmax(logits)`. The most probable next "
        f"piece is “{html.escape(labels[0])}” ({float(probabilities[0]):.1%}): the top of the next-token chart."
    )
    return figures.tensor_panels_html(panels), text


def layers_view(worked: WorkedStep, explorer: Explorer) -> tuple[str, str]:
    tokenizer = explorer.checkpoint.tokenizer
    name = tokenizer.target_piece(worked.chosen)
    predictions = worked.layer_predictions
    panels = [
        TensorPanel(
            f"p(“{name}”) if each layer were the last   (layers,)",
            [prediction.chosen_probability for prediction in predictions],
            kind="bars",
            x_labels=[f"layer {prediction.layer}" for prediction in predictions],
            number_format=".2f",
        ),
    ]

    def top(prediction) -> str:
        """The layer's most probable pieces and their probabilities: "▁drei 84%, ▁zwei 9%, …"."""
        pairs = zip(prediction.top_ids, prediction.top_probabilities, strict=True)
        return ", ".join(f"{html.escape(tokenizer.target_piece(i))} {p:.0%}" for i, p in pairs)

    rows = "\n".join(f"| {row.layer} | {top(row)} | {row.chosen_probability:.1%} |" for row in predictions)
    final_norm = " (with the final LayerNorm)" if worked.pre_norm else ""
    text = (
        "**What each layer would say** (“when does the model know?”): each decoder layer's output at the last "
        f"position, put through the final projection as if no layer came after it{final_norm}"
        f".\n\n| layer | top 3 | p(“{html.escape(name)}”) |\n|---|---|---|\n{rows}"
    )
    return figures.tensor_panels_html(panels), text


def stream_closeness(worked: WorkedStep, stack: str, row: int) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """One position's residual stream up a stack: its points' names, the (points, d) matrix, and each point's
    cosine similarity with the last one (where the vector ends)."""
    stream = worked.residual_stream(stack, row)
    matrix = torch.stack([vector for _, vector in stream])
    return [name for name, _ in stream], matrix, torch.nn.functional.cosine_similarity(matrix, matrix[-1:], dim=-1)


def stacks_view(worked: WorkedStep, source: list[str], target: list[str], source_row: int) -> tuple[str, str]:
    """One source position's vector up the encoder and the current target position's up the decoder, with how
    close each point of the way is to where the vector ends (cosine similarity)."""
    panels, ends = [], []
    for stack, tokens, row in (("encoder", source, source_row), ("decoder", target, len(target) - 1)):
        labels, matrix, closeness = stream_closeness(worked, stack, row)
        shape = f"({len(labels)}, d_model) = {tuple(matrix.shape)}"
        panels += [
            TensorPanel(f"the {stack} stream at “{tokens[row]}”, bottom to top   {shape}", matrix, y_labels=labels),
            TensorPanel(
                f"cosine similarity with where it ends ({labels[-1]})   ({len(labels)},)",
                closeness,
                kind="bars",
                x_labels=labels,
                number_format=".2f",
            ),
        ]
        ends.append((tokens[row], labels, closeness))
    (word, _, encoder), (now, labels, decoder) = ends
    first = next((i for i, c in enumerate(decoder.tolist()) if c >= 0.9), len(labels) - 1)
    n_layers = len(worked.decoder)
    norm = "adds its output to it (§3.1)" if worked.pre_norm else "adds its output to it, and LayerNorm rescales it"
    text = (
        f"**The stacks**: N = {n_layers} layers of the same shape, each with its own weights, pass one vector per "
        f"position upward, the *residual stream*: each sub-layer reads it and {norm}. Every row below is that vector "
        "at one point of the way (“L1 cross-attn”: after layer 1's cross-attention).\n\n"
        f"The vector of “{html.escape(now)}” starts as its embedding, with cosine similarity "
        f"{float(decoder[0]):.2f} (1 = the same direction, 0 = unrelated) to the vector that leaves the decoder; it "
        "is past 0.9 from "
        f"*{html.escape(labels[first])}* on. In the encoder, the vector of “{html.escape(word)}” goes from "
        f"{float(encoder[0]):.2f} to 1: its last row is the memory that every decoder layer's cross-attention "
        "reads.\n\n→ **Next:** the decoder's last vector goes to the *Linear + softmax*."
    )
    return figures.tensor_panels_html(panels), text
