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
from dataclasses import dataclass

from transformer.worked import WorkedStep

from . import figures, inside, render
from .cache import SHARED, identity
from .figures import TensorPanel
from .session import Explorer


@dataclass(frozen=True)
class Link:
    """Where a section leads in the Inside a step view: a stage, with its layer, head and source position."""

    stage: str
    layer: int = 0
    head: int = 0
    position: int = 0

    def state_fields(self) -> dict[str, int | str]:
        """The `ExplorerState` fields that open this stage."""
        return {
            "stage": self.stage,
            "stage_layer": self.layer,
            "stage_head": self.head,
            "stage_position": self.position,
        }


@dataclass(frozen=True)
class Kind:
    """What a section is, before any sentence: its key, heading, and which figures it has."""

    key: str
    heading: str
    tensors: bool  # an HTML block of tensors (or the token chips)
    plot: bool  # a Plotly figure


SECTIONS = (
    Kind("tokens", "1 · Tokens", tensors=True, plot=False),
    Kind("embedding", "2 · Embeddings + positions", tensors=True, plot=False),
    Kind("scores", "3 · Queries, keys and scores", tensors=True, plot=True),
    Kind("heads", "4 · Many heads, then W^O", tensors=True, plot=False),
    Kind("add_norm", "5 · The residual connection and LayerNorm", tensors=True, plot=False),
    Kind("ffn", "6 · The feed-forward network", tensors=True, plot=False),
    Kind("masks", "7 · Masks: the decoder may not look ahead", tensors=False, plot=True),
    Kind("cross", "8 · Cross-attention: reading the source", tensors=False, plot=True),
    Kind("stacks", "9 · The stacks: the residual stream", tensors=True, plot=False),
    Kind("output", "10 · Next-token probabilities", tensors=False, plot=True),
    Kind("layers", "11 · What each layer would say", tensors=True, plot=False),
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
    }


def link(explorer: Explorer, key: str) -> Link:
    """The stage the section `key` leads to, for the explorer's current step."""
    if key not in KEYS:
        raise KeyError(f"unknown walkthrough section {key!r}")
    return links(thread_of(explorer))[key]


def tour(explorer: Explorer, worked: WorkedStep | None = None) -> tuple[Section, ...]:
    """Every section, in order, for the explorer's current step; shared by every user at the same step of the
    same sentence with the same settings (`cache.SHARED`: the sections are never changed, their figures included)."""
    key = ("tour", identity(explorer.checkpoint.model), explorer.state.computed())  # not the view chosen
    return SHARED.get(key, lambda: written_tour(explorer, worked))


def written_tour(explorer: Explorer, worked: WorkedStep | None = None) -> tuple[Section, ...]:
    """`tour`, written now: each section by its writer (`WRITERS`)."""
    thread = thread_of(explorer, worked)
    section_links = links(thread)
    sections = []
    for kind in SECTIONS:
        text, tensors, plot = WRITERS[kind.key](explorer, thread)
        sections.append(Section(kind, f"### {kind.heading}\n{text}", section_links[kind.key], tensors, plot))
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


def tokens_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    n_source, n_target = len(thread.source), len(thread.target)
    written = " ".join(quoted(piece) for piece in thread.target[1:]) or "nothing yet"
    text = (
        f"Your sentence is cut into **{n_source} subword pieces** (SentencePiece; `▁` marks the start of a word), "
        "counting the end marker `</s>`, and each piece becomes an integer id: the encoder reads these ids. The "
        f"decoder reads what it has written so far, after a start token {quoted(thread.target[0])}: {written}. This "
        f"step predicts the piece that follows {quoted(thread.now)}, the one at position {n_target - 1} (positions, "
        "layers and heads are counted from 0)."
    )
    return text, figures.token_chips_html(thread.source, thread.worked.source_embedding.ids.tolist()), None


