"""From an `Explorer` to what the page shows: figures, token chips, candidate choices. No gradio here.

Each function is pure given the explorer's state, so the UI handlers stay thin and everything can be tested
without a browser.
"""

from __future__ import annotations

import html
import re

import numpy as np
import torch

from . import figures
from .cache import SHARED
from .session import Explorer, StepSnapshot, shuffle_words
from .state import ExplorerState

FAMILY_NAMES = {
    "encoder": "encoder self-attention",
    "decoder_self": "decoder self-attention",
    "cross": "cross-attention",
}


def source_chips(explorer: Explorer) -> str:
    ids = explorer.source_ids()
    tokenizer = explorer.checkpoint.tokenizer
    return figures.token_chips_html([tokenizer.source_piece(i) for i in ids], ids)


def candidates_figure(snapshot: StepSnapshot, chosen: int | None = None) -> figures.Figure:
    if snapshot.finished:
        return figures.candidates_bar([], [], title="The translation is finished")
    probs = [c.prob for c in snapshot.candidates]
    return figures.candidates_bar(snapshot.candidate_tokens, probs, chosen=chosen, title="Next token: top candidates")


def candidate_radio_choices(snapshot: StepSnapshot) -> list[tuple[str, str]]:
    """(label, token id) pairs for the force-a-token radio; labels are plain text (gradio escapes them)."""
    return [
        (f"{token}  ({c.prob:.1%})", str(c.token_id))
        for token, c in zip(snapshot.candidate_tokens, snapshot.candidates, strict=True)
    ]


def _family_maps(snapshot: StepSnapshot, family: str) -> torch.Tensor:
    """(L, H, Q, K): every layer's and head's weights of one family."""
    return {"encoder": snapshot.encoder, "decoder_self": snapshot.decoder_self, "cross": snapshot.cross}[family]


def _axes_of(snapshot: StepSnapshot, family: str) -> tuple[list[str], list[str], int | None]:
    """The query tokens, the key tokens, and the query row choosing the next token now (None for the encoder)."""
    queries = snapshot.source_tokens if family == "encoder" else snapshot.target_tokens
    keys = snapshot.target_tokens if family == "decoder_self" else snapshot.source_tokens
    current = None if family == "encoder" else len(snapshot.target_tokens) - 1
    return queries, keys, current


def _heads(maps: torch.Tensor, head: int | None) -> tuple[torch.Tensor, str]:
    """One head's (Q, K) weights, or the average of the heads, and its name."""
    return (maps.mean(dim=0), "average of the heads") if head is None else (maps[head], f"head {head}")


def attention_figure(snapshot: StepSnapshot, state: ExplorerState) -> figures.Figure:
    """The Attention tab's figure for its view: the selected family and layer (one head, the head average, or
    all heads as a grid), the three families of the layer side by side, or cross-attention as alignment lines."""
    if state.view == "families":
        return families_figure(snapshot, state)
    if state.view == "alignment":
        return alignment_figure(snapshot, state)
    family, layer = state.family, state.layer
    maps = _family_maps(snapshot, family)[layer]
    queries, keys, current = _axes_of(snapshot, family)
    shown = f"{FAMILY_NAMES[family]}, layer {layer}"
    marked = {"highlight_query": current, "family": family, "masked": masked_cells(snapshot, state, family)}
    if state.grid:
        return figures.attention_grid(maps.numpy(), queries, keys, title=f"{shown}, every head", **marked)
    weights, which = _heads(maps, state.head)
    return figures.attention_heatmap(weights.numpy(), queries, keys, title=f"{shown}, {which}", **marked)


def layer_of(snapshot: StepSnapshot, family: str, layer: int) -> int:
    """`layer`, or the family's last layer when it has fewer (an encoder deeper than the decoder)."""
    return min(layer, _family_maps(snapshot, family).shape[0] - 1)


def families_figure(snapshot: StepSnapshot, state: ExplorerState) -> figures.Figure:
    """Encoder self-attention, decoder self-attention and cross-attention of one layer, side by side."""
    maps = []
    for family in FAMILY_NAMES:
        queries, keys, current = _axes_of(snapshot, family)
        layer = layer_of(snapshot, family, state.layer)
        weights, _ = _heads(_family_maps(snapshot, family)[layer], state.head)
        title = f"{FAMILY_NAMES[family]} (layer {layer})"
        masked = masked_cells(snapshot, state, family)
        maps.append(figures.AttentionMap(weights.numpy(), queries, keys, family, title, current, masked))
    which = "average of the heads" if state.head is None else f"head {state.head}"
    return figures.attention_side_by_side(maps, title=f"Layer {state.layer}, {which}: the three families")


