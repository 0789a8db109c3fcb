"""The guided walkthrough: a tour of the Inside a step view, from the pieces of the sentence to the next token.

Each section explains one stage of the paper's architecture for a student who has read the paper once, with the
numbers of the user's own sentence, model and step ("the query of ‘▁school’ scores 4.10 against ‘▁after’"), shows
the stage's tensors or attention map, and links to the stage in the Inside a step view (`Link`). Everything is
computed again from the live explorer, so the tour follows every Step, Back, Run and setting.

The tour follows one thread through the model: the source piece the current step reads most (its cross-attention
in the last decoder layer, averaged over the heads) up the encoder, and the current target position up the decoder
to the next token.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from transformer.worked import WorkedStep

from . import figures, inside, render
from .cache import SHARED, identity
from .figures import TensorPanel
from .figures.base import readable
from .i18n import N_, _, current, ngettext
from .session import Explorer


@dataclass(frozen=True)
class Link:
    """Where a section leads in the Inside a step view: a stage, with its layer, head and source position."""

    stage: str
    layer: int = 0
    head: int = 0
    position: int = 0
    tab: str = "inside"  # the view it opens: Inside a step, or for the last section the Why? tab

    def state_fields(self) -> dict[str, int | str]:
        """The `ExplorerState` fields that open this stage (or the view `tab`)."""
        if self.tab != "inside":
            return {"tab": self.tab}
        return {
            "tab": self.tab,
            "stage": self.stage,
            "stage_layer": self.layer,
            "stage_head": self.head,
            "stage_position": self.position,
        }


@dataclass(frozen=True)
class Kind:
    """What a section is, before any sentence: its key, heading, and which figures it has."""

    key: str
    heading: str  # in English (marked `N_`): `_(kind.heading)` where it is shown
    tensors: bool  # an HTML block of tensors (or the token chips)
    plot: bool  # a Plotly figure
    opens: str = "inside"  # the view its button opens (`Link.tab`)


SECTIONS = (
    Kind("tokens", N_("1 · Tokens"), tensors=True, plot=False),
    Kind("embedding", N_("2 · Embeddings + positions"), tensors=True, plot=False),
    Kind("scores", N_("3 · Queries, keys and scores"), tensors=True, plot=True),
    Kind("heads", N_("4 · Many heads, then W^O"), tensors=True, plot=False),
    Kind("add_norm", N_("5 · The residual connection and LayerNorm"), tensors=True, plot=False),
    Kind("ffn", N_("6 · The feed-forward network"), tensors=True, plot=False),
    Kind("masks", N_("7 · Masks: the decoder may not look ahead"), tensors=False, plot=True),
    Kind("cross", N_("8 · Cross-attention: reading the source"), tensors=False, plot=True),
    Kind("stacks", N_("9 · The stacks: the residual stream"), tensors=True, plot=False),
    Kind("output", N_("10 · Next-token probabilities"), tensors=False, plot=True),
    Kind("layers", N_("11 · What each layer would say"), tensors=True, plot=False),
    Kind("explained", N_("12 · Attention is not the explanation"), tensors=False, plot=True, opens="why"),
)
KEYS = tuple(kind.key for kind in SECTIONS)


@dataclass(frozen=True)
class Section:
    """One section of the tour, for the current step: its Markdown, its figures, and its stage."""

    kind: Kind
    text: str  # Markdown with this sentence's numbers (the heading included)
    link: Link
    tensors: str | None = None  # HTML
    plot: figures.Figure | None = None


@dataclass(frozen=True)
class Thread:
    """What the tour follows: the worked step, the pieces, and the source position and encoder head it shows."""

    worked: WorkedStep
    source: list[str]
    target: list[str]
    read: int  # the source position the current step reads most (last decoder layer, heads averaged)
    head: int  # encoder layer 0's head whose weights at `read` are the most decided (the highest top weight)

    @property
    def now(self) -> str:
        """The target piece at the position computed now (the step predicts the piece after it)."""
        return self.target[-1]


def thread_of(explorer: Explorer, worked: WorkedStep | None = None) -> Thread:
    """The step worked through, and the source position and head the tour shows."""
    worked = worked or inside.worked_step(explorer)
    tokenizer = explorer.checkpoint.tokenizer
    source = [tokenizer.source_piece(int(i)) for i in worked.source_embedding.ids]
    target = [tokenizer.target_piece(int(i)) for i in worked.target_embedding.ids]
    read = int(worked.decoder[-1].cross_attention.weights[:, -1].mean(0).argmax())
    head = int(worked.encoder[0].self_attention.weights[:, read].amax(-1).argmax())
    return Thread(worked, source, target, read, head)


def links(thread: Thread) -> dict[str, Link]:
    """Each section's stage in the Inside a step view, at the positions and heads the section talks about."""
    read = thread.read
    last_layer = len(thread.worked.decoder) - 1
    cross_head = int(thread.worked.decoder[-1].cross_attention.weights[:, -1, read].argmax())
    return {
        "tokens": Link("encoder.embedding", position=0),
        "embedding": Link("encoder.embedding", position=read),
        "scores": Link("encoder.self_attention", 0, thread.head, read),
        "heads": Link("encoder.self_attention", 0, thread.head, read),
        "add_norm": Link("encoder.self_attention_add_norm", 0, 0, read),
        "ffn": Link("encoder.ffn", 0, 0, read),
        "masks": Link("decoder.self_attention", 0, 0, read),
        "cross": Link("decoder.cross_attention", last_layer, cross_head, read),
        "stacks": Link("stacks", position=read),
        "output": Link("output", position=read),
        "layers": Link("layers", position=read),
        "explained": Link("layers", position=read, tab="why"),
    }


