"""From an `Explorer` to what the page shows: figures, token chips, candidate choices. No gradio here.

Each function is pure given the explorer's state, so the UI handlers stay thin and everything can be tested
without a browser.
"""

from __future__ import annotations

import html
import random
import re
from dataclasses import dataclass

import numpy as np
import torch

from . import figures
from .cache import SHARED
from .figures.base import readable
from .i18n import N_, _, ngettext
from .i18n import current as current_language
from .session import Explorer, StepSnapshot, shuffle_words
from .state import ExplorerState

FAMILY_NAMES = {  # shown translated: `_(FAMILY_NAMES[family])`
    "encoder": N_("encoder self-attention"),
    "decoder_self": N_("decoder self-attention"),
    "cross": N_("cross-attention"),
}


def source_chips(explorer: Explorer) -> str:
    ids = explorer.source_ids()
    tokenizer = explorer.checkpoint.tokenizer
    return figures.token_chips_html([tokenizer.source_piece(i) for i in ids], ids)


def candidates_figure(snapshot: StepSnapshot, chosen: int | None = None) -> figures.Figure:
    if snapshot.finished:
        return figures.candidates_bar([], [], title=_("The translation is finished"))
    probs = [c.prob for c in snapshot.candidates]
    title = _("Next token: top candidates")
    return figures.candidates_bar(snapshot.candidate_tokens, probs, chosen=chosen, title=title)


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
    return (maps.mean(dim=0) if head is None else maps[head]), head_name(head)


def head_name(head: int | None) -> str:
    """The name of a head ("head 2"), or of the average of the heads (None)."""
    return _("average of the heads") if head is None else _("head {head}").format(head=head)


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
    name = _(FAMILY_NAMES[family])
    marked = {"highlight_query": current, "family": family, "masked": masked_cells(snapshot, state, family)}
    if state.grid:
        title = _("{family}, layer {layer}, every head").format(family=name, layer=layer)
        return figures.attention_grid(maps.numpy(), queries, keys, title=title, **marked)
    weights, which = _heads(maps, state.head)
    title = _("{family}, layer {layer}, {head}").format(family=name, layer=layer, head=which)
    return figures.attention_heatmap(weights.numpy(), queries, keys, title=title, **marked)


def layer_of(snapshot: StepSnapshot, family: str, layer: int) -> int:
    """`layer`, or the family's last layer when it has fewer (an encoder deeper than the decoder)."""
    return min(layer, _family_maps(snapshot, family).shape[0] - 1)


def families_figure(snapshot: StepSnapshot, state: ExplorerState) -> figures.Figure:
    """Encoder self-attention, decoder self-attention and cross-attention of one layer, side by side."""
    maps = []
    for family in FAMILY_NAMES:
        queries, keys, current = _axes_of(snapshot, family)
        layer = layer_of(snapshot, family, state.layer)
        weights, _which = _heads(_family_maps(snapshot, family)[layer], state.head)
        title = _("{family} (layer {layer})").format(family=_(FAMILY_NAMES[family]), layer=layer)
        masked = masked_cells(snapshot, state, family)
        maps.append(figures.AttentionMap(weights.numpy(), queries, keys, family, title, current, masked))
    title = _("Layer {layer}, {head}: the three families").format(layer=state.layer, head=head_name(state.head))
    return figures.attention_side_by_side(maps, title=title)