def written_tokens(snapshot: StepSnapshot) -> list[str]:
    """The piece each decoder position wrote: position t reads piece t and predicts piece t + 1; the last one is
    choosing now (or wrote the end token, when the translation is finished)."""
    return [*snapshot.target_tokens[1:], snapshot.end_token if snapshot.finished else "(choosing now)"]


def layer_peakedness(cross: torch.Tensor, head: int | None = None) -> list[float]:
    """How peaked each layer's cross-attention (L, H, T, S) is, as the alignment lines draw it (the average of the
    heads, or one head): the *mean top weight*, the largest weight each target row gives one source piece,
    averaged over the rows. 1: every row looks at one source piece only; 1/S: every row spreads evenly."""
    maps = cross.mean(dim=1) if head is None else cross[:, head]
    return [round(float(value), 6) for value in maps.amax(dim=-1).mean(dim=-1)]


def most_peaked_layer(snapshot: StepSnapshot, head: int | None = None) -> int:
    """The layer whose cross-attention is the most peaked for the sentence so far (`layer_peakedness`); on a tie,
    the lowest. The alignment lines open on it."""
    peaked = layer_peakedness(snapshot.cross, head)
    return peaked.index(max(peaked))


def alignment_figure(snapshot: StepSnapshot, state: ExplorerState) -> figures.Figure:
    """Cross-attention of the selected layer and head (or the head average) as lines between the sentences; in the
    presentation layout, enlarged here, with a shorter title (it fits a projector's 1024 px in its larger type)."""
    layer = layer_of(snapshot, "cross", state.layer)
    weights, which = _heads(_family_maps(snapshot, "cross")[layer], state.head)
    peaked = (
        " (the most peaked)" if layer == most_peaked_layer(snapshot, state.head) and snapshot.cross.shape[0] > 1 else ""
    )
    title = f"Cross-attention as alignment, layer {layer}{peaked}, {which}"
    if state.presentation:
        title = f"Alignment, layer {layer}{peaked}, {'head average' if state.head is None else which}"
    figure = figures.alignment_lines(
        weights.numpy(),
        written_tokens(snapshot),
        snapshot.source_tokens,
        read_tokens=snapshot.target_tokens,
        current=None if snapshot.finished else -1,
        title=title,
        max_labels=PRESENTED_ALIGNMENT_LABELS if state.presentation else None,
    )
    if not state.presentation:
        return figure
    # Its title, under Plotly's toolbar, keeps its room above the source's names (`enlarged` sets the top margin).
    figure = figures.attention.title_above_names(figures.enlarged(figure), pad=figures.base.MODEBAR_PX)
    figure.drawn_for_presentation = True
    return figure


PRESENTED_ALIGNMENT_LABELS = 20  # the presentation layout: upright 17 px type, 24 px a name, in 540 px (at 1024 px)


def alignment_measure(snapshot: StepSnapshot, state: ExplorerState) -> str:
    """Which layer the alignment lines show, and how peaked each layer's cross-attention is (`layer_peakedness`),
    in Markdown: "**Layer 2 is shown: its cross-attention is the most peaked for this sentence** (mean top weight
    0.73; layer 0: 0.50, layer 1: 0.35)."."""
    peaked = layer_peakedness(snapshot.cross, state.head)
    shown, best = layer_of(snapshot, "cross", state.layer), most_peaked_layer(snapshot, state.head)
    which = "the average of the heads" if state.head is None else f"head {state.head}"
    defined = (
        f"The *mean top weight* is the largest weight a piece of the translation gives one source piece, averaged "
        f"over the pieces so far ({which}): 1 would be a clean one-to-one alignment."
    )
    if len(peaked) == 1:
        return f"**This model has one layer** (mean top weight {peaked[0]:.2f}). {defined}"
    others = ", ".join(f"layer {layer}: {value:.2f}" for layer, value in enumerate(peaked) if layer != best)
    numbers = f"(mean top weight {peaked[best]:.2f}; {others})"
    if shown == best:
        headline = f"**Layer {shown} is shown: its cross-attention is the most peaked for this sentence**"
    else:
        headline = f"**Layer {shown} is shown; the most peaked for this sentence is layer {best}**"
    return f"{headline} {numbers}. {defined}"


