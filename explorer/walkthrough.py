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
            "stage": self.stage, "stage_layer": self.layer, "stage_head": self.head, "stage_position": self.position
        }  # fmt: skip


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


def thread(explorer: Explorer, worked: WorkedStep | None = None) -> Thread:
    """The step worked through, and the source position and head the tour shows."""
    worked = worked or inside.worked_step(explorer)
    tokenizer = explorer.checkpoint.tokenizer
    source = [tokenizer.source_piece(int(i)) for i in worked.source_embedding.ids]
    target = [tokenizer.target_piece(int(i)) for i in worked.target_embedding.ids]
    read = int(worked.decoder[-1].cross_attention.weights[:, -1].mean(0).argmax())
    head = int(worked.encoder[0].self_attention.weights[:, read].amax(-1).argmax())
    return Thread(worked, source, target, read, head)


def links(t: Thread) -> dict[str, Link]:
    """Each section's stage in the Inside a step view, at the positions and heads the section talks about."""
    last_layer = len(t.worked.decoder) - 1
    cross = t.worked.decoder[-1].cross_attention.weights[:, -1, t.read]
    return {
        "tokens": Link("encoder.embedding", position=0),
        "embedding": Link("encoder.embedding", position=t.read),
        "scores": Link("encoder.self_attention", 0, t.head, t.read),
        "heads": Link("encoder.self_attention", 0, t.head, t.read),
        "add_norm": Link("encoder.self_attention_add_norm", 0, 0, t.read),
        "ffn": Link("encoder.ffn", 0, 0, t.read),
        "masks": Link("decoder.self_attention", 0, 0, t.read),
        "cross": Link("decoder.cross_attention", last_layer, int(cross.argmax()), t.read),
        "stacks": Link("stacks", position=t.read),
        "output": Link("output", position=t.read),
        "layers": Link("layers", position=t.read),
    }


def link(explorer: Explorer, key: str) -> Link:
    """The stage the section `key` leads to, for the explorer's current step."""
    if key not in KEYS:
        raise KeyError(f"unknown walkthrough section {key!r}")
    return links(thread(explorer))[key]


def tour(explorer: Explorer, worked: WorkedStep | None = None) -> tuple[Section, ...]:
    """Every section, in order, for the explorer's current step; shared by every user at the same step of the
    same sentence with the same settings (`cache.SHARED`: the sections are never changed, their figures included)."""
    key = ("tour", identity(explorer.checkpoint.model), explorer.state.computed())  # not the view chosen
    return SHARED.get(key, lambda: written_tour(explorer, worked))


def written_tour(explorer: Explorer, worked: WorkedStep | None = None) -> tuple[Section, ...]:
    """`tour`, written now."""
    t = thread(explorer, worked)
    made = {
        "tokens": tokens_section, "embedding": embedding_section, "scores": scores_section,
        "heads": heads_section, "add_norm": add_norm_section, "ffn": ffn_section, "masks": masks_section,
        "cross": cross_section, "stacks": stacks_section, "output": output_section, "layers": layers_section,
    }  # fmt: skip
    led = links(t)
    sections = []
    for kind in SECTIONS:
        text, tensors, plot = made[kind.key](explorer, t)
        sections.append(Section(kind, f"### {kind.heading}\n{text}", led[kind.key], tensors, plot))
    return tuple(sections)


# ---- the sections: each returns (Markdown, HTML or None, figure or None) ------------------------------------


def q(piece: str) -> str:
    """A piece quoted for Markdown."""
    return f"“{html.escape(piece)}”"


def num(value: float, digits: int = 2) -> str:
    """A number as the page writes it, with a true minus sign."""
    return f"{value:.{digits}f}".replace("-", "−")


def percent(p: float) -> str:
    """A probability in whole percent; "<1%" rather than a misleading "0%"."""
    return "<1%" if 0 < p < 0.005 else f"{p:.0%}"