def written_tokens(snapshot: StepSnapshot) -> list[str]:
    """The piece each decoder position wrote: position t reads piece t and predicts piece t + 1; the last one is
    choosing now (or wrote the end token, when the translation is finished)."""
    return [*snapshot.target_tokens[1:], snapshot.end_token if snapshot.finished else _("(choosing now)")]


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
    peaked = layer == most_peaked_layer(snapshot, state.head) and snapshot.cross.shape[0] > 1
    if state.presentation:
        which = _("head average") if state.head is None else which
        title = (
            _("Alignment, layer {layer} (the most peaked), {head}") if peaked else _("Alignment, layer {layer}, {head}")
        )
    elif peaked:
        title = _("Cross-attention as alignment, layer {layer} (the most peaked), {head}")
    else:
        title = _("Cross-attention as alignment, layer {layer}, {head}")
    title = title.format(layer=layer, head=which)
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
    which = _("the average of the heads") if state.head is None else head_name(state.head)
    defined = _(
        "The *mean top weight* is the largest weight a piece of the translation gives one source piece, averaged "
        "over the pieces so far ({heads}): 1 would be a clean one-to-one alignment."
    ).format(heads=which)
    if len(peaked) == 1:
        return _("**This model has one layer** (mean top weight {weight:.2f}). {definition}").format(
            weight=peaked[0], definition=defined
        )
    others = _(", ").join(
        _("layer {layer}: {weight:.2f}").format(layer=layer, weight=value)
        for layer, value in enumerate(peaked)
        if layer != best
    )
    if shown == best:
        headline = _(
            "**Layer {shown} is shown: its cross-attention is the most peaked for this sentence** (mean top weight "
            "{weight:.2f}; {others}). {definition}"
        )
    else:
        headline = _(
            "**Layer {shown} is shown; the most peaked for this sentence is layer {best}** (mean top weight "
            "{weight:.2f}; {others}). {definition}"
        )
    return headline.format(shown=shown, best=best, weight=peaked[best], others=others, definition=defined)


def attention_thumbnails(snapshot: StepSnapshot, state: ExplorerState) -> str:
    """Every layer and head of the selected family as thumbnails (HTML); the one shown large is outlined. The same
    for every user who looks at the same maps alike (`cache.SHARED`)."""
    family = state.family
    current = _axes_of(snapshot, family)[2]
    shown = (state.layer, state.head) if state.view == "heatmap" and state.head is not None else None

    def drawn() -> str:
        return figures.attention_thumbnails_html(
            _family_maps(snapshot, family).numpy(),
            masked=masked_cells(snapshot, state, family),
            highlight_query=current,
            selected=shown,
            what=_(FAMILY_NAMES[family]),
        )

    if snapshot.key is None:
        return drawn()
    return SHARED.get(("thumbnails", snapshot.key, family, shown, current_language()), drawn)


WORD_START_NOTE = N_("`▁` marks a piece that starts a word.")


@dataclass(frozen=True)
class ShiftExample:
    """A decoder position of the sentence on the page that shows the shift by one: it reads `read`, writes
    `written`, and its cross-attention looks most at the source piece `looked` (the most peaked layer, the average
    of the heads)."""

    read: str
    written: str
    looked: str


def shift_example(snapshot: StepSnapshot) -> ShiftExample | None:
    """The clearest example of the shift by one in the sentence so far: of the positions whose written piece is
    known, the one whose cross-attention is the most peaked (a position that reads a piece rather than the start
    token, where there is one); None before the first piece is written."""
    n_written = len(snapshot.target_tokens) - 1  # position t reads piece t and wrote piece t + 1
    if n_written < 1 or snapshot.cross.shape[-2] < n_written:
        return None
    rows = snapshot.cross[most_peaked_layer(snapshot)].mean(dim=0)[:n_written]  # (T, S)
    real = [not padding for padding in snapshot.source_padding] or [True] * rows.shape[-1]
    usable = torch.tensor(real, device=rows.device)
    usable &= torch.tensor([piece != snapshot.end_token for piece in snapshot.source_tokens], device=rows.device)
    if not usable.any():
        return None
    rows = rows.masked_fill(~usable, -1.0)
    tops, looked = rows.max(dim=-1)
    first = 1 if n_written > 1 else 0  # the start token is read by position 0 only
    t = first + int(tops[first:].argmax())
    words = (snapshot.target_tokens[t], snapshot.target_tokens[t + 1], snapshot.source_tokens[int(looked[t])])
    return ShiftExample(*(html.escape(_word(piece)) for piece in words))


def _word(piece: str) -> str:
    """A piece as prose quotes it: without its word-start mark (`▁`), unless that is all it is."""
    return piece[1:] if piece.startswith("▁") and len(piece) > 1 else piece