def attention_thumbnails(snapshot: StepSnapshot, state: ExplorerState) -> str:
    """Every layer and head of the selected family as thumbnails (HTML); the one shown large is outlined. The same
    for every user who looks at the same maps alike (`cache.SHARED`)."""
    family = state.family
    _, _, current = _axes_of(snapshot, family)
    shown = (state.layer, state.head) if state.view == "heatmap" and state.head is not None else None

    def drawn() -> str:
        return figures.attention_thumbnails_html(
            _family_maps(snapshot, family).numpy(),
            masked=masked_cells(snapshot, state, family),
            highlight_query=current,
            selected=shown,
            what=FAMILY_NAMES[family],
        )

    if snapshot.key is None:
        return drawn()
    return SHARED.get(("thumbnails", snapshot.key, family, shown), drawn)


WORD_START_NOTE = "`▁` marks a piece that starts a word."
SHIFT_NOTE = (
    "Row *t* is the position that predicts piece *t + 1*: a row attending to “sister” while it reads “Meine” is "
    "the model about to write “Schwester”."
)


def attention_caption(snapshot: StepSnapshot, state: ExplorerState) -> str:
    """What the Attention tab's figure shows, in plain words, for its view, its family and the current step."""
    if state.view == "families":
        return (
            "The same layer in the three places attention happens, updating together at every step. **Left:** the "
            "encoder's source pieces look at each other (the whole sentence at once). **Middle:** the decoder's "
            "pieces look back at the pieces written so far (grey: hidden by the causal mask). **Right:** the "
            f"decoder's pieces look at the source. Every row sums to 1; the outlined rows choose the next piece. "
            f"{SHIFT_NOTE} {WORD_START_NOTE}"
        )
    if state.view == "alignment":
        return (
            f"{alignment_measure(snapshot, state)}\n\n"
            "The English pieces on top, the translation below. Each line joins a piece of the translation to a "
            "source piece its step attended to, thicker and darker for more weight (below 0.05: no line); "
            "orange is the step choosing now. **The shift by one:** the decoder position that reads “Meine” is the "
            "one that writes “Schwester”, so its lines are drawn from “Schwester”, the piece they helped to write "
            "(hover a piece to see which one its query read). Which layer aligns most clearly differs from model to "
            "model (in deeper translation models it is often one of the upper layers, not always the last), so the "
            f"lines open on the layer measured as the most peaked for the sentence. {WORD_START_NOTE}"
        )
    if state.family == "encoder":
        return (
            "Each **row** is a source piece asking *what should I look at?* (a query); each **column** is a source "
            "piece it can look at (a key). A cell is how much of the row's attention goes to the column; every row "
            f"sums to 1. The encoder reads the whole sentence at once, so no row is special. {WORD_START_NOTE}"
        )
    last = snapshot.target_tokens[-1] if snapshot.target_tokens else ""
    columns = (
        "a source piece (a key): where the translation looks in the English sentence"
        if state.family == "cross"
        else "a target piece written so far (a key); grey cells are hidden from the row by the causal mask"
    )
    return (
        f"Each **row** is a target piece the decoder has read (a query); each **column** is {columns}. Every row "
        f"sums to 1. {SHIFT_NOTE} The **outlined row**, “{html.escape(last)}”, is where the model chooses the next "
        f"piece now. {WORD_START_NOTE}"
    )


THUMBNAILS_CAPTION = (
    "**Every layer and head at once** (one row per layer) for the attention chosen above, at this step; the "
    "outlined row in each is the position choosing the next piece. Click one to open it large above."
)


CANDIDATES_CAPTION = (
    "The model's probability for each possible next piece, the ten most likely at the top. `▁` marks a piece "
    "that starts a word. Pick one on the right (or type one) to make the model continue from it instead."
)
POSITION_CAPTIONS = (
    "Each **row** is a position in the sentence, each **column** one dimension of the vector added to the piece's "
    "embedding there; the colour is its value. The model adds row *p* to the piece at position *p*.",
    "Each line is one dimension across positions: the first dimensions wave fast, the last ones slowly, so that "
    "together they give every position its own pattern.",
    "Cell (*i*, *j*) is how alike the encodings of positions *i* and *j* are (cosine similarity, 1 on the "
    "diagonal). Neighbours look alike, which lets attention find pieces near each other.",
)
COMPARE_CAPTION = (
    "For each candidate next piece (a **row**), two bars: its probability with every head, and with the ticked "
    "heads silenced (their output set to zero before the heads are joined). A head that matters moves the bars; "
    "most heads alone barely do. `▁` marks a piece that starts a word."
)
BEAM_CAPTION = (
    "Each **column** is a step, each **dot** a hypothesis the beam keeps (best at the top), joined to the one it "
    "grew from; diamonds are hypotheses that ended with `</s>`. The thick line is the best path so far."
)