def tokens_section(explorer: Explorer, t: Thread) -> tuple[str, str, None]:
    n_src, n_tgt = len(t.source), len(t.target)
    written = " ".join(q(p) for p in t.target[1:]) or "nothing yet"
    text = (
        f"Your sentence is cut into **{n_src} subword pieces** (SentencePiece; `▁` marks the start of a word), "
        "counting the end marker `</s>`, and each piece becomes an integer id: the encoder reads these ids. The "
        f"decoder reads what it has written so far, after a start token {q(t.target[0])}: {written}. This step "
        f"predicts the piece that follows {q(t.now)}, the one at position {n_tgt - 1} (positions, layers and "
        "heads are counted from 0)."
    )
    return text, figures.token_chips_html(t.source, t.worked.source_embedding.ids.tolist()), None


def embedding_section(explorer: Explorer, t: Thread) -> tuple[str, str, None]:
    e, p = t.worked.source_embedding, t.read
    n_vocab, d = explorer.checkpoint.model.config.src_vocab_size, e.out.shape[-1]
    token_length, position_length = float((e.token_vectors[p] * e.scale).norm()), float(e.positions[p].norm())
    if position_length == 0:
        where = (
            "Positions are **switched off** (in *Positions*): nothing is added, and the model cannot tell in "
            "which order the pieces came."
        )
    else:
        ratio = position_length / token_length
        size = "similar in size" if 0.5 <= ratio <= 2 else ("smaller" if ratio < 0.5 else "larger")
        where = (
            f"For {q(t.source[p])} (id {int(e.ids[p])}, position {p}) the scaled embedding has length "
            f"{token_length:.1f} and the positional row {position_length:.1f}: {size}, so "
            + ("where a piece stands is not drowned out by which piece it is." if size != "smaller"
               else "which piece it is weighs more than where it stands.")
        )  # fmt: skip
    text = (
        f"Each id picks a row of the embedding table E ({n_vocab:,} × {d}), and the row is multiplied by "
        f"√d_model = {e.scale:.0f} (§3.4). Attention itself ignores order, so a **positional encoding** is added "
        "(§3.5): $PE_{(pos,2i)} = \\sin(pos / 10000^{2i/d_{model}})$, "
        "$PE_{(pos,2i+1)} = \\cos(pos / 10000^{2i/d_{model}})$. "
        f"{where} The matrix X below, one row per piece, is what enters the first encoder layer."
    )
    panel = TensorPanel(
        f"X = E · √d_model + PE   (S, d_model) = {tuple(e.out.shape)}", e.out, y_labels=t.source, highlight_row=p
    )
    return text, figures.tensor_panels_html([panel]), None


def scores_section(explorer: Explorer, t: Thread) -> tuple[str, str, figures.Figure]:
    a, p, h = t.worked.encoder[0].self_attention, t.read, t.head
    d_k = a.q.shape[-1]
    scores, weights = a.scores[h, p], a.weights[h, p]
    order = [int(i) for i in scores.argsort(descending=True) if bool(a.allowed[p, i])]
    high, second, low = order[0], order[min(1, len(order) - 1)], order[-1]
    text = (
        "Every piece asks a **query** and offers a **key** and a **value**, three projections of its vector: "
        "$q = xW_Q$, $k = xW_K$, $v = xW_V$ (§3.2.1). A query's score against each key is their dot product "
        f"divided by √d_k = √{d_k} = {d_k**0.5:.0f}; softmax turns the scores into weights that sum to 1.\n\n"
        f"In encoder layer 0, head {h}, the query of {q(t.source[p])} has its highest score, {num(scores[high])}, "
        f"against {q(t.source[high])}, the next, {num(scores[second])}, against {q(t.source[second])}, and the "
        f"lowest, {num(scores[low])}, against {q(t.source[low])}; softmax gives {q(t.source[high])} weight "
        f"{num(weights[high])}. Every query does the same at once: the map below is "
        "$\\mathrm{softmax}(QK^\\top / \\sqrt{d_k})$, one row per query, and multiplying it by $V$ gives the "
        "head's output."
    )
    panels = [
        TensorPanel(f"q of “{t.source[p]}”, head {h}   (d_k,) = ({d_k},)", a.q[h, p]),
        TensorPanel(f"K, head {h}   (S, d_k) = {tuple(a.k[h].shape)}", a.k[h], y_labels=t.source),
        TensorPanel(
            "scores = q · k / √d_k   (S,)", scores, kind="bars", x_labels=t.source, masked=~a.allowed[p],
            number_format=".2f",
        ),
        TensorPanel("weights = softmax(scores)   (S,)", weights, kind="bars", x_labels=t.source, number_format=".2f"),
    ]  # fmt: skip
    figure = figures.attention_heatmap(
        a.weights[h].numpy(), t.source, t.source, title=f"Encoder self-attention, layer 0, head {h}",
        highlight_query=p, family="encoder", masked=(~a.allowed).numpy() if not bool(a.allowed.all()) else None,
    )  # fmt: skip
    return text, figures.tensor_panels_html(panels), figure


