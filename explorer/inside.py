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
)

from . import figures
from .figures import TensorPanel
from .i18n import N_, _
from .session import Explorer
from .stages import DECODER_BLOCKS, ENCODER_BLOCKS, STAGES, Block

TOP = 10  # candidates shown at the output
# The sub-layer each Add & Norm follows, and what reads its output, for the stage's text (translated there).
ADD_NORM = {
    "encoder.self_attention_add_norm": (
        N_("self-attention"),
        N_("the *Feed forward* network, at each position on its own"),
    ),
    "encoder.ffn_add_norm": (
        N_("feed-forward network"),
        N_(
            "the next encoder layer; after the last one, it is the memory that every decoder layer's "
            "cross-attention reads"
        ),
    ),
    "decoder.self_attention_add_norm": (
        N_("masked self-attention"),
        N_("the *Cross-attention*, which reads the memory"),
    ),
    "decoder.cross_attention_add_norm": (N_("cross-attention"), N_("the *Feed forward* network")),
    "decoder.ffn_add_norm": (
        N_("feed-forward network"),
        N_("the next decoder layer; after the last one, the *Linear + softmax*"),
    ),
}
# Each stage's name in the list beside the diagram: its block's name on one line, with its stack's (the page shows
# them translated, as fixed text).
CHOICES = {
    "encoder.embedding": N_("Encoder · Input embedding + positions"),
    "encoder.self_attention": N_("Encoder · Self-attention"),
    "encoder.self_attention_add_norm": N_("Encoder · Add & Norm after self-attention"),
    "encoder.ffn": N_("Encoder · Feed forward"),
    "encoder.ffn_add_norm": N_("Encoder · Add & Norm after feed forward"),
    "decoder.embedding": N_("Decoder · Output embedding + positions"),
    "decoder.self_attention": N_("Decoder · Masked self-attention"),
    "decoder.self_attention_add_norm": N_("Decoder · Add & Norm after self-attention"),
    "decoder.cross_attention": N_("Decoder · Cross-attention"),
    "decoder.cross_attention_add_norm": N_("Decoder · Add & Norm after cross-attention"),
    "decoder.ffn": N_("Decoder · Feed forward"),
    "decoder.ffn_add_norm": N_("Decoder · Add & Norm after feed forward"),
    "stacks": N_("The stacks: residual stream"),
    "output": N_("Linear + softmax"),
    "layers": N_("What each layer would say"),
}
# A pre-norm model's Add & Norm blocks (by their post-norm label): it adds, its LayerNorm came first.
PRE_NORM = {
    "Add & Norm\nafter self-attention": N_("Add\nafter self-attention\n(LayerNorm first)"),
    "Add & Norm\nafter cross-attention": N_("Add\nafter cross-attention\n(LayerNorm first)"),
    "Add & Norm\nafter feed forward": N_("Add\nafter feed forward\n(LayerNorm first)"),
}
# The points of the residual stream (`WorkedStep.residual_stream`), as the Stacks stage names them.
STREAM_POINTS = {
    "embedding": N_("embedding"),
    "final norm": N_("final norm"),
    "final norm: memory": N_("final norm: memory"),
    "self-attn": N_("L{layer} self-attn"),
    "cross-attn": N_("L{layer} cross-attn"),
    "FFN": N_("L{layer} FFN"),
}


def stage_choices() -> list[tuple[str, str]]:
    """(label, key) of every stage, for the control beside the diagram, in the diagram's order; no two alike. The
    labels are English: the page shows them translated."""
    return [(CHOICES[key], key) for key in STAGES]


def _blocks(blocks: tuple[Block, ...], pre_norm: bool) -> list[Block]:
    """The diagram's blocks; a pre-norm model adds (not normalises) after each sub-layer: its LayerNorm comes first."""
    if not pre_norm:
        return list(blocks)

    def added(block: Block) -> Block:  # "Add & Norm\nafter X" -> "Add\nafter X\n(LayerNorm first)"
        return Block(block.key, PRE_NORM[block.label], block.stack)

    return [added(b) if b.key.endswith("add_norm") else b for b in blocks]