def shift_note(snapshot: StepSnapshot) -> str:
    """Row *t* predicts piece *t + 1*, with an example from the sentence on the page."""
    example = shift_example(snapshot)
    if example is None:
        return _(
            "Row *t* is the position that predicts piece *t + 1*: the row that reads one piece of the translation "
            "is the model about to write the next one."
        )
    return _(
        "Row *t* is the position that predicts piece *t + 1*: a row attending to “{looked}” while it reads “{read}” "
        "is the model about to write “{written}”."
    ).format(looked=example.looked, read=example.read, written=example.written)


def attention_caption(snapshot: StepSnapshot, state: ExplorerState) -> str:
    """What the Attention tab's figure shows, in plain words, for its view, its family and the current step."""
    if state.view == "families":
        return _(
            "The same layer in the three places attention happens, updating together at every step. **Left:** the "
            "encoder's source pieces look at each other (the whole sentence at once). **Middle:** the decoder's "
            "pieces look back at the pieces written so far (grey: hidden by the causal mask). **Right:** the "
            "decoder's pieces look at the source. Every row sums to 1; the outlined rows choose the next piece. "
            "{shift_note} {word_start}"
        ).format(shift_note=shift_note(snapshot), word_start=_(WORD_START_NOTE))
    if state.view == "alignment":
        return alignment_caption(snapshot, state)
    if state.family == "encoder":
        return _(
            "Each **row** is a source piece asking *what should I look at?* (a query); each **column** is a source "
            "piece it can look at (a key). A cell is how much of the row's attention goes to the column; every row "
            "sums to 1. The encoder reads the whole sentence at once, so no row is special. {word_start}"
        ).format(word_start=_(WORD_START_NOTE))
    last = snapshot.target_tokens[-1] if snapshot.target_tokens else ""
    if state.family == "cross":
        caption = _(
            "Each **row** is a target piece the decoder has read (a query); each **column** is a source piece (a "
            "key): where the translation looks in the source sentence. Every row sums to 1. {shift_note} The "
            "**outlined row**, “{last}”, is where the model chooses the next piece now. {word_start}"
        )
    else:
        caption = _(
            "Each **row** is a target piece the decoder has read (a query); each **column** is a target piece "
            "written so far (a key); grey cells are hidden from the row by the causal mask. Every row sums to 1. "
            "{shift_note} The **outlined row**, “{last}”, is where the model chooses the next piece now. {word_start}"
        )
    return caption.format(shift_note=shift_note(snapshot), last=html.escape(last), word_start=_(WORD_START_NOTE))


IN_WORDS_ROWS = 24  # the rows said in words, at most (the table holds every one)


def attention_in_words(snapshot: StepSnapshot, state: ExplorerState) -> str:
    """The figure's numbers for a reader who cannot see it: where each row of the chosen family, layer and head (or
    head average) looks most and how strongly, and every weight in a table (which a screen reader reads cell by cell,
    and a keyboard reaches)."""
    family = "cross" if state.view == "alignment" else state.family
    layer = layer_of(snapshot, family, state.layer)
    weights, which = _heads(_family_maps(snapshot, family)[layer], state.head)
    weights = torch.nan_to_num(weights.float(), nan=0.0).cpu().numpy()
    queries, keys, _current = _axes_of(snapshot, family)
    said = [
        _("“{query}” → “{key}” {weight:.2f}").format(
            query=html.escape(readable(query)),
            key=html.escape(readable(keys[int(row.argmax())])),
            weight=float(row.max()),
        )
        for query, row in zip(queries[:IN_WORDS_ROWS], weights[:IN_WORDS_ROWS], strict=True)
    ]
    more = " …" if len(queries) > IN_WORDS_ROWS else ""
    title = _("{family}, layer {layer}, {head}").format(family=_(FAMILY_NAMES[family]), layer=layer, head=which)
    head_row = "".join(f"<th scope='col'>{html.escape(readable(key))}</th>" for key in keys)
    rows = "".join(
        f"<tr><th scope='row'>{html.escape(readable(query))}</th>"
        + "".join(f"<td>{weight:.2f}</td>" for weight in row)
        + "</tr>"
        for query, row in zip(queries, weights, strict=True)
    )
    summary = _("Every weight as a table")
    table = (
        f"<details class='in-words'><summary>{summary}</summary>"
        f"<table><caption>{html.escape(title)}</caption><tr><th></th>{head_row}</tr>{rows}</table></details>"
    )
    lines = _("**In words** ({title}), where each row looks most: {rows}").format(
        title=html.escape(title), rows=_("; ").join(said) + more
    )
    return f"{lines}\n\n{table}"