def link(explorer: Explorer, key: str) -> Link:
    """The stage the section `key` leads to, for the explorer's current step."""
    if key not in KEYS:
        raise KeyError(f"unknown walkthrough section {key!r}")
    return links(thread_of(explorer))[key]


def tour(explorer: Explorer, worked: WorkedStep | None = None) -> tuple[Section, ...]:
    """Every section, in order, for the explorer's current step; shared by every user at the same step of the
    same sentence with the same settings in the same language (`cache.SHARED`: the sections are never changed, their
    figures included)."""
    key = ("tour", identity(explorer.checkpoint.model), explorer.state.computed(), current())  # not the view chosen
    return SHARED.get(key, lambda: written_tour(explorer, worked))


def written_tour(
    explorer: Explorer, worked: WorkedStep | None = None, kinds: Sequence[Kind] = SECTIONS
) -> tuple[Section, ...]:
    """`tour`, written now: each section by its writer (`WRITERS`); `kinds`: only these sections."""
    thread = thread_of(explorer, worked)
    section_links = links(thread)
    sections = []
    for kind in kinds:
        text, tensors, plot = WRITERS[kind.key](explorer, thread)
        sections.append(Section(kind, f"## {_(kind.heading)}\n{text}", section_links[kind.key], tensors, plot))
    return tuple(sections)


# ---- the sections: each returns (Markdown, HTML or None, figure or None) ------------------------------------


def quoted(piece: str) -> str:
    """A piece quoted for Markdown."""
    return f"“{html.escape(piece)}”"


def number(value: float, digits: int = 2) -> str:
    """A number as the page writes it, with a true minus sign."""
    return f"{value:.{digits}f}".replace("-", "−")


def percent(p: float) -> str:
    """A probability in whole percent; "<1%" rather than a misleading "0%"."""
    return "<1%" if 0 < p < 0.005 else f"{p:.0%}"


def listed(items: list[str]) -> str:
    """Items named one after another, as the reader's language separates them ("1, 3"; "1、3")."""
    return _(", ").join(items)


def tokens_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    n_source, n_target = len(thread.source), len(thread.target)
    written = " ".join(quoted(piece) for piece in thread.target[1:]) or _("nothing yet")
    text = _(
        "Your sentence is cut into **{n_source} subword pieces** (SentencePiece; `▁` marks the start of a word), "
        "counting the end marker `</s>`, and each piece becomes an integer id: the encoder reads these ids. The "
        "decoder reads what it has written so far, after a start token {start}: {written}. This step predicts the "
        "piece that follows {now}, the one at position {position} (positions, layers and heads are counted from 0)."
    ).format(
        n_source=n_source,
        start=quoted(thread.target[0]),
        written=written,
        now=quoted(thread.now),
        position=n_target - 1,
    )
    return text, figures.token_chips_html(thread.source, thread.worked.source_embedding.ids.tolist()), None