def embedding_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    embedding, position = thread.worked.source_embedding, thread.read
    n_vocab, d_model = explorer.checkpoint.model.config.src_vocab_size, embedding.out.shape[-1]
    token_length = float((embedding.token_vectors[position] * embedding.scale).norm())
    position_length = float(embedding.positions[position].norm())
    if position_length == 0:
        lengths = (
            "Positions are **switched off** (in *Positions*): nothing is added, and the model cannot tell in "
            "which order the pieces came."
        )
    else:
        ratio = position_length / token_length
        size = "similar in size" if 0.5 <= ratio <= 2 else ("smaller" if ratio < 0.5 else "larger")
        if size == "smaller":
            weighs = "which piece it is weighs more than where it stands."
        else:
            weighs = "where a piece stands is not drowned out by which piece it is."
        lengths = (
            f"For {quoted(thread.source[position])} (id {int(embedding.ids[position])}, position {position}) the "
            f"scaled embedding has length {token_length:.1f} and the positional row {position_length:.1f}: {size}, "
            f"so {weighs}"
        )
    text = (
        f"Each id picks a row of the embedding table E ({n_vocab:,} × {d_model}), and the row is multiplied by "
        f"√d_model = {embedding.scale:.0f} (§3.4). Attention itself ignores order, so a **positional encoding** is "
        "added (§3.5): $PE_{(pos,2i)} = \\sin(pos / 10000^{2i/d_{model}})$, "
        "$PE_{(pos,2i+1)} = \\cos(pos / 10000^{2i/d_{model}})$. "
        f"{lengths} The matrix X below, one row per piece, is what enters the first encoder layer."
    )
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
    text = (
        "Every piece asks a **query** and offers a **key** and a **value**, three projections of its vector: "
        "$q = xW_Q$, $k = xW_K$, $v = xW_V$ (§3.2.1). A query's score against each key is their dot product "
        f"divided by √d_k = √{d_k} = {d_k**0.5:.0f}; softmax turns the scores into weights that sum to 1.\n\n"
        f"In encoder layer 0, head {h}, the query of {quoted(source[position])} has its highest score, "
        f"{number(scores[high])}, against {quoted(source[high])}, the next, {number(scores[second])}, against "
        f"{quoted(source[second])}, and the lowest, {number(scores[low])}, against {quoted(source[low])}; softmax "
        f"gives {quoted(source[high])} weight {number(weights[high])}. Every query does the same at once: the map "
        "below is $\\mathrm{softmax}(QK^\\top / \\sqrt{d_k})$, one row per query, and multiplying it by $V$ gives "
        "the head's output."
    )
    bars = {"kind": "bars", "x_labels": source, "number_format": ".2f"}
    panels = [
        TensorPanel(f"q of “{source[position]}”, head {h}   (d_k,) = ({d_k},)", attention.q[h, position]),
        TensorPanel(f"K, head {h}   (S, d_k) = {tuple(attention.k[h].shape)}", attention.k[h], y_labels=source),
        TensorPanel("scores = q · k / √d_k   (S,)", scores, masked=~attention.allowed[position], **bars),
        TensorPanel("weights = softmax(scores)   (S,)", weights, **bars),
    ]
    masked = None if bool(attention.allowed.all()) else (~attention.allowed).numpy()
    figure = figures.attention_heatmap(
        attention.weights[h].numpy(),
        source,
        source,
        title=f"Encoder self-attention, layer 0, head {h}",
        highlight_query=position,
        family="encoder",
        masked=masked,
    )
    return text, figures.tensor_panels_html(panels), figure