def masked_cells(snapshot: StepSnapshot, state: ExplorerState, family: str) -> np.ndarray:
    """(Q, K) True where a mask that is on forbids the query to attend to the key: the causal mask above the
    diagonal of decoder self-attention, the padding mask on the source's padding columns."""
    if family == "decoder_self":
        n = len(snapshot.target_tokens)
        return np.triu(np.ones((n, n), dtype=bool), 1) if state.causal_mask else np.zeros((n, n), dtype=bool)
    n_q = len(snapshot.source_tokens if family == "encoder" else snapshot.target_tokens)
    padding = np.array(snapshot.source_padding, dtype=bool)
    return np.broadcast_to(padding & state.padding_mask, (n_q, len(padding)))


def beam_figure(explorer: Explorer) -> figures.Figure | None:
    if explorer.state.strategy != "beam" or not explorer.decoding.steps:
        return None
    tokenizer = explorer.checkpoint.tokenizer
    return figures.beam_tree(list(explorer.decoding.steps), tokenizer.target_piece, title="Beam search")


def comparison(explorer: Explorer) -> tuple[figures.Figure, str]:
    """Next-token distribution and full translation with the current heads silenced vs with none silenced."""
    if not explorer.state.silenced:
        return figures.compare_candidates([], [], []), "Tick some heads above to silence them, then compare again."
    text_off, next_off = explorer.translate_to_end()
    text_on, next_on = explorer.translate_to_end(silenced=frozenset())
    tokenizer = explorer.checkpoint.tokenizer
    ids = list(dict.fromkeys([c.token_id for c in next_on][:8] + [c.token_id for c in next_off][:8]))
    on = {c.token_id: c.prob for c in next_on}
    off = {c.token_id: c.prob for c in next_off}
    silenced = heads_silenced(len(explorer.state.silenced))
    output = explorer.decoding.output_ids
    title = (
        f"Next token after “{_tail(tokenizer.decode_target(output), 40)}”"
        if output
        else "First token of the translation"
    )
    figure = figures.compare_candidates(
        [tokenizer.target_piece(i) for i in ids],
        [on.get(i, 0.0) for i in ids],
        [off.get(i, 0.0) for i in ids],
        labels=("all heads", silenced),
        title=title,  # plain text: the figure escapes it
    )
    report = f"**All heads:** {html.escape(text_on)}\n\n**With {silenced}:** {html.escape(text_off)}"
    return figure, report


def heads_silenced(n: int) -> str:
    """How many heads are silenced, in words: "1 head silenced", "3 heads silenced"."""
    return f"{n} head silenced" if n == 1 else f"{n} heads silenced"