def alignment_caption(snapshot: StepSnapshot, state: ExplorerState) -> str:
    """The alignment lines: which layer they show, how to read them, and the shift by one on the page's sentence."""
    example = shift_example(snapshot)
    if example is None:
        shift = _(
            "**The shift by one:** the decoder position that reads a piece is the one that writes the next piece, "
            "so its lines are drawn from the piece they helped to write (hover a piece to see which one its query "
            "read)."
        )
    else:
        shift = _(
            "**The shift by one:** the decoder position that reads “{read}” is the one that writes “{written}”, so "
            "its lines are drawn from “{written}”, the piece they helped to write (hover a piece to see which one "
            "its query read)."
        ).format(read=example.read, written=example.written)
    return _(
        "{measure}\n\n"
        "The source sentence's pieces on top, the translation below. Each line joins a piece of the translation to "
        "a source piece its step attended to, thicker and darker for more weight (below 0.05: no line); orange is "
        "the step choosing now. {shift} Which layer aligns most clearly differs from model to model (in deeper "
        "translation models it is often one of the upper layers, not always the last), so the lines open on the "
        "layer measured as the most peaked for the sentence. {word_start}"
    ).format(measure=alignment_measure(snapshot, state), shift=shift, word_start=_(WORD_START_NOTE))


# Captions of fixed text, shown translated (`T(render.THUMBNAILS_CAPTION)`).
THUMBNAILS_CAPTION = N_(
    "**Every layer and head at once** (one row per layer) for the attention chosen above, at this step; the "
    "outlined row in each is the position choosing the next piece. Click one to open it large above."
)