def heads_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    attention, position = thread.worked.encoder[0].self_attention, thread.read
    n_heads, _, d_k = attention.q.shape
    d_model = attention.concat.shape[-1]
    by_piece: dict[int, list[int]] = {}
    for h in range(n_heads):
        by_piece.setdefault(int(attention.weights[h, position].argmax()), []).append(h)

    def looking(piece: int, heads: list[int]) -> str:
        """What `heads` do at `piece`: "heads 0, 2 look most at “▁the” (0.61, 0.48)"."""
        weights = ", ".join(number(attention.weights[h, position, piece]) for h in heads)
        names = ", ".join(map(str, heads))
        who = f"head {names} looks" if len(heads) == 1 else f"heads {names} look"
        return f"{who} most at {quoted(thread.source[piece])} ({weights})"

    looks = "; ".join(looking(piece, heads) for piece, heads in by_piece.items())
    silenced = [str(h) for h in range(n_heads) if not bool(attention.kept[h])]
    if silenced:
        zeros = f"Head {', '.join(silenced)} is silenced: its {d_k} numbers are zeros here."
    else:
        zeros = f"If you silence a head in the *Masks and heads* tab, its {d_k} numbers are zeros here."
    text = (
        "One head makes a single weighted average; several can each look for something different (§3.2.2). The "
        f"layer runs **{n_heads} heads** side by side, each with its own $W_Q, W_K, W_V$ that project to d_k = "
        f"{d_k} numbers. At {quoted(thread.source[position])} in encoder layer 0, {looks}. The heads' outputs are "
        f"put side by side, {n_heads} × {d_k} = {d_model} numbers, and $W^O$ ({d_model} × {d_model}) mixes them "
        "into one vector: $\\mathrm{MultiHead} = \\mathrm{Concat}(head_0, \\dots, head_{H-1})\\,W^O$. " + zeros
    )
    each_head = attention.heads[:, position]
    panels = [
        TensorPanel(
            f"each head's output at “{thread.source[position]}”   (H, d_k) = {tuple(each_head.shape)}",
            each_head,
            y_labels=[f"head {h}" for h in range(n_heads)],
        ),
        TensorPanel(f"Concat   (H·d_k,) = ({d_model},)", attention.concat[position]),
        TensorPanel(f"Concat · W^O + b_O   (d_model,) = ({d_model},)", attention.out[position]),
    ]
    return text, figures.tensor_panels_html(panels), None


def add_norm_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    add_norm, position = thread.worked.encoder[0].self_attention_add_norm, thread.read
    mean, variance = float(add_norm.mean[position]), float(add_norm.variance[position])
    if add_norm.pre_norm:
        how = (
            "This model is **pre-norm**: LayerNorm comes *before* each sub-layer, and the sub-layer's output is "
            "simply added to the stream, $x + \\mathrm{Sublayer}(\\mathrm{LayerNorm}(x))$; a final LayerNorm "
            "closes each stack."
        )
    else:
        how = (
            "As in the paper (**post-norm**), the sum is normalised: "
            "$\\mathrm{LayerNorm}(x + \\mathrm{Sublayer}(x))$ (§3.1)."
        )
    text = (
        f"The attention's output does not replace the vector of {quoted(thread.source[position])}: it is **added** "
        f"to it, the residual connection, so each sub-layer only learns a change. {how} Here the vector LayerNorm "
        f"reads has mean {mean:.3f} and variance {variance:.3f}; LayerNorm brings them to 0 and 1, then scales each "
        "dimension by γ and shifts it by β, both learned."
    )
    tensors, _ = inside.add_norm_view(add_norm, position, "")
    return text, tensors, None


def ffn_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    ffn, position = thread.worked.encoder[0].ffn, thread.read
    n_hidden, d_model = ffn.hidden.shape[-1], ffn.out.shape[-1]
    zeros = ffn.exactly_zero(position)
    cut = " ReLU cuts every negative value to exactly 0:" if ffn.activation == "relu" else ""
    text = (
        "Then every position goes, on its own, through a two-layer network, the same at every position: "
        f"$\\mathrm{{FFN}}(x) = \\mathrm{{{ffn.activation}}}(xW_1 + b_1)W_2 + b_2$ (§3.3), up to d_ff = {n_hidden} "
        f"dimensions and back down to {d_model}.{cut} at {quoted(thread.source[position])} in encoder layer 0, "
        f"{zeros} of the {n_hidden} hidden values are exactly zero ({zeros / n_hidden:.0%}). The FFN's output is "
        "added and normalised like the attention's."
    )
    tensors, _ = inside.ffn_view(ffn, position, "")
    return text, tensors, None