def diagram(explorer: Explorer, stage: str) -> figures.Figure:
    """The paper's Figure 1 for this model, its labels in the user's language, the chosen stage's block filled; in
    the presentation layout, drawn for its narrow column (`compact`)."""
    config = explorer.checkpoint.model.config
    pre = config.norm_position == "pre"
    decoder = _blocks(DECODER_BLOCKS, pre)
    if pre:  # the final LayerNorm of a pre-norm stack, before the output projection
        decoder[-2] = Block("output", N_("Final LayerNorm,\nlinear + softmax"), "")
    title = _("{model}: pre-norm") if pre else _("{model}: post-norm")
    return figures.architecture_diagram(
        _translated(_blocks(ENCODER_BLOCKS, pre)),
        _translated(decoder),
        selected=stage,
        n_encoder=config.n_encoder_layers,
        n_decoder=config.n_decoder_layers,
        title=title.format(model=explorer.state.model),
        compact=explorer.state.presentation,
    )


def _translated(blocks: list[Block]) -> list[Block]:
    """The blocks with their labels in the user's language."""
    return [Block(block.key, _(block.label), block.stack) for block in blocks]


@dataclass(frozen=True)
class ShownStage:
    """The stage shown: its key, layer, head and row (the position computed), each within the model's range."""

    stage: str
    layer: int
    head: int
    row: int


def worked_step(explorer: Explorer) -> WorkedStep:
    """The current step of the explorer, worked through (`Explorer.worked_step`)."""
    return explorer.worked_step()


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
    """The chosen stage's tensors (HTML, `figures.tensor_panels_html`) and its formula and numbers (Markdown), in
    the user's language."""
    worked = worked or worked_step(explorer)
    shown = shown_stage(explorer, worked)
    tokenizer = explorer.checkpoint.tokenizer
    source = [tokenizer.source_piece(int(i)) for i in worked.source_embedding.ids]
    target = [tokenizer.target_piece(int(i)) for i in worked.target_embedding.ids]
    family, _dot, part = shown.stage.partition(".")
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
    if family == "encoder":
        where = _("encoder layer {layer}, position {row} (“{token}”)")
    else:
        where = _("decoder layer {layer}, position {row} (“{token}”)")
    place = where.format(layer=shown.layer, row=shown.row, token=tokens[shown.row])
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
        TensorPanel(
            _("E[{token_id}]: the embedding row of “{token}”   (d_model,) = ({d_model},)").format(
                token_id=token_id, token=token, d_model=d_model
            ),
            embedding_row,
        ),
        TensorPanel(f"× √d_model = × {embedding.scale:.2f}   (d_model,)", scaled),
        TensorPanel(
            _("PE[{row}]: the positional encoding of position {row}   (d_model,)").format(row=row),
            embedding.positions[row],
        ),
        TensorPanel(
            _("x = E · √d_model + PE: the input of layer 0   (d_model,) = ({d_model},)").format(d_model=d_model),
            embedding.out[row],
        ),
        TensorPanel(
            _("X: every position so far, the input of layer 0   (L, d_model) = {shape}").format(
                shape=tuple(embedding.out.shape)
            ),
            embedding.out,
            y_labels=tokens,
            highlight_row=row,
        ),
    ]
    if family == "encoder":
        heading = _("**Source embedding** of “{token}” (id {token_id}) at position {row}:")
    else:
        heading = _("**Target embedding** of “{token}” (id {token_id}) at position {row}:")
    formula = _(
        "`x = E[{token_id}] · √{d_model} + PE[{row}]`, a vector of d_model = {d_model} numbers. The embedding says "
        "*which* piece, the positional encoding *where* it is (§3.4, §3.5). Its length: ‖E‖·√d = "
        "{embedding_norm:.2f}, ‖PE‖ = {position_norm:.2f}."
    )
    text = "\n\n".join(
        [
            heading.format(token=html.escape(token), token_id=token_id, row=row),
            formula.format(
                token_id=token_id,
                d_model=d_model,
                row=row,
                embedding_norm=float(scaled.norm()),
                position_norm=float(embedding.positions[row].norm()),
            ),
            _("→ **Next:** x is the input of the first layer's self-attention, and the residual stream that skips it."),
        ]
    )
    return figures.tensor_panels_html(panels), text