POSITION_FORMULA = (
    "$PE_{(pos,2i)} = \\sin(pos / 10000^{2i/d_{model}})$, $PE_{(pos,2i+1)} = \\cos(pos / 10000^{2i/d_{model}})$"
)
SIZES = {  # the token's and the position's share of an embedded piece, by how their lengths compare
    "similar": N_(
        "For {piece} (id {id}, position {position}) the scaled embedding has length {token_length:.1f} and the "
        "positional row {position_length:.1f}: similar in size, so where a piece stands is not drowned out by which "
        "piece it is."
    ),
    "smaller": N_(
        "For {piece} (id {id}, position {position}) the scaled embedding has length {token_length:.1f} and the "
        "positional row {position_length:.1f}: smaller, so which piece it is weighs more than where it stands."
    ),
    "larger": N_(
        "For {piece} (id {id}, position {position}) the scaled embedding has length {token_length:.1f} and the "
        "positional row {position_length:.1f}: larger, so where a piece stands is not drowned out by which piece it "
        "is."
    ),
}


def embedding_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    embedding, position = thread.worked.source_embedding, thread.read
    n_vocab, d_model = explorer.checkpoint.model.config.src_vocab_size, embedding.out.shape[-1]
    token_length = float((embedding.token_vectors[position] * embedding.scale).norm())
    position_length = float(embedding.positions[position].norm())
    if position_length == 0:
        lengths = _(
            "Positions are **switched off** (in *Positions*): nothing is added, and the model cannot tell in "
            "which order the pieces came."
        )
    else:
        ratio = position_length / token_length
        size = "similar" if 0.5 <= ratio <= 2 else ("smaller" if ratio < 0.5 else "larger")
        lengths = _(SIZES[size]).format(
            piece=quoted(thread.source[position]),
            id=int(embedding.ids[position]),
            position=position,
            token_length=token_length,
            position_length=position_length,
        )
    text = _(
        "Each id picks a row of the embedding table E ({n_vocab:,} × {d_model}), and the row is multiplied by "
        "√d_model = {scale:.0f} (§3.4). Attention itself ignores order, so a **positional encoding** is added "
        "(§3.5): {formula}. {lengths} The matrix X below, one row per piece, is what enters the first encoder layer."
    ).format(n_vocab=n_vocab, d_model=d_model, scale=embedding.scale, formula=POSITION_FORMULA, lengths=lengths)
    title = f"X = E · √d_model + PE   (S, d_model) = {tuple(embedding.out.shape)}"
    panel = TensorPanel(title, embedding.out, y_labels=thread.source, highlight_row=position)
    return text, figures.tensor_panels_html([panel]), None