def heads_section(explorer: Explorer, t: Thread) -> tuple[str, str, None]:
    a, p = t.worked.encoder[0].self_attention, t.read
    n_heads, _, d_k = a.q.shape
    d = a.concat.shape[-1]
    by_piece: dict[int, list[int]] = {}
    for h in range(n_heads):
        by_piece.setdefault(int(a.weights[h, p].argmax()), []).append(h)
    looks = "; ".join(
        f"{'head' if len(heads) == 1 else 'heads'} {', '.join(map(str, heads))} "
        f"{'looks' if len(heads) == 1 else 'look'} most at {q(t.source[piece])} "
        f"({', '.join(num(a.weights[h, p, piece]) for h in heads)})"
        for piece, heads in by_piece.items()
    )
    silenced = [str(h) for h in range(n_heads) if not bool(a.kept[h])]
    text = (
        "One head makes a single weighted average; several can each look for something different (§3.2.2). The "
        f"layer runs **{n_heads} heads** side by side, each with its own $W_Q, W_K, W_V$ that project to d_k = "
        f"{d_k} numbers. At {q(t.source[p])} in encoder layer 0, {looks}. The heads' outputs are put side by "
        f"side, {n_heads} × {d_k} = {d} numbers, and $W^O$ ({d} × {d}) mixes them into one vector: "
        "$\\mathrm{MultiHead} = \\mathrm{Concat}(head_0, \\dots, head_{H-1})\\,W^O$. "
        + (f"Head {', '.join(silenced)} is silenced: its {d_k} numbers are zeros here." if silenced else
           f"If you silence a head in the *Masks and heads* tab, its {d_k} numbers are zeros here.")
    )  # fmt: skip
    panels = [
        TensorPanel(
            f"each head's output at “{t.source[p]}”   (H, d_k) = {tuple(a.heads[:, p].shape)}", a.heads[:, p],
            y_labels=[f"head {h}" for h in range(n_heads)],
        ),
        TensorPanel(f"Concat   (H·d_k,) = ({d},)", a.concat[p]),
        TensorPanel(f"Concat · W^O + b_O   (d_model,) = ({d},)", a.out[p]),
    ]  # fmt: skip
    return text, figures.tensor_panels_html(panels), None


def add_norm_section(explorer: Explorer, t: Thread) -> tuple[str, str, None]:
    s, p = t.worked.encoder[0].self_attention_add_norm, t.read
    mean, variance = float(s.mean[p]), float(s.variance[p])
    if s.pre_norm:
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
        f"The attention's output does not replace the vector of {q(t.source[p])}: it is **added** to it, the "
        f"residual connection, so each sub-layer only learns a change. {how} Here the vector LayerNorm reads "
        f"has mean {mean:.3f} and variance {variance:.3f}; LayerNorm brings them to 0 and 1, then scales each "
        "dimension by γ and shifts it by β, both learned."
    )
    html_, _ = inside.add_norm_view(s, p, "")
    return text, html_, None


def ffn_section(explorer: Explorer, t: Thread) -> tuple[str, str, None]:
    f, p = t.worked.encoder[0].ffn, t.read
    n_hidden, d = f.hidden.shape[-1], f.out.shape[-1]
    zeros = f.exactly_zero(p)
    cut = " ReLU cuts every negative value to exactly 0:" if f.activation == "relu" else ""
    text = (
        "Then every position goes, on its own, through a two-layer network, the same at every position: "
        f"$\\mathrm{{FFN}}(x) = "
        f"\\mathrm{{{f.activation}}}(xW_1 + b_1)W_2 + b_2$ (§3.3), up to d_ff = {n_hidden} dimensions and back "
        f"down to {d}.{cut} at {q(t.source[p])} in encoder layer 0, {zeros} of the {n_hidden} hidden values are "
        f"exactly zero ({zeros / n_hidden:.0%}). The FFN's output is added and normalised like the attention's."
    )
    html_, _ = inside.ffn_view(f, p, "")
    return text, html_, None