def _tail(text: str, limit: int) -> str:
    """The end of a long text (what comes just before the next token), with "…" in front."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :].lstrip()


def positional_figures(explorer: Explorer, n_positions: int, dims: list[int]) -> tuple[figures.Figure, ...]:
    """The encoding this very model adds (the same module the forward pass calls)."""
    model = explorer.checkpoint.model
    n = max(2, min(n_positions, model.config.max_positions))
    with torch.no_grad():
        table = model.src_embed.positions(n).float().cpu().numpy()
    kind = model.config.positional_encoding.replace("_", " ")
    d = table.shape[1]
    dims = [x for x in dims if 0 <= x < d] or spread_dimensions(model.config.positional_encoding, d)
    return (
        figures.positional_heatmap(table, title=f"Positional encoding of {explorer.state.model} ({kind})"),
        figures.positional_curves(table, dims, title="Chosen dimensions over positions"),
        figures.position_similarity(table, title="How similar are the encodings of two positions?"),
    )


def spread_dimensions(kind: str, d: int) -> list[int]:
    """Four dimensions from the fastest to the slowest wave, so the curves show the range of frequencies: the
    sine of frequency 1, of d/4, of d/2 and of the slowest (interleaved sinusoids put the sine of frequency i at
    dimension 2i; concatenated ones at i, with the cosines in the second half)."""
    if kind == "sinusoidal_concat":
        chosen = [0, d // 8, d // 4, d // 2 - 1]
    elif kind == "sinusoidal_interleaved":
        chosen = [0, d // 4 // 2 * 2, d // 2 // 2 * 2, d - 2]
    else:  # learned: no frequencies, just a spread
        chosen = [0, d // 4, d // 2, d - 1]
    return sorted({min(max(x, 0), d - 1) for x in chosen})


def twin_name(explorer: Explorer) -> str | None:
    """The built-in untrained twin of the current model, if there is one (e.g. en-de -> en-de-untrained)."""
    name = f"{explorer.state.model}-untrained"
    return name if name in explorer.registry.builtin else None


def twin_comparison(explorer: Explorer) -> tuple[figures.Figure | None, figures.Figure | None, str]:
    """The selected attention view for the trained model and its untrained twin, on the same tokens."""
    twin = twin_name(explorer)
    if twin is None:
        return None, None, f"There is no untrained twin of {html.escape(explorer.state.model)}."
    forced = tuple(explorer.decoding.output_ids)  # the twin reads exactly the trained model's output so far
    other = Explorer(explorer.registry, explorer.state.replace(model=twin, strategy="greedy", choices=forced))
    untrained_text, _ = other.translate_to_end(choices=())
    trained_text, _ = explorer.translate_to_end(choices=())
    trained = attention_figure(explorer.snapshot(), explorer.state)
    untrained = attention_figure(other.snapshot(), other.state)
    trained.layout.title["text"] = f"Trained: {trained.layout.title.text}"
    untrained.layout.title["text"] = f"Untrained: {untrained.layout.title.text}"
    trained_text, untrained_text = (html.escape(figures.shorten(text, 120)) for text in (trained_text, untrained_text))
    report = (
        "Both read the same tokens: the trained model's output so far. Their own translations of the sentence:\n\n"
        f"**Trained:** {trained_text}\n\n**Untrained twin:** {untrained_text}"
    )
    return trained, untrained, report


def teacher_forced_markdown(snapshot: StepSnapshot, state: ExplorerState) -> str:
    """What the decoder predicts at every position when it reads the whole output so far at once."""
    rows = [
        f"| {i} | {table_code(read)} | {table_code(predicted)} |"
        for i, (read, predicted) in enumerate(zip(snapshot.target_tokens, snapshot.predictions, strict=True))
    ]
    if state.causal_mask:
        mask = "on: each position sees only itself and earlier tokens, exactly as during generation"
        after = ""
    else:
        mask = "**off**: each position also sees the tokens after it, which it never did in training"
        after = (
            "\n\nWith the mask off, a row that can see the token it is meant to predict mostly copies it: that is "
            "what *predicts next* turns into when the answer is in view. The last row sees nothing new and gives the "
            "next-token chart's prediction. Generation changes too: at every step the earlier positions are "
            "computed again, now seeing the tokens after them, so their hidden states change. That is why the "
            "decoder's cache, which keeps the keys and values of earlier positions as they were first computed, "
            "is only valid with the mask on; with it off, each step recomputes the whole prefix."
        )
    return (
        f"**Teacher forcing** — the decoder reads the output so far in one pass (causal mask {mask}).\n\n"
        "| position | reads | predicts next |\n|---|---|---|\n" + "\n".join(rows) + after
    )


def table_code(text: str) -> str:
    """`text` as inline code in a Markdown table cell, shown exactly as it is: Markdown shows the inside of a code
    span literally (escaping it there once more would show `&lt;s&gt;` for `<s>`), so only what would end the
    span or the cell changes: the fence is longer than any run of backticks in the text, and `|` is `\\|`."""
    if not text:
        return "(empty)"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    cell = text.replace("|", "\\|")
    return f"{fence}{pad}{cell}{pad}{fence}"


def shuffled_report(explorer: Explorer) -> str:
    """The translation of the sentence, of its words shuffled, and of the sentence with positions switched off."""
    mixed = shuffle_words(explorer.state.source, seed=explorer.state.seed)
    text_mixed, _ = explorer.translate_to_end(source=mixed, choices=())
    text_plain, _ = explorer.translate_to_end(choices=())
    text_nopos, _ = explorer.translate_to_end(positions=False, choices=())
    return (
        f"**Original:** {html.escape(explorer.state.source)} → {html.escape(text_plain)}\n\n"
        f"**Shuffled:** {html.escape(mixed)} → {html.escape(text_mixed)}\n\n"
        f"**Original, positions switched off:** → {html.escape(text_nopos)}"
    )