def attention_view(
    attention: AttentionStage, queries: list[str], keys: list[str], shown: ShownStage, place: str, *, cross: bool
) -> tuple[str, str]:
    h, row = shown.head, shown.row
    n_heads, _rows, d_k = attention.q.shape
    d_model = attention.concat.shape[-1]
    scores, weights = attention.scores[h, row], attention.weights[h, row]
    masked = ~attention.allowed[row]
    key_name = "S" if cross else "L"
    keys_shape, values_shape = tuple(attention.k[h].shape), tuple(attention.v[h].shape)
    if attention.kept[h]:
        head_title = _("head {h} = weights · V   (d_k,) = ({d_k},)")
    else:
        head_title = _("head {h} = weights · V   (d_k,) = ({d_k},)   silenced: zeros")
    bars = {"kind": "bars", "x_labels": keys, "number_format": ".2f"}
    panels = [
        TensorPanel(
            _("x: the input at “{token}”   (d_model,) = ({d_model},)").format(token=queries[row], d_model=d_model),
            attention.input[row],
        ),
        TensorPanel(_("q = x W_Q + b_Q, head {h}   (d_k,) = ({d_k},)").format(h=h, d_k=d_k), attention.q[h, row]),
        TensorPanel(
            _("K: the keys, head {h}   ({keys}, d_k) = {shape}").format(h=h, keys=key_name, shape=keys_shape),
            attention.k[h],
            y_labels=keys,
        ),
        TensorPanel(
            _("V: the values, head {h}   ({keys}, d_k) = {shape}").format(h=h, keys=key_name, shape=values_shape),
            attention.v[h],
            y_labels=keys,
        ),
        TensorPanel(
            _("scores = q · k / √d_k = q · k / {root:.2f}, masked ones −∞   ({keys},)").format(
                root=d_k**0.5, keys=key_name
            ),
            scores,
            masked=masked,
            **bars,
        ),
        TensorPanel(f"weights = softmax(scores)   ({key_name},)", weights, **bars),
        TensorPanel(head_title.format(h=h, d_k=d_k), attention.heads[h, row]),
        TensorPanel(f"Concat(head 0 … head {n_heads - 1})   (H·d_k,) = ({d_model},)", attention.concat[row]),
        TensorPanel(f"output = Concat · W^O + b_O   (d_model,) = ({d_model},)", attention.out[row]),
    ]
    return figures.tensor_panels_html(panels), attention_text(attention, queries, keys, shown, place, cross=cross)


def attention_text(
    attention: AttentionStage, queries: list[str], keys: list[str], shown: ShownStage, place: str, *, cross: bool
) -> str:
    """The attention stage's text: its formula, where this query looks most, its masked keys, its silenced heads."""
    h, row = shown.head, shown.row
    n_heads = attention.q.shape[0]
    scores, weights = attention.scores[h, row], attention.weights[h, row]
    n_masked = int((~attention.allowed[row]).sum())
    best = int(weights.argmax())
    silenced = [str(i) for i in range(n_heads) if not attention.kept[i]]
    if cross:
        heading = _("**Cross-attention**, {place}, head {h} of {n_heads}:")
    elif shown.stage.startswith("decoder"):  # not read from `place`, which quotes a piece of the sentence
        heading = _("**Masked self-attention**, {place}, head {h} of {n_heads}:")
    else:
        heading = _("**Self-attention**, {place}, head {h} of {n_heads}:")
    best_key = _("The query of “{query}” scores highest against “{key}” ({score:.2f}), which gets weight {weight:.2f}.")
    lines = [
        heading.format(place=html.escape(place), h=h, n_heads=n_heads) + "\n",
        _(
            "`scores = q Kᵀ / √d_k` → `weights = softmax(scores)` (a masked score is −∞, so its weight is 0) → "
            "`head = weights · V`; then `MultiHead = Concat(head_0, …, head_H−1) W^O` (§3.2)."
        )
        + "\n",
        best_key.format(
            query=html.escape(queries[row]),
            key=html.escape(keys[best]),
            score=float(scores[best]),
            weight=float(weights[best]),
        ),
    ]
    if n_masked:
        lines.append(" " + _("{masked} of its {n} keys are masked.").format(masked=n_masked, n=len(keys)))
    if cross:
        lines.append(
            "\n\n"
            + _(
                "K and V come from the encoder's output (the *memory*, S × d_model): they were computed once, at "
                "the first step of this translation, and every later step reads them from the decoder's cache."
            )
        )
    if silenced:
        lines.append(
            "\n\n"
            + _("Silenced heads of this layer: {heads}: their output is zeros before W^O.").format(
                heads=", ".join(silenced)
            )
        )
    if cross:
        after = _("→ **Next:** the output joins the residual stream in *Add & Norm after cross-attention*.")
    else:
        after = _("→ **Next:** the output joins the residual stream in *Add & Norm after self-attention*.")
    lines.append("\n\n" + after)
    return "".join(lines)