def masks_section(explorer: Explorer, t: Thread) -> tuple[str, None, figures.Figure]:
    a = t.worked.decoder[0].self_attention
    n = len(t.target)
    hidden = int((~a.allowed).sum())
    state = explorer.state
    if state.causal_mask:
        how = (
            f"The decoder has read {n} pieces. In its self-attention each position may look only at itself and "
            "the positions before it: the **causal mask** sets the scores above the diagonal to −∞ before the "
            f"softmax, so their weights are exactly 0 (§3.2.3). Here that hides {hidden} of the {n * n} scores: "
            f"{q(t.target[0])} sees only itself, {q(t.now)} sees all {n}. In training, the whole translation is "
            "read at once, and the mask is what keeps a position from copying the word it must predict."
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
    figure = figures.attention_heatmap(
        snapshot.decoder_self[0].mean(0).numpy(), snapshot.target_tokens, snapshot.target_tokens,
        title="Decoder self-attention, layer 0 (causal mask " + ("on" if state.causal_mask else "OFF") + ")",
        highlight_query=len(snapshot.target_tokens) - 1, family="decoder_self",
        masked=render.masked_cells(snapshot, state, "decoder_self"),
    )  # fmt: skip
    return text, None, figure


def cross_section(explorer: Explorer, t: Thread) -> tuple[str, None, figures.Figure]:
    n_layers = len(t.worked.decoder)
    weights = t.worked.decoder[-1].cross_attention.weights[:, -1].mean(0)
    second = int(weights.argsort(descending=True)[min(1, len(t.source) - 1)])
    heads = t.worked.decoder[-1].cross_attention.weights[:, -1, t.read]
    text = (
        f"Between its self-attention and its FFN, each of the {n_layers} decoder layers has a **cross-attention** "
        "(the paper's encoder–decoder attention): the queries come from the decoder, the keys and values from the "
        f"encoder's output, the *memory* (S × d_model = {tuple(t.worked.memory.shape)}). Each layer's keys and "
        "values of the memory are computed once, at the first step, and cached. This is where the translation "
        f"looks at the source: in the last layer, averaged over the heads, the position of {q(t.now)} reads "
        f"{q(t.source[t.read])} with weight {num(weights[t.read])} and {q(t.source[second])} with "
        f"{num(weights[second])}; head {int(heads.argmax())} reads {q(t.source[t.read])} most "
        f"({num(heads.max())})."
    )
    snapshot = explorer.snapshot()
    figure = figures.attention_heatmap(
        snapshot.cross[-1].mean(0).numpy(), snapshot.target_tokens, snapshot.source_tokens,
        title="Cross-attention, last layer, head average", highlight_query=len(snapshot.target_tokens) - 1,
        family="cross", masked=render.masked_cells(snapshot, explorer.state, "cross"),
    )  # fmt: skip
    return text, None, figure


def stacks_section(explorer: Explorer, t: Thread) -> tuple[str, str, None]:
    html_, _ = inside.stacks_view(t.worked, t.source, t.target, t.read)
    closeness = inside.stream_closeness(t.worked, "decoder", t.worked.position)[2].tolist()
    n_enc, n_dec = len(t.worked.encoder), len(t.worked.decoder)
    after_layer_0 = 3  # the embedding, then layer 0's three sub-layers: self-attention, cross-attention, FFN
    norm = "" if t.worked.pre_norm else ", and LayerNorm rescales it after each addition"
    text = (
        f"The paper stacks N layers of the same shape, each with its own weights: here {n_enc} in the encoder and "
        f"{n_dec} in the decoder. Each sub-layer reads the vector of every position and adds its output to it"
        f"{norm}, so one vector per position flows up the stack, the *residual stream*. The last rows below "
        f"follow the vector of {q(t.now)} up the decoder. Its cosine similarity with the vector that leaves the "
        "stack (1 = the same direction, 0 = unrelated) is "
        f"{num(closeness[0])} after the embedding and {num(closeness[min(after_layer_0, len(closeness) - 1)])} "
        f"after layer 0. Above them, {q(t.source[t.read])} goes up the encoder; its last row is the memory."
    )
    return text, html_, None


def output_section(explorer: Explorer, t: Thread) -> tuple[str, None, figures.Figure]:
    o, tokenizer = t.worked.output, explorer.checkpoint.tokenizer
    config = explorer.checkpoint.model.config
    ids, probabilities = o.top(inside.TOP)
    labels = [tokenizer.target_piece(int(i)) for i in ids]
    best, runner = int(ids[0]), int(ids[1]) if len(ids) > 1 else int(ids[0])
    model = explorer.checkpoint.model
    if not config.tie_output:
        table, matrix = "a matrix of its own, W_out", "W_{out}"
    elif model.src_embed.tokens is model.tgt_embed.tokens:
        table, matrix = "every row of the same table E as in section 2", "E"
    else:
        table, matrix = "every row of the target embedding table E", "E"
    formula = f"$P(y_t \\mid y_{{<t}}, x) = \\mathrm{{softmax}}(h_t {matrix}^\\top)$"
    strategy = {"greedy": "This page decodes greedily: Step takes the most probable piece",
                "sampling": "This page samples: Step draws a piece from these probabilities",
                "beam": "This page runs beam search: Step extends the best beams"}[explorer.state.strategy]  # fmt: skip
    text = (
        f"The decoder's last vector at {q(t.now)} ({o.final.numel()} numbers) is compared, by a dot product, with "
        f"{table}: one **logit** for each of the {config.tgt_vocab_size:,} pieces of the vocabulary (§3.4), then "
        f"a softmax: {formula}. The highest logit is {num(o.logits[best])}, for {q(labels[0])}, which gets "
        f"probability {float(probabilities[0]):.1%}; {q(tokenizer.target_piece(runner))} follows with "
        f"{num(o.logits[runner])} and {float(o.probabilities[runner]):.1%}."
        + (
            " This was the last step: it wrote `</s>`, and the translation is finished."
            if explorer.finished
            else f" {strategy} (the paper used beam search, width 4); press **Step** and every section moves on."
        )
    )
    written = ids.tolist().index(t.worked.chosen) if explorer.finished and t.worked.chosen in ids.tolist() else None
    figure = figures.candidates_bar(
        labels, probabilities.tolist(), chosen=written, title=f"After {q(t.now)}: the {inside.TOP} most probable"
    )
    return text, None, figure


def layers_section(explorer: Explorer, t: Thread) -> tuple[str, str, None]:
    tokenizer = explorer.checkpoint.tokenizer
    name = tokenizer.target_piece(t.worked.chosen)
    predictions = t.worked.layer_predictions
    last = len(predictions) - 1
    said = "; ".join(
        f"layer {p.layer}{', the real output,' if p.layer == last else ''} picks "
        + (
            f"{q(name)} ({percent(p.chosen_probability)})"
            if p.top_ids[0] == t.worked.chosen
            else f"{q(tokenizer.target_piece(p.top_ids[0]))} ({q(name)} {percent(p.chosen_probability)})"
        )
        for p in predictions
    )
    on_top = [p.top_ids[0] == t.worked.chosen for p in predictions]
    first = next((i for i in range(len(on_top)) if all(on_top[i:])), None)  # from here on it stays first
    if first is None:
        known = f"Not even the last layer ranks {q(name)} first."
    elif first == last:
        known = f"Only the last layer ranks {q(name)} first."
    else:
        known = f"{q(name)} is ranked first from layer {first} on."
    text = (
        "When does the model know? Put each decoder layer's output at this position through the final projection "
        "as if no layer came after it (the *logit lens*)"
        + (" (with the final LayerNorm)" if t.worked.pre_norm else "")
        + f": {said}. {known}"
    )
    html_, _ = inside.layers_view(t.worked, explorer)
    return text, html_, None