def masks_section(explorer: Explorer, thread: Thread) -> tuple[str, None, figures.Figure]:
    attention = thread.worked.decoder[0].self_attention
    n = len(thread.target)
    hidden = int((~attention.allowed).sum())
    state = explorer.state
    if state.causal_mask:
        how = (
            f"The decoder has read {n} pieces. In its self-attention each position may look only at itself and "
            "the positions before it: the **causal mask** sets the scores above the diagonal to −∞ before the "
            f"softmax, so their weights are exactly 0 (§3.2.3). Here that hides {hidden} of the {n * n} scores: "
            f"{quoted(thread.target[0])} sees only itself, {quoted(thread.now)} sees all {n}. In training, the whole "
            "translation is read at once, and the mask is what keeps a position from copying the word it must "
            "predict."
        )
    else:
        how = (
            "The **causal mask is off** (in *Masks and heads*): every position now sees the ones after it too. "
            "At this step that changes the earlier rows only; in training the model could copy the answer."
        )
    text = how + (
        " A separate **padding mask** hides `<pad>` keys when shorter sentences share a batch; a single sentence "
        "has none (pad it in *Masks and heads* to see one)."
    )
    snapshot = explorer.snapshot()
    tokens = snapshot.target_tokens
    figure = figures.attention_heatmap(
        snapshot.decoder_self[0].mean(0).numpy(),
        tokens,
        tokens,
        title=f"Decoder self-attention, layer 0 (causal mask {'on' if state.causal_mask else 'OFF'})",
        highlight_query=len(tokens) - 1,
        family="decoder_self",
        masked=render.masked_cells(snapshot, state, "decoder_self"),
    )
    return text, None, figure


def cross_section(explorer: Explorer, thread: Thread) -> tuple[str, None, figures.Figure]:
    n_layers = len(thread.worked.decoder)
    cross = thread.worked.decoder[-1].cross_attention
    weights = cross.weights[:, -1].mean(0)
    second = int(weights.argsort(descending=True)[min(1, len(thread.source) - 1)])
    heads = cross.weights[:, -1, thread.read]
    read = quoted(thread.source[thread.read])
    text = (
        f"Between its self-attention and its FFN, each of the {n_layers} decoder layers has a **cross-attention** "
        "(the paper's encoder–decoder attention): the queries come from the decoder, the keys and values from the "
        f"encoder's output, the *memory* (S × d_model = {tuple(thread.worked.memory.shape)}). Each layer's keys and "
        "values of the memory are computed once, at the first step, and cached. This is where the translation "
        f"looks at the source: in the last layer, averaged over the heads, the position of {quoted(thread.now)} "
        f"reads {read} with weight {number(weights[thread.read])} and {quoted(thread.source[second])} with "
        f"{number(weights[second])}; head {int(heads.argmax())} reads {read} most ({number(heads.max())})."
    )
    snapshot = explorer.snapshot()
    figure = figures.attention_heatmap(
        snapshot.cross[-1].mean(0).numpy(),
        snapshot.target_tokens,
        snapshot.source_tokens,
        title="Cross-attention, last layer, head average",
        highlight_query=len(snapshot.target_tokens) - 1,
        family="cross",
        masked=render.masked_cells(snapshot, explorer.state, "cross"),
    )
    return text, None, figure


def stacks_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    worked = thread.worked
    tensors, _ = inside.stacks_view(worked, thread.source, thread.target, thread.read)
    closeness = inside.stream_closeness(worked, "decoder", worked.position)[2].tolist()
    after_layer_0 = 3  # the embedding, then layer 0's three sub-layers: self-attention, cross-attention, FFN
    norm = "" if worked.pre_norm else ", and LayerNorm rescales it after each addition"
    text = (
        f"The paper stacks N layers of the same shape, each with its own weights: here {len(worked.encoder)} in the "
        f"encoder and {len(worked.decoder)} in the decoder. Each sub-layer reads the vector of every position and "
        f"adds its output to it{norm}, so one vector per position flows up the stack, the *residual stream*. The "
        f"last rows below follow the vector of {quoted(thread.now)} up the decoder. Its cosine similarity with the "
        "vector that leaves the stack (1 = the same direction, 0 = unrelated) is "
        f"{number(closeness[0])} after the embedding and "
        f"{number(closeness[min(after_layer_0, len(closeness) - 1)])} after layer 0. Above them, "
        f"{quoted(thread.source[thread.read])} goes up the encoder; its last row is the memory."
    )
    return text, tensors, None