def add_norm_view(add_norm: AddNormStage, row: int, place: str, stage: str = "") -> tuple[str, str]:
    """The residual connection and LayerNorm of the Add & Norm `stage` (a key of `ADD_NORM`), which follows a
    sub-layer: its tensors and its text."""
    d_model = add_norm.out.shape[-1]
    mean, variance = float(add_norm.mean[row]), float(add_norm.variance[row])
    residual = add_norm.residual[row]
    gamma = TensorPanel(_("γ: LayerNorm's scale   (d_model,)"), add_norm.gamma)
    beta = TensorPanel(_("β: LayerNorm's shift   (d_model,)"), add_norm.beta)
    after, then = ADD_NORM.get(stage, (N_("sub-layer"), N_("the next sub-layer, or the next layer")))
    after, then = _(after), _(then)
    if add_norm.pre_norm:
        norm_title = _(
            "LayerNorm: (x − μ) / √(σ² + ε) · γ + β, with μ = {mean:.3f}, σ² = {variance:.3f}   (d_model,): the "
            "sub-layer's input"
        )
        panels = [
            TensorPanel(_("x: the residual stream   (d_model,) = ({d_model},)").format(d_model=d_model), residual),
            TensorPanel(norm_title.format(mean=mean, variance=variance), add_norm.normalised[row]),
            gamma,
            beta,
            TensorPanel("sublayer(LayerNorm(x))   (d_model,)", add_norm.sublayer[row]),
            TensorPanel("out = x + sublayer(LayerNorm(x))   (d_model,)", add_norm.out[row]),
        ]
        explained = _(
            "`out = x + Sublayer(LayerNorm(x))` (pre-norm: the stream itself is never normalised): here Sublayer is "
            "the {sublayer}. The vector's mean is {mean:.3f} and its variance {variance:.3f}; LayerNorm brings them "
            "to 0 and 1, then scales each dimension by γ and shifts it by β (both learned)."
        )
    else:
        norm_title = _(
            "LayerNorm: (x − μ) / √(σ² + ε) · γ + β, with μ = {mean:.3f}, σ² = {variance:.3f}   (d_model,) = out"
        )
        panels = [
            TensorPanel(
                _("x: the residual stream, the sub-layer's input   (d_model,) = ({d_model},)").format(d_model=d_model),
                residual,
            ),
            TensorPanel("sublayer(x)   (d_model,)", add_norm.sublayer[row]),
            TensorPanel("x + sublayer(x)   (d_model,)", add_norm.total[row]),
            gamma,
            beta,
            TensorPanel(norm_title.format(mean=mean, variance=variance), add_norm.out[row]),
        ]
        explained = _(
            "`out = LayerNorm(x + Sublayer(x))` (post-norm, as in the paper, §3.1): here Sublayer is the {sublayer}. "
            "The vector's mean is {mean:.3f} and its variance {variance:.3f}; LayerNorm brings them to 0 and 1, then "
            "scales each dimension by γ and shifts it by β (both learned)."
        )
    text = "\n\n".join(
        [
            _("**Residual connection and LayerNorm after the {sublayer}**, {place}:").format(
                sublayer=after, place=html.escape(place)
            ),
            explained.format(sublayer=after, mean=mean, variance=variance),
            _("→ **Next:** {then}.").format(then=then),
        ]
    )
    return figures.tensor_panels_html(panels), text


def ffn_view(ffn: FeedForwardStage, row: int, place: str) -> tuple[str, str]:
    d_model, n_hidden = ffn.out.shape[-1], ffn.hidden.shape[-1]
    zeros = ffn.exactly_zero(row)
    activation = ffn.activation
    panels = [
        TensorPanel(_("x: the input   (d_model,) = ({d_model},)").format(d_model=d_model), ffn.input[row]),
        TensorPanel(f"x W_1 + b_1   (d_ff,) = ({n_hidden},)", ffn.pre_activation[row]),
        TensorPanel(
            _("{activation}(x W_1 + b_1): {zeros} of {n_hidden} exactly zero   (d_ff,)").format(
                activation=activation, zeros=zeros, n_hidden=n_hidden
            ),
            ffn.hidden[row],
        ),
        TensorPanel(f"output = {activation}(…) W_2 + b_2   (d_model,) = ({d_model},)", ffn.out[row]),
    ]
    if activation == "relu":
        explained = _(
            "`FFN(x) = {activation}(x W_1 + b_1) W_2 + b_2` (§3.3): up to d_ff = {n_hidden} dimensions, a "
            "nonlinearity, back down to {d_model}. Here {zeros} of the {n_hidden} hidden activations are exactly "
            "zero (ReLU cuts every negative one)."
        )
    else:
        explained = _(
            "`FFN(x) = {activation}(x W_1 + b_1) W_2 + b_2` (§3.3): up to d_ff = {n_hidden} dimensions, a "
            "nonlinearity, back down to {d_model}. Here {zeros} of the {n_hidden} hidden activations are exactly "
            "zero."
        )
    text = "\n\n".join(
        [
            _("**Position-wise feed-forward network**, {place}:").format(place=html.escape(place)),
            explained.format(activation=activation, n_hidden=n_hidden, d_model=d_model, zeros=zeros),
            _("→ **Next:** *Add & Norm after feed forward*, then the next layer."),
        ]
    )
    return figures.tensor_panels_html(panels), text