def scores_section(explorer: Explorer, thread: Thread) -> tuple[str, str, figures.Figure]:
    attention, position, h = thread.worked.encoder[0].self_attention, thread.read, thread.head
    source = thread.source
    d_k = attention.q.shape[-1]
    scores, weights = attention.scores[h, position], attention.weights[h, position]
    order = [int(i) for i in scores.argsort(descending=True) if bool(attention.allowed[position, i])]
    high, second, low = order[0], order[min(1, len(order) - 1)], order[-1]
    text = _(
        "Every piece asks a **query** and offers a **key** and a **value**, three projections of its vector: "
        "$q = xW_Q$, $k = xW_K$, $v = xW_V$ (§3.2.1). A query's score against each key is their dot product "
        "divided by √d_k = √{d_k} = {root:.0f}; softmax turns the scores into weights that sum to 1.\n\n"
        "In encoder layer 0, head {head}, the query of {piece} has its highest score, {high_score}, against {high}, "
        "the next, {second_score}, against {second}, and the lowest, {low_score}, against {low}; softmax gives "
        "{high} weight {weight}. Every query does the same at once: the map below is {formula}, one row per query, "
        "and multiplying it by $V$ gives the head's output."
    ).format(
        d_k=d_k,
        root=d_k**0.5,
        head=h,
        piece=quoted(source[position]),
        high_score=number(scores[high]),
        high=quoted(source[high]),
        second_score=number(scores[second]),
        second=quoted(source[second]),
        low_score=number(scores[low]),
        low=quoted(source[low]),
        weight=number(weights[high]),
        formula="$\\mathrm{softmax}(QK^\\top / \\sqrt{d_k})$",
    )
    bars = {"kind": "bars", "x_labels": source, "number_format": ".2f"}
    q_title = _("q of “{piece}”, head {head}").format(piece=source[position], head=h)
    k_title = _("K, head {head}").format(head=h)
    panels = [
        TensorPanel(f"{q_title}   (d_k,) = ({d_k},)", attention.q[h, position]),
        TensorPanel(f"{k_title}   (S, d_k) = {tuple(attention.k[h].shape)}", attention.k[h], y_labels=source),
        TensorPanel(_("scores = q · k / √d_k") + "   (S,)", scores, masked=~attention.allowed[position], **bars),
        TensorPanel(_("weights = softmax(scores)") + "   (S,)", weights, **bars),
    ]
    masked = None if bool(attention.allowed.all()) else ~attention.allowed  # the figure reads both back to the CPU
    figure = figures.attention_heatmap(
        attention.weights[h],
        source,
        source,
        title=_("Encoder self-attention, layer 0, head {head}").format(head=h),
        highlight_query=position,
        family="encoder",
        masked=masked,
    )
    return text, figures.tensor_panels_html(panels), figure


def heads_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    attention, position = thread.worked.encoder[0].self_attention, thread.read
    n_heads, d_k = attention.q.shape[0], attention.q.shape[-1]
    d_model = attention.concat.shape[-1]
    by_piece: dict[int, list[int]] = {}
    for h in range(n_heads):
        by_piece.setdefault(int(attention.weights[h, position].argmax()), []).append(h)

    def looking(piece: int, heads: list[int]) -> str:
        """What `heads` do at `piece`: "heads 0, 2 look most at “▁the” (0.61, 0.48)"."""
        return ngettext(
            "head {heads} looks most at {piece} ({weights})",
            "heads {heads} look most at {piece} ({weights})",
            len(heads),
        ).format(
            heads=listed([str(h) for h in heads]),
            piece=quoted(thread.source[piece]),
            weights=listed([number(attention.weights[h, position, piece]) for h in heads]),
        )

    looks = _("; ").join(looking(piece, heads) for piece, heads in by_piece.items())
    silenced = [str(h) for h in range(n_heads) if not bool(attention.kept[h])]
    if silenced:
        zeros = _("Head {heads} is silenced: its {d_k} numbers are zeros here.").format(heads=listed(silenced), d_k=d_k)
    else:
        zeros = _("If you silence a head in the *Masks and heads* tab, its {d_k} numbers are zeros here.").format(
            d_k=d_k
        )
    text = _(
        "One head makes a single weighted average; several can each look for something different (§3.2.2). The "
        "layer runs **{n_heads} heads** side by side, each with its own $W_Q, W_K, W_V$ that project to d_k = "
        "{d_k} numbers. At {piece} in encoder layer 0, {looks}. The heads' outputs are put side by side, "
        "{n_heads} × {d_k} = {d_model} numbers, and $W^O$ ({d_model} × {d_model}) mixes them into one vector: "
        "{formula}. {zeros}"
    ).format(
        n_heads=n_heads,
        d_k=d_k,
        piece=quoted(thread.source[position]),
        looks=looks,
        d_model=d_model,
        formula="$\\mathrm{MultiHead} = \\mathrm{Concat}(head_0, \\dots, head_{H-1})\\,W^O$",
        zeros=zeros,
    )
    each_head = attention.heads[:, position]
    each_title = _("each head's output at “{piece}”").format(piece=thread.source[position])
    panels = [
        TensorPanel(
            f"{each_title}   (H, d_k) = {tuple(each_head.shape)}",
            each_head,
            y_labels=[_("head {head}").format(head=h) for h in range(n_heads)],
        ),
        TensorPanel(f"Concat   (H·d_k,) = ({d_model},)", attention.concat[position]),
        TensorPanel(f"Concat · W^O + b_O   (d_model,) = ({d_model},)", attention.out[position]),
    ]
    return text, figures.tensor_panels_html(panels), None


