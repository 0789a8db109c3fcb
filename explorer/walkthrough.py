"""The guided classroom walkthrough: the paper's path from tokens to next-token probabilities, on the live model.

Each section pairs a formula with a figure computed from the user's own sentence and model, so a teacher can
go top to bottom with the class.
"""

from __future__ import annotations

import plotly.graph_objects as go
import torch

from . import figures, render
from .session import Explorer

SECTIONS = [
    (
        "1 · Tokens",
        "The sentence is cut into **sentencepiece** pieces (`▁` marks the start of a word) and each piece becomes "
        "an integer id. The encoder's input always ends with `</s>`.",
    ),
    (
        "2 · Embeddings + positions",
        "Each id selects a row of the embedding matrix, multiplied by $\\sqrt{d_{model}}$ (§3.4). Attention itself "
        "ignores order, so a **positional encoding** is added (§3.5): "
        "$PE_{(pos,2i)} = \\sin(pos / 10000^{2i/d_{model}})$, $PE_{(pos,2i+1)} = \\cos(pos / 10000^{2i/d_{model}})$. "
        "The figure shows what enters the first encoder layer: one row per token, one column per dimension.",
    ),
    (
        "3 · Self-attention",
        "Every token asks a **query** and offers a **key** and a **value**: "
        "$\\mathrm{Attention}(Q, K, V) = \\mathrm{softmax}(QK^\\top / \\sqrt{d_k})\\,V$ (§3.2.1). Each row below is "
        "one query's weights over all keys (rows sum to 1): encoder layer 0, averaged over its heads. "
        "Multi-head attention runs several of these in parallel on smaller projections and concatenates them.",
    ),
    (
        "4 · Masks",
        "The decoder must not peek at the words it has not written yet: the **causal mask** sets the scores above "
        "the diagonal to $-\\infty$ before the softmax, so their weights are exactly 0 (§3.2.3). The **padding mask** "
        "does the same for `<pad>` positions of shorter sentences in a batch. Switch them off in *Masks and heads*.",
    ),
    (
        "5 · Cross-attention",
        "In every decoder layer the target positions query the encoder's output: queries from the decoder, keys and "
        "values from the source. This is where the translation looks at the source sentence (last decoder layer, "
        "averaged over heads).",
    ),
    (
        "6 · Next-token probabilities",
        "The decoder's last vector is multiplied by the (shared) embedding matrix and a softmax turns the scores "
        "into probabilities over the whole vocabulary: "
        "$P(y_t \\mid y_{<t}, x) = \\mathrm{softmax}(h_t E^\\top)$. Greedy decoding takes the most probable token; "
        "press **Step** to add it and watch every figure grow by one row.",
    ),
]


def embedding_figure(explorer: Explorer) -> go.Figure:
    """What enters the first encoder layer: token embedding × √d_model + positional encoding, (S, d)."""
    model = explorer.checkpoint.model
    ids = torch.tensor([explorer.source_ids()], device=next(model.parameters()).device)
    with torch.no_grad():
        x = model.src_embed(ids, use_positions=explorer.state.positions)[0].float().cpu()
    tokens = [explorer.checkpoint.tokenizer.source_piece(int(i)) for i in ids[0]]
    scale = float(x.abs().max()) or 1.0
    figure = figures.positional_heatmap((x / scale).numpy(), title="Embedding × √d_model + position, scaled to ±1")
    figure.update_yaxes(
        title_text="source token",
        tickmode="array",
        tickvals=list(range(len(tokens))),
        ticktext=figures.axis_labels(tokens),
    )
    return figure


def walkthrough(explorer: Explorer) -> list:
    """Markdown and figures for the six sections, in order: [md1, fig1 | html1, md2, fig2, …]."""
    views = explorer.views()
    current = len(views.target_tokens) - 1
    return [
        figures.token_chips_html(views.source_tokens, explorer.source_ids()),
        embedding_figure(explorer),
        figures.attention_heatmap(
            views.encoder[0].mean(0).numpy(), views.source_tokens, views.source_tokens,
            title="Encoder self-attention, layer 0, head average", family="encoder",
            masked=render.masked_cells(views, explorer.state, "encoder"),
        ),
        figures.attention_heatmap(
            views.decoder_self[0].mean(0).numpy(), views.target_tokens, views.target_tokens,
            title="Decoder self-attention, layer 0 (causal mask "
            + ("on" if explorer.state.causal_mask else "OFF") + ")",
            highlight_query=current, family="decoder_self",
            masked=render.masked_cells(views, explorer.state, "decoder_self"),
        ),
        figures.attention_heatmap(
            views.cross[-1].mean(0).numpy(), views.target_tokens, views.source_tokens,
            title="Cross-attention, last layer, head average", highlight_query=current, family="cross",
            masked=render.masked_cells(views, explorer.state, "cross"),
        ),
        figures.candidates_bar(
            views.candidate_tokens, [c.prob for c in views.candidates],
            title=f"After {' '.join(views.target_tokens)}: the next token",
        )
        if not views.finished
        else figures.candidates_bar([], [], title="The translation is finished"),
    ]  # fmt: skip