def output_view(output: OutputStage, explorer: Explorer, last: str) -> tuple[str, str]:
    tokenizer, model = explorer.checkpoint.tokenizer, explorer.checkpoint.model
    config = model.config
    ids, probabilities = output.top(TOP)
    labels = [tokenizer.target_piece(int(i)) for i in ids]
    d_model, n_vocab = output.final.numel(), config.tgt_vocab_size
    panels = [
        TensorPanel(
            _("y: the last layer's output at “{token}”   (d_model,) = ({d_model},)").format(
                token=last, d_model=d_model
            ),
            output.final_input,
        )
    ]
    if config.norm_position == "pre":
        panels.append(
            TensorPanel(_("LayerNorm(y): the final LayerNorm of a pre-norm stack   (d_model,)"), output.final)
        )
    bias = " + b" if model.logits_bias is not None else ""
    panels += [
        TensorPanel(
            _("logits = y W_outᵀ{bias}: the {top} highest of V = {n_vocab:,}   (V,)").format(
                bias=bias, top=TOP, n_vocab=n_vocab
            ),
            output.logits[ids],
            kind="bars",
            x_labels=labels,
            number_format=".2f",
        ),
        TensorPanel(
            _("p = softmax(logits): the same {top}   (V,)").format(top=TOP),
            probabilities,
            kind="bars",
            x_labels=labels,
        ),
    ]
    if config.tie_output:
        explained = _(
            "`logits = y W_outᵀ`, one score for each of the {n_vocab:,} pieces of the vocabulary; W_out is the "
            "target embedding matrix itself (tied, §3.4). `p = softmax(logits)`. The most probable next piece is "
            "“{piece}” ({probability:.1%}): the top of the next-token chart."
        )
    else:
        explained = _(
            "`logits = y W_outᵀ`, one score for each of the {n_vocab:,} pieces of the vocabulary; W_out is its own "
            "matrix (untied). `p = softmax(logits)`. The most probable next piece is “{piece}” "
            "({probability:.1%}): the top of the next-token chart."
        )
    text = "\n\n".join(
        [
            _("**Linear + softmax** at “{token}”:").format(token=html.escape(last)),
            explained.format(n_vocab=n_vocab, piece=html.escape(labels[0]), probability=float(probabilities[0])),
        ]
    )
    return figures.tensor_panels_html(panels), text


def layers_view(worked: WorkedStep, explorer: Explorer) -> tuple[str, str]:
    tokenizer = explorer.checkpoint.tokenizer
    name = tokenizer.target_piece(worked.chosen)
    predictions = worked.layer_predictions
    panels = [
        TensorPanel(
            _("p(“{token}”) if each layer were the last   (layers,)").format(token=name),
            [prediction.chosen_probability for prediction in predictions],
            kind="bars",
            x_labels=[_("layer {layer}").format(layer=prediction.layer) for prediction in predictions],
            number_format=".2f",
        ),
    ]

    def top(prediction) -> str:
        """The layer's most probable pieces and their probabilities: "▁drei 84%, ▁zwei 9%, …"."""
        pairs = zip(prediction.top_ids, prediction.top_probabilities, strict=True)
        return ", ".join(f"{html.escape(tokenizer.target_piece(i))} {p:.0%}" for i, p in pairs)

    rows = "\n".join(f"| {row.layer} | {top(row)} | {row.chosen_probability:.1%} |" for row in predictions)
    if worked.pre_norm:
        intro = _(
            "**What each layer would say** (“when does the model know?”): each decoder layer's output at the last "
            "position, put through the final projection as if no layer came after it (with the final LayerNorm)."
        )
    else:
        intro = _(
            "**What each layer would say** (“when does the model know?”): each decoder layer's output at the last "
            "position, put through the final projection as if no layer came after it."
        )
    header = _("| layer | top 3 | p(“{token}”) |").format(token=html.escape(name))
    text = f"{intro}\n\n{header}\n|---|---|---|\n{rows}"
    return figures.tensor_panels_html(panels), text