def add_norm_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    add_norm, position = thread.worked.encoder[0].self_attention_add_norm, thread.read
    mean, variance = float(add_norm.mean[position]), float(add_norm.variance[position])
    if add_norm.pre_norm:
        how = _(
            "This model is **pre-norm**: LayerNorm comes *before* each sub-layer, and the sub-layer's output is "
            "simply added to the stream, {formula}; a final LayerNorm closes each stack."
        ).format(formula="$x + \\mathrm{Sublayer}(\\mathrm{LayerNorm}(x))$")
    else:
        how = _("As in the paper (**post-norm**), the sum is normalised: {formula} (§3.1).").format(
            formula="$\\mathrm{LayerNorm}(x + \\mathrm{Sublayer}(x))$"
        )
    text = _(
        "The attention's output does not replace the vector of {piece}: it is **added** to it, the residual "
        "connection, so each sub-layer only learns a change. {how} Here the vector LayerNorm reads has mean "
        "{mean:.3f} and variance {variance:.3f}; LayerNorm brings them to 0 and 1, then scales each dimension by γ "
        "and shifts it by β, both learned."
    ).format(piece=quoted(thread.source[position]), how=how, mean=mean, variance=variance)
    tensors, _caption = inside.add_norm_view(add_norm, position, "")
    return text, tensors, None


def ffn_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    ffn, position = thread.worked.encoder[0].ffn, thread.read
    n_hidden, d_model = ffn.hidden.shape[-1], ffn.out.shape[-1]
    zeros = ffn.exactly_zero(position)
    if ffn.activation == "relu":
        hidden = _(
            "ReLU cuts every negative value to exactly 0: at {piece} in encoder layer 0, {zeros} of the {n_hidden} "
            "hidden values are exactly zero ({share:.0%})."
        )
    else:
        hidden = _(
            "At {piece} in encoder layer 0, {zeros} of the {n_hidden} hidden values are exactly zero ({share:.0%})."
        )
    hidden = hidden.format(
        piece=quoted(thread.source[position]), zeros=zeros, n_hidden=n_hidden, share=zeros / n_hidden
    )
    text = _(
        "Then every position goes, on its own, through a two-layer network, the same at every position: {formula} "
        "(§3.3), up to d_ff = {n_hidden} dimensions and back down to {d_model}. {hidden} The FFN's output is added "
        "and normalised like the attention's."
    ).format(
        formula=f"$\\mathrm{{FFN}}(x) = \\mathrm{{{ffn.activation}}}(xW_1 + b_1)W_2 + b_2$",
        n_hidden=n_hidden,
        d_model=d_model,
        hidden=hidden,
    )
    tensors, _caption = inside.ffn_view(ffn, position, "")
    return text, tensors, None


def masks_section(explorer: Explorer, thread: Thread) -> tuple[str, None, figures.Figure]:
    attention = thread.worked.decoder[0].self_attention
    n = len(thread.target)
    hidden = int((~attention.allowed).sum())
    state = explorer.state
    if state.causal_mask:
        how = _(
            "The decoder has read {n} pieces. In its self-attention each position may look only at itself and "
            "the positions before it: the **causal mask** sets the scores above the diagonal to −∞ before the "
            "softmax, so their weights are exactly 0 (§3.2.3). Here that hides {hidden} of the {scores} scores: "
            "{first} sees only itself, {now} sees all {n}. In training, the whole translation is read at once, and "
            "the mask is what keeps a position from copying the word it must predict."
        ).format(n=n, hidden=hidden, scores=n * n, first=quoted(thread.target[0]), now=quoted(thread.now))
    else:
        how = _(
            "The **causal mask is off** (in *Masks and heads*): every position now sees the ones after it too. "
            "At this step that changes the earlier rows only; in training the model could copy the answer."
        )
    text = _(
        "{how} A separate **padding mask** hides `<pad>` keys when shorter sentences share a batch; a single "
        "sentence has none (pad it in *Masks and heads* to see one)."
    ).format(how=how)
    snapshot = explorer.snapshot()
    tokens = snapshot.target_tokens
    if state.causal_mask:
        title = _("Decoder self-attention, layer 0 (causal mask on)")
    else:
        title = _("Decoder self-attention, layer 0 (causal mask OFF)")
    figure = figures.attention_heatmap(
        snapshot.decoder_self[0].mean(0).numpy(),
        tokens,
        tokens,
        title=title,
        highlight_query=len(tokens) - 1,
        family="decoder_self",
        masked=render.masked_cells(snapshot, state, "decoder_self"),
    )
    return text, None, figure