STRATEGY_STEPS = {  # what Step does, by `ExplorerState.strategy`
    "greedy": "This page decodes greedily: Step takes the most probable piece",
    "sampling": "This page samples: Step draws a piece from these probabilities",
    "beam": "This page runs beam search: Step extends the best beams",
}


def output_section(explorer: Explorer, thread: Thread) -> tuple[str, None, figures.Figure]:
    output, tokenizer = thread.worked.output, explorer.checkpoint.tokenizer
    model = explorer.checkpoint.model
    ids, probabilities = output.top(inside.TOP)
    labels = [tokenizer.target_piece(int(i)) for i in ids]
    best = int(ids[0])
    runner = int(ids[1]) if len(ids) > 1 else best
    if not model.config.tie_output:
        table, matrix = "a matrix of its own, W_out", "W_{out}"
    elif model.src_embed.tokens is model.tgt_embed.tokens:
        table, matrix = "every row of the same table E as in section 2", "E"
    else:
        table, matrix = "every row of the target embedding table E", "E"
    formula = f"$P(y_t \\mid y_{{<t}}, x) = \\mathrm{{softmax}}(h_t {matrix}^\\top)$"
    if explorer.finished:
        then = " This was the last step: it wrote `</s>`, and the translation is finished."
    else:
        strategy = STRATEGY_STEPS[explorer.state.strategy]
        then = f" {strategy} (the paper used beam search, width 4); press **Step** and every section moves on."
    text = (
        f"The decoder's last vector at {quoted(thread.now)} ({output.final.numel()} numbers) is compared, by a dot "
        f"product, with {table}: one **logit** for each of the {model.config.tgt_vocab_size:,} pieces of the "
        f"vocabulary (§3.4), then a softmax: {formula}. The highest logit is {number(output.logits[best])}, for "
        f"{quoted(labels[0])}, which gets probability {float(probabilities[0]):.1%}; "
        f"{quoted(tokenizer.target_piece(runner))} follows with {number(output.logits[runner])} and "
        f"{float(output.probabilities[runner]):.1%}.{then}"
    )
    top_ids = ids.tolist()
    written = top_ids.index(thread.worked.chosen) if explorer.finished and thread.worked.chosen in top_ids else None
    title = f"After {quoted(thread.now)}: the {inside.TOP} most probable"
    figure = figures.candidates_bar(labels, probabilities.tolist(), chosen=written, title=title)
    return text, None, figure


def layers_section(explorer: Explorer, thread: Thread) -> tuple[str, str, None]:
    tokenizer = explorer.checkpoint.tokenizer
    chosen = thread.worked.chosen
    name = tokenizer.target_piece(chosen)
    predictions = thread.worked.layer_predictions
    last = len(predictions) - 1

    def says(prediction) -> str:
        """What the layer of `prediction` picks ("layer 1 picks “▁drei” (84%)"), with the chosen piece's probability."""
        real = ", the real output," if prediction.layer == last else ""
        probability = percent(prediction.chosen_probability)
        if prediction.top_ids[0] == chosen:
            return f"layer {prediction.layer}{real} picks {quoted(name)} ({probability})"
        picked = quoted(tokenizer.target_piece(prediction.top_ids[0]))
        return f"layer {prediction.layer}{real} picks {picked} ({quoted(name)} {probability})"

    said = "; ".join(says(prediction) for prediction in predictions)
    on_top = [prediction.top_ids[0] == chosen for prediction in predictions]
    first = next((i for i in range(len(on_top)) if all(on_top[i:])), None)  # from here on it stays first
    if first is None:
        known = f"Not even the last layer ranks {quoted(name)} first."
    elif first == last:
        known = f"Only the last layer ranks {quoted(name)} first."
    else:
        known = f"{quoted(name)} is ranked first from layer {first} on."
    final_norm = " (with the final LayerNorm)" if thread.worked.pre_norm else ""
    text = (
        "When does the model know? Put each decoder layer's output at this position through the final projection "
        f"as if no layer came after it (the *logit lens*){final_norm}: {said}. {known}"
    )
    tensors, _ = inside.layers_view(thread.worked, explorer)
    return text, tensors, None


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
}