def stream_closeness(worked: WorkedStep, stack: str, row: int) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """One position's residual stream up a stack: its points' names, the (points, d) matrix, and each point's
    cosine similarity with the last one (where the vector ends)."""
    stream = worked.residual_stream(stack, row)
    names = [name for name, _vector in stream]
    matrix = torch.stack([vector for _name, vector in stream])
    return names, matrix, torch.nn.functional.cosine_similarity(matrix, matrix[-1:], dim=-1)


def point_name(name: str) -> str:
    """A point of the residual stream (`stream_closeness`: "embedding", "L1 cross-attn"), in the user's language."""
    if name in STREAM_POINTS:
        return _(STREAM_POINTS[name])
    layer, _space, short = name.partition(" ")
    if layer.startswith("L") and layer[1:].isdigit() and short in STREAM_POINTS:
        return _(STREAM_POINTS[short]).format(layer=int(layer[1:]))
    return name


def stacks_view(worked: WorkedStep, source: list[str], target: list[str], source_row: int) -> tuple[str, str]:
    """One source position's vector up the encoder and the current target position's up the decoder, with how
    close each point of the way is to where the vector ends (cosine similarity)."""
    panels, ends = [], []
    for stack, tokens, row in (("encoder", source, source_row), ("decoder", target, len(target) - 1)):
        names, matrix, closeness = stream_closeness(worked, stack, row)
        labels = [point_name(name) for name in names]
        shape = f"({len(labels)}, d_model) = {tuple(matrix.shape)}"
        if stack == "encoder":
            title = _("the encoder stream at “{token}”, bottom to top   {shape}")
        else:
            title = _("the decoder stream at “{token}”, bottom to top   {shape}")
        panels += [
            TensorPanel(title.format(token=tokens[row], shape=shape), matrix, y_labels=labels),
            TensorPanel(
                _("cosine similarity with where it ends ({point})   ({points},)").format(
                    point=labels[-1], points=len(labels)
                ),
                closeness,
                kind="bars",
                x_labels=labels,
                number_format=".2f",
            ),
        ]
        ends.append((tokens[row], labels, closeness))
    (word, _labels, encoder), (now, labels, decoder) = ends
    first = next((i for i, c in enumerate(decoder.tolist()) if c >= 0.9), len(labels) - 1)
    return figures.tensor_panels_html(panels), stacks_text(worked, (word, encoder), (now, labels, decoder), first)


def stacks_text(
    worked: WorkedStep,
    encoder_end: tuple[str, torch.Tensor],
    decoder_end: tuple[str, list[str], torch.Tensor],
    first: int,
) -> str:
    """The Stacks stage's text: the residual stream, and how soon each stack's vector points where it ends
    (`first`: the decoder's first point past 0.9)."""
    (word, encoder), (now, labels, decoder) = encoder_end, decoder_end
    if worked.pre_norm:
        stacks = _(
            "**The stacks**: N = {n_layers} layers of the same shape, each with its own weights, pass one vector per "
            "position upward, the *residual stream*: each sub-layer reads it and adds its output to it (§3.1). Every "
            "row below is that vector at one point of the way (“L1 cross-attn”: after layer 1's cross-attention)."
        )
    else:
        stacks = _(
            "**The stacks**: N = {n_layers} layers of the same shape, each with its own weights, pass one vector per "
            "position upward, the *residual stream*: each sub-layer reads it and adds its output to it, and "
            "LayerNorm rescales it. Every row below is that vector at one point of the way (“L1 cross-attn”: after "
            "layer 1's cross-attention)."
        )
    closeness = _(
        "The vector of “{token}” starts as its embedding, with cosine similarity {start:.2f} (1 = the same "
        "direction, 0 = unrelated) to the vector that leaves the decoder; it is past 0.9 from *{point}* on. In the "
        "encoder, the vector of “{source_token}” goes from {encoder_start:.2f} to 1: its last row is the memory that "
        "every decoder layer's cross-attention reads."
    )
    return "\n\n".join(
        [
            stacks.format(n_layers=len(worked.decoder)),
            closeness.format(
                token=html.escape(now),
                start=float(decoder[0]),
                point=html.escape(labels[first]),
                source_token=html.escape(word),
                encoder_start=float(encoder[0]),
            ),
            _("→ **Next:** the decoder's last vector goes to the *Linear + softmax*."),
        ]
    )