def cross_section(explorer: Explorer, thread: Thread) -> tuple[str, None, figures.Figure]:
    cross = thread.worked.decoder[-1].cross_attention
    weights = cross.weights[:, -1].mean(0)
    second = int(weights.argsort(descending=True)[min(1, len(thread.source) - 1)])
    heads = cross.weights[:, -1, thread.read]
    text = _(
        "Between its self-attention and its FFN, each of the {n_layers} decoder layers has a **cross-attention** "
        "(the paper's encoder–decoder attention): the queries come from the decoder, the keys and values from the "
        "encoder's output, the *memory* (S × d_model = {shape}). Each layer's keys and values of the memory are "
        "computed once, at the first step, and cached. This is where the translation looks at the source: in the "
        "last layer, averaged over the heads, the position of {now} reads {read} with weight {weight} and {second} "
        "with {second_weight}; head {head} reads {read} most ({head_weight})."
    ).format(
        n_layers=len(thread.worked.decoder),
        shape=tuple(thread.worked.memory.shape),
        now=quoted(thread.now),
        read=quoted(thread.source[thread.read]),
        weight=number(weights[thread.read]),
        second=quoted(thread.source[second]),
        second_weight=number(weights[second]),
        head=int(heads.argmax()),
        head_weight=number(heads.max()),
    )
    snapshot = explorer.snapshot()
    figure = figures.attention_heatmap(
        snapshot.cross[-1].mean(0).numpy(),
        snapshot.target_tokens,
        snapshot.source_tokens,
        title=_("Cross-attention, last layer, head average"),
        highlight_query=len(snapshot.target_tokens) - 1,
        family="cross",
        masked=render.masked_cells(snapshot, explorer.state, "cross"),
    )
    return text, None, figure


def stacks_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    worked = thread.worked
    tensors, _caption = inside.stacks_view(worked, thread.source, thread.target, thread.read)
    closeness = inside.stream_closeness(worked, "decoder", worked.position)[2].tolist()
    after_layer_0 = 3  # the embedding, then layer 0's three sub-layers: self-attention, cross-attention, FFN
    if worked.pre_norm:
        flow = _(
            "Each sub-layer reads the vector of every position and adds its output to it, so one vector per position "
            "flows up the stack, the *residual stream*."
        )
    else:
        flow = _(
            "Each sub-layer reads the vector of every position and adds its output to it, and LayerNorm rescales it "
            "after each addition, so one vector per position flows up the stack, the *residual stream*."
        )
    text = _(
        "The paper stacks N layers of the same shape, each with its own weights: here {n_encoder} in the encoder and "
        "{n_decoder} in the decoder. {flow} The last rows below follow the vector of {now} up the decoder. Its cosine "
        "similarity with the vector that leaves the stack (1 = the same direction, 0 = unrelated) is {embedding} "
        "after the embedding and {layer_0} after layer 0. Above them, {source} goes up the encoder; its last row is "
        "the memory."
    ).format(
        n_encoder=len(worked.encoder),
        n_decoder=len(worked.decoder),
        flow=flow,
        now=quoted(thread.now),
        embedding=number(closeness[0]),
        layer_0=number(closeness[min(after_layer_0, len(closeness) - 1)]),
        source=quoted(thread.source[thread.read]),
    )
    return text, tensors, None