CANDIDATES_CAPTION = N_(
    "The model's probability for each possible next piece, the ten most likely at the top. `▁` marks a piece "
    "that starts a word. Pick one under **Force one of the candidates** (or type one) to make the model continue "
    "from it instead."
)
POSITION_CAPTIONS = (
    N_(
        "Each **row** is a position in the sentence, each **column** one dimension of the vector added to the "
        "piece's embedding there; the colour is its value. The model adds row *p* to the piece at position *p*."
    ),
    N_(
        "Each line is one dimension across positions: the first dimensions wave fast, the last ones slowly, so that "
        "together they give every position its own pattern."
    ),
    N_(
        "Cell (*i*, *j*) is how alike the encodings of positions *i* and *j* are (cosine similarity, 1 on the "
        "diagonal). Neighbours look alike, which lets attention find pieces near each other."
    ),
)
COMPARE_CAPTION = N_(
    "For each candidate next piece (a **row**), two bars: its probability with every head, and with the ticked "
    "heads silenced (their output set to zero before the heads are joined). A head that matters moves the bars; "
    "most heads alone barely do. `▁` marks a piece that starts a word."
)
BEAM_CAPTION = N_(
    "Each **column** is a step, each **dot** a hypothesis the beam keeps (best at the top), joined to the one it "
    "grew from; diamonds are hypotheses that ended with `</s>`: filled while the beam keeps them among its finished "
    "ones, hollow once better ones pushed them out. The thick line is the best path so far."
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
    return figures.beam_tree(list(explorer.decoding.steps), tokenizer.target_piece, title=_("Beam search"))


def comparison(explorer: Explorer) -> tuple[figures.Figure, str]:
    """Next-token distribution and full translation with the current heads silenced vs with none silenced."""
    if not explorer.state.silenced:
        return figures.compare_candidates([], [], []), _("Tick some heads above to silence them, then compare again.")
    text_off, next_off = explorer.translate_to_end()
    text_on, next_on = explorer.translate_to_end(silenced=frozenset())
    tokenizer = explorer.checkpoint.tokenizer
    ids = list(dict.fromkeys([c.token_id for c in next_on][:8] + [c.token_id for c in next_off][:8]))
    on = {c.token_id: c.prob for c in next_on}
    off = {c.token_id: c.prob for c in next_off}
    silenced = heads_silenced(len(explorer.state.silenced))
    output = explorer.decoding.output_ids
    title = (
        _("Next token after “{text}”").format(text=_tail(tokenizer.decode_target(output), 40))
        if output
        else _("First token of the translation")
    )
    figure = figures.compare_candidates(
        [tokenizer.target_piece(i) for i in ids],
        [on.get(i, 0.0) for i in ids],
        [off.get(i, 0.0) for i in ids],
        labels=(_("all heads"), silenced),
        title=title,  # plain text: the figure escapes it
    )
    report = _("**All heads:** {with_all}\n\n**With {silenced}:** {with_silenced}").format(
        with_all=html.escape(text_on), silenced=silenced, with_silenced=html.escape(text_off)
    )
    return figure, report


# What is switched off, named as the page names it (`switched_off`).
SWITCHED_OFF_PARTS = {
    "causal_mask": N_("the causal mask"),
    "padding_mask": N_("the padding mask"),
    "positions": N_("the positional encodings"),
}


def switched_off(state: ExplorerState) -> str:
    """What the user switched off, in a sentence that says every view shows the model without it; "" when the model is
    whole. The page shows it beside the output, whichever view is open: a translation made with a head silenced looks
    like any other."""
    parts = [_(name) for field, name in SWITCHED_OFF_PARTS.items() if not getattr(state, field)]
    if state.silenced:
        parts.append(heads_silenced(len(state.silenced)))
    if not parts:
        return ""
    return _("**Switched off:** {parts}. Every view shows the model without them.").format(parts=_(", ").join(parts))


def heads_silenced(n: int) -> str:
    """How many heads are silenced, in words: "1 head silenced", "3 heads silenced"."""
    return ngettext("{n} head silenced", "{n} heads silenced", n).format(n=n)


def _tail(text: str, limit: int) -> str:
    """The end of a long text (what comes just before the next token), with "…" in front."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :].lstrip()


POSITION_KINDS = {  # a model's `positional_encoding`, in words (shown translated)
    "sinusoidal_interleaved": N_("sinusoidal interleaved"),
    "sinusoidal_concat": N_("sinusoidal concat"),
    "learned": N_("learned"),
}


def positional_figures(explorer: Explorer, n_positions: int, dims: list[int]) -> tuple[figures.Figure, ...]:
    """The encoding this very model adds (the same module the forward pass calls)."""
    model = explorer.checkpoint.model
    n = max(2, min(n_positions, model.config.max_positions))
    with torch.no_grad():
        table = model.src_embed.positions(n).float().cpu().numpy()
    kind = model.config.positional_encoding
    kind = _(POSITION_KINDS[kind]) if kind in POSITION_KINDS else kind.replace("_", " ")
    d = table.shape[1]
    dims = [x for x in dims if 0 <= x < d] or spread_dimensions(model.config.positional_encoding, d)
    return (
        figures.positional_heatmap(
            table, title=_("Positional encoding of {model} ({kind})").format(model=explorer.state.model, kind=kind)
        ),
        figures.positional_curves(table, dims, title=_("Chosen dimensions over positions")),
        figures.position_similarity(table, title=_("How similar are the encodings of two positions?")),
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
        return None, None, _("There is no untrained twin of {model}.").format(model=html.escape(explorer.state.model))
    forced = tuple(explorer.decoding.output_ids)  # the twin reads exactly the trained model's output so far
    other = Explorer(explorer.registry, explorer.state.replace(model=twin, strategy="greedy", choices=forced))
    untrained_text = other.translate_to_end(choices=())[0]
    trained_text = explorer.translate_to_end(choices=())[0]
    trained = attention_figure(explorer.snapshot(), explorer.state)
    untrained = attention_figure(other.snapshot(), other.state)
    trained.layout.title["text"] = _("Trained: {title}").format(title=trained.layout.title.text)
    untrained.layout.title["text"] = _("Untrained: {title}").format(title=untrained.layout.title.text)
    trained_text, untrained_text = (html.escape(figures.shorten(text, 120)) for text in (trained_text, untrained_text))
    report = _(
        "Both read the same tokens: the trained model's output so far. Their own translations of the sentence:\n\n"
        "**Trained:** {trained}\n\n**Untrained twin:** {untrained}"
    ).format(trained=trained_text, untrained=untrained_text)
    return trained, untrained, report


def teacher_forced_markdown(snapshot: StepSnapshot, state: ExplorerState) -> str:
    """What the decoder predicts at every position when it reads the whole output so far at once."""
    rows = [
        f"| {i} | {table_code(read)} | {table_code(predicted)} |"
        for i, (read, predicted) in enumerate(zip(snapshot.target_tokens, snapshot.predictions, strict=True))
    ]
    if state.causal_mask:
        intro = _(
            "**Teacher forcing** — the decoder reads the output so far in one pass (causal mask on: each position "
            "sees only itself and earlier tokens, exactly as during generation)."
        )
        after = ""
    else:
        intro = _(
            "**Teacher forcing** — the decoder reads the output so far in one pass (causal mask **off**: each "
            "position also sees the tokens after it, which it never did in training)."
        )
        after = "\n\n" + _(
            "With the mask off, a row that can see the token it is meant to predict mostly copies it: that is "
            "what *predicts next* turns into when the answer is in view. The last row sees nothing new and gives the "
            "next-token chart's prediction. Generation changes too: at every step the earlier positions are "
            "computed again, now seeing the tokens after them, so their hidden states change. That is why the "
            "decoder's cache, which keeps the keys and values of earlier positions as they were first computed, "
            "is only valid with the mask on; with it off, each step recomputes the whole prefix."
        )
    header = _("| position | reads | predicts next |")
    return f"{intro}\n\n{header}\n|---|---|---|\n" + "\n".join(rows) + after


def table_code(text: str) -> str:
    """`text` as inline code in a Markdown table cell, shown exactly as it is: Markdown shows the inside of a code
    span literally (escaping it there once more would show `&lt;s&gt;` for `<s>`), so only what would end the
    span or the cell changes: the fence is longer than any run of backticks in the text, and `|` is `\\|`."""
    if not text:
        return _("(empty)")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    cell = text.replace("|", "\\|")
    return f"{fence}{pad}{cell}{pad}{fence}"


def shuffled_report(explorer: Explorer) -> str:
    """The translation of the sentence, of its words shuffled, and of the sentence with positions switched off."""
    mixed = shuffled_source(explorer)
    text_mixed = explorer.translate_to_end(source=mixed, choices=())[0]
    text_plain = explorer.translate_to_end(choices=())[0]
    text_nopos = explorer.translate_to_end(positions=False, choices=())[0]
    return _(
        "**Original:** {source} → {translation}\n\n"
        "**Shuffled:** {shuffled} → {shuffled_translation}\n\n"
        "**Original, positions switched off:** → {translation_without_positions}"
    ).format(
        source=html.escape(explorer.state.source),
        translation=html.escape(text_plain),
        shuffled=html.escape(mixed),
        shuffled_translation=html.escape(text_mixed),
        translation_without_positions=html.escape(text_nopos),
    )


CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")  # kana and CJK ideographs


def shuffled_source(explorer: Explorer) -> str:
    """The sentence with its words in a random (seeded) order; a Chinese or Japanese sentence, written without
    spaces between its words, has the model's pieces of it shuffled instead."""
    source, seed = explorer.state.source, explorer.state.seed
    if len(source.split()) > 1 or not CJK.search(source):
        return shuffle_words(source, seed=seed)
    pieces = explorer.checkpoint.tokenizer.source_pieces(source.strip())
    random.Random(seed).shuffle(pieces)
    return "".join(pieces).replace("▁", "")