STRATEGY_STEPS = {  # what Step does, by `ExplorerState.strategy`
    "greedy": N_(
        "This page decodes greedily: Step takes the most probable piece (the paper used beam search, width 4); "
        "press **Step** and every section moves on."
    ),
    "sampling": N_(
        "This page samples: Step draws a piece from these probabilities (the paper used beam search, width 4); "
        "press **Step** and every section moves on."
    ),
    "beam": N_(
        "This page runs beam search: Step extends the best beams (the paper used beam search, width 4); press "
        "**Step** and every section moves on."
    ),
}
COMPARED = {  # how the decoder's last vector becomes logits, by the output projection's matrix
    "own": N_(
        "The decoder's last vector at {now} ({size} numbers) is compared, by a dot product, with a matrix of its "
        "own, W_out: one **logit** for each of the {vocabulary:,} pieces of the vocabulary (§3.4), then a softmax: "
        "{formula}."
    ),
    "shared": N_(
        "The decoder's last vector at {now} ({size} numbers) is compared, by a dot product, with every row of the "
        "same table E as in section 2: one **logit** for each of the {vocabulary:,} pieces of the vocabulary "
        "(§3.4), then a softmax: {formula}."
    ),
    "target": N_(
        "The decoder's last vector at {now} ({size} numbers) is compared, by a dot product, with every row of the "
        "target embedding table E: one **logit** for each of the {vocabulary:,} pieces of the vocabulary (§3.4), "
        "then a softmax: {formula}."
    ),
}


def output_section(explorer: Explorer, thread: Thread) -> tuple[str, None, figures.Figure]:
    output, tokenizer = thread.worked.output, explorer.checkpoint.tokenizer
    model = explorer.checkpoint.model
    ids, probabilities = output.top(inside.TOP)
    labels = [tokenizer.target_piece(int(i)) for i in ids]
    best = int(ids[0])
    runner = int(ids[1]) if len(ids) > 1 else best
    if not model.config.tie_output:
        table, matrix = "own", "W_{out}"
    elif model.src_embed.tokens is model.tgt_embed.tokens:
        table, matrix = "shared", "E"
    else:
        table, matrix = "target", "E"
    compared = _(COMPARED[table]).format(
        now=quoted(thread.now),
        size=output.final.numel(),
        vocabulary=model.config.tgt_vocab_size,
        formula=f"$P(y_t \\mid y_{{<t}}, x) = \\mathrm{{softmax}}(h_t {matrix}^\\top)$",
    )
    if explorer.finished:
        then = _("This was the last step: it wrote `</s>`, and the translation is finished.")
    else:
        then = _(STRATEGY_STEPS[explorer.state.strategy])
    text = _(
        "{compared} The highest logit is {logit}, for {best}, which gets probability {probability:.1%}; {runner} "
        "follows with {runner_logit} and {runner_probability:.1%}. {then}"
    ).format(
        compared=compared,
        logit=number(output.logits[best]),
        best=quoted(labels[0]),
        probability=float(probabilities[0]),
        runner=quoted(tokenizer.target_piece(runner)),
        runner_logit=number(output.logits[runner]),
        runner_probability=float(output.probabilities[runner]),
        then=then,
    )
    top_ids = ids.tolist()
    written = top_ids.index(thread.worked.chosen) if explorer.finished and thread.worked.chosen in top_ids else None
    title = _("After {piece}: the {count} most probable").format(piece=quoted(thread.now), count=inside.TOP)
    figure = figures.candidates_bar(labels, probabilities.tolist(), chosen=written, title=title)
    return text, None, figure


LAYER_SAYS = {  # what a layer picks, by (whether it is the last layer, whether it picks the chosen piece)
    (False, True): N_("layer {layer} picks {piece} ({probability})"),
    (True, True): N_("layer {layer}, the real output, picks {piece} ({probability})"),
    (False, False): N_("layer {layer} picks {picked} ({piece} {probability})"),
    (True, False): N_("layer {layer}, the real output, picks {picked} ({piece} {probability})"),
}


def layers_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    tokenizer = explorer.checkpoint.tokenizer
    chosen = thread.worked.chosen
    name = tokenizer.target_piece(chosen)
    predictions = thread.worked.layer_predictions
    last = len(predictions) - 1

    def says(prediction) -> str:
        """What the layer of `prediction` picks ("layer 1 picks “▁drei” (84%)"), with the chosen piece's probability."""
        return _(LAYER_SAYS[prediction.layer == last, prediction.top_ids[0] == chosen]).format(
            layer=prediction.layer,
            piece=quoted(name),
            probability=percent(prediction.chosen_probability),
            picked=quoted(tokenizer.target_piece(prediction.top_ids[0])),
        )

    said = _("; ").join(says(prediction) for prediction in predictions)
    on_top = [prediction.top_ids[0] == chosen for prediction in predictions]
    first = next((i for i in range(len(on_top)) if all(on_top[i:])), None)  # from here on it stays first
    if first is None:
        known = _("Not even the last layer ranks {piece} first.").format(piece=quoted(name))
    elif first == last:
        known = _("Only the last layer ranks {piece} first.").format(piece=quoted(name))
    else:
        known = _("{piece} is ranked first from layer {layer} on.").format(piece=quoted(name), layer=first)
    if thread.worked.pre_norm:
        lens = _(
            "When does the model know? Put each decoder layer's output at this position through the final "
            "projection as if no layer came after it (the *logit lens*) (with the final LayerNorm): {said}. {known}"
        )
    else:
        lens = _(
            "When does the model know? Put each decoder layer's output at this position through the final "
            "projection as if no layer came after it (the *logit lens*): {said}. {known}"
        )
    tensors, _caption = inside.layers_view(thread.worked, explorer)
    return lens.format(said=said, known=known), tensors, None


def explained_section(explorer: Explorer, thread: Thread) -> tuple[str, None, figures.Figure]:
    """The tour followed the source piece read most: how much did it make the next token? (`explorer.why`)"""
    from . import why  # (why draws with render, as the tour does)

    found = why.contributions_of(explorer)
    total = float(found.source.abs().sum() + found.target.abs().sum()) or 1.0
    shares = found.source.numpy() / total
    attention = thread.worked.decoder[-1].cross_attention.weights[:, -1].mean(0).float().cpu().numpy()
    made = int(abs(shares).argmax())
    token = quoted(why.piece(explorer, why.explained(explorer).token))
    if made == thread.read:
        verdict = _("Here the two agree: {read} also makes the largest share, {share}.").format(
            read=quoted(thread.source[thread.read]), share=percent(abs(shares[made]))
        )
    else:
        verdict = _(
            "Here they disagree: {read} makes {read_share} of it, and the largest share, {share}, comes from {made}, "
            "which the step reads with {made_attention} of its attention."
        ).format(
            read=quoted(thread.source[thread.read]),
            read_share=percent(abs(shares[thread.read])),
            share=percent(abs(shares[made])),
            made=quoted(thread.source[made]),
            made_attention=percent(float(attention[made])),
        )
    text = _(
        "This tour followed {read}, the source piece the step reads most (the last decoder layer's cross-attention, "
        "{attention} on average over the heads). But where a model looks is not what made its choice. *Integrated "
        "gradients* measure what each piece contributes to the score of {token}: its embedding grows from zero to "
        "its value, and the score's change is shared out among the pieces. {verdict} In all, {source} of the "
        "contribution comes from the source sentence and {written} from the words already written. The *Why?* tab "
        'shows every piece\'s share beside the attention, asks "why this token and not that one?", and silences '
        "each head in turn."
    ).format(
        read=quoted(thread.source[thread.read]),
        attention=percent(float(attention[thread.read])),
        token=token,
        verdict=verdict,
        source=percent(found.source_share),
        written=percent(1 - found.source_share),
    )
    snapshot = explorer.snapshot()
    figure = figures.contribution_bars(
        [readable(p) for p in snapshot.source_tokens], shares,
        [readable(p) for p in snapshot.target_tokens], found.target.numpy() / total,
        attention=attention, title=_("What made {token}: each piece's share, and the attention").format(token=token),
    )  # fmt: skip
    return text, None, figure


WRITERS = {  # each section's writer, by its key (`Kind.key`)
    "tokens": tokens_section,
    "embedding": embedding_section,
    "scores": scores_section,
    "heads": heads_section,
    "add_norm": add_norm_section,
    "ffn": ffn_section,
    "masks": masks_section,
    "cross": cross_section,
    "stacks": stacks_section,
    "output": output_section,
    "layers": layers_section,
    "explained": explained_section,
}
