"""What made this word: from an `Explorer` to the views of the Why? tab (`transformer.explain` computes
the numbers).

Three views of the step being taken, each computed only while it is shown, and kept in the shared cache for every
user at the same step alike:

- **Contributions**: each source piece's and each written piece's share of the chosen token's score, by integrated
  gradients, beside the cross-attention of the row being predicted, with one sentence on where the two disagree;
  optionally contrastive ("why this token and not that one?").
- **The census of the heads**: every head silenced alone, as a layer × head grid per family (asked for with a
  button: it reruns the step once per head).
- **What each encoder layer already knows**: the DecoderLens, beside the decoder's own logit lens.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from transformer.explain import Census, Contributions, contributions, decoder_lens, first_knowing, head_census
from transformer.model import ATTENTION_FAMILIES
from transformer.worked import LayerPrediction, WorkedStep

from . import figures
from .cache import SHARED, identity
from .figures.base import readable
from .i18n import N_, _
from .render import FAMILY_NAMES, head_name, layer_of, table_code
from .session import Explorer, StepSnapshot

METHOD = N_(
    "**Integrated gradients** (Sundararajan, Taly and Yan, 2017: *Axiomatic Attribution for Deep Networks*), "
    "computed with Captum. Every piece's embedding grows from zero (no words, the positions kept) to its real value; "
    "the score's gradients along the way give each piece its share of the change, and the shares add up to the "
    "whole change. The score is the log-probability of the token, or in a contrast the difference of two tokens' "
    "log-probabilities."
)
CENSUS_HINT = N_(
    "Press the button to run the step again once for every head, with that head silenced alone: each cell is how "
    "much the chosen token's probability changes, and ✕ marks a head without which the model chooses another token."
)
TOP_HEADS = 5  # the heads the census names in words
FAMILIES = ATTENTION_FAMILIES  # the census's grids, in the order of its runs


@dataclass(frozen=True)
class Explained:
    """The step a view explains: the source ids, the decoder's input so far, and the token chosen from it."""

    source: list[int]
    target: list[int]
    token: int


def explained(explorer: Explorer) -> Explained:
    """The current step, as Inside a step works it through: the most probable next token, or when the translation
    is finished, the step that wrote its last token."""
    model = explorer.checkpoint.model
    output = list(explorer.decoding.output_ids)
    target = [model.config.decoder_start_id, *output]
    if explorer.finished and output:
        return Explained(explorer.source_ids(), target[:-1], output[-1])
    candidates = explorer.snapshot().candidates
    token = candidates[0].token_id if candidates else model.config.eos_id
    return Explained(explorer.source_ids(), target, token)


def _key(kind: str, explorer: Explorer, step: Explained, *more: object) -> tuple:
    model = explorer.checkpoint.model
    return (kind, identity(model), tuple(step.source), tuple(step.target), step.token, explorer.state.switches(), *more)


def contributions_of(explorer: Explorer, versus: int | None = None) -> Contributions:
    """The contributions to the current step's token (against `versus`, if given); shared (`cache.SHARED`)."""
    step, model = explained(explorer), explorer.checkpoint.model
    switches = explorer.state.switches()
    compute = lambda: contributions(model, step.source, step.target, step.token, versus=versus, switches=switches)  # noqa: E731
    return SHARED.get(_key("contributions", explorer, step, versus), compute)


def census_of(explorer: Explorer, progress: Callable[[int, int], None] | None = None) -> Census:
    """Every head silenced alone at the current step; shared. `progress(done, total)` while it runs."""
    step, model = explained(explorer), explorer.checkpoint.model
    switches = explorer.state.switches()
    compute = lambda: head_census(  # noqa: E731
        model, step.source, step.target, switches=switches, token=step.token, progress=progress
    )
    return SHARED.get(_key("census", explorer, step), compute)


def lens_of(explorer: Explorer) -> list[LayerPrediction]:
    """What the decoder would predict reading each encoder layer's output; shared."""
    step, model = explained(explorer), explorer.checkpoint.model
    switches = explorer.state.switches()
    compute = lambda: decoder_lens(model, step.source, step.target, switches=switches, token=step.token)  # noqa: E731
    return SHARED.get(_key("lens", explorer, step), compute)


def piece(explorer: Explorer, token: int) -> str:
    return readable(explorer.checkpoint.tokenizer.target_piece(token))


def quoted(text: str) -> str:
    """A piece in a sentence of Markdown, shown as the text it is."""
    return "“" + html.escape(text).replace("*", "\\*").replace("_", "\\_").replace("`", "\\`") + "”"


# ---- contributions -------------------------------------------------------------------------------------------


def versus_choices(explorer: Explorer) -> list[tuple[str, int]]:
    """The tokens a contrast may name: the next-token candidates other than the one explained, as (label, id)."""
    step, snapshot = explained(explorer), explorer.snapshot()
    return [
        (f"{readable(token)}  ({c.prob:.1%})", c.token_id)
        for token, c in zip(snapshot.candidate_tokens, snapshot.candidates, strict=True)
        if c.token_id != step.token
    ]


def cross_attention(snapshot: StepSnapshot, layer: int, head: int | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The cross-attention of the row being predicted at `layer`: the heads' average, and one head's (or None)."""
    layer = layer_of(snapshot, "cross", layer)
    row = snapshot.cross[layer, :, -1].float().cpu().numpy()  # (H, S)
    return row.mean(0), (row[head] if head is not None and head < row.shape[0] else None)


def contributions_view(explorer: Explorer, versus: int | None) -> tuple[figures.Figure, str]:
    """The bars of the contributions beside the attention, and the text: the split between the source and the
    words written, where attention and contribution disagree, the method and its completeness gap."""
    state, snapshot, step = explorer.state, explorer.snapshot(), explained(explorer)
    if versus not in {token for _, token in versus_choices(explorer)}:
        versus = None
    found = contributions_of(explorer, versus)
    total = float(found.source.abs().sum() + found.target.abs().sum()) or 1.0
    source, target = found.source.numpy() / total, found.target.numpy() / total
    layer = layer_of(snapshot, "cross", state.layer)
    average, one_head = cross_attention(snapshot, state.layer, state.head)
    chosen = piece(explorer, step.token)
    if versus is None:
        title = _("What made “{token}”: each piece's contribution").format(token=chosen)
    else:
        title = _("Why “{token}” and not “{other}”").format(token=chosen, other=piece(explorer, versus))
    figure = figures.contribution_bars(
        [readable(p) for p in snapshot.source_tokens], source,
        [readable(p) for p in snapshot.target_tokens], target,
        attention=average, head_attention=one_head,
        head_name=_("attention, {head}").format(head=head_name(state.head)), title=title,
    )  # fmt: skip
    split = _("**{source:.0%} from the source sentence, {written:.0%} from the words already written.**").format(
        source=found.source_share, written=1 - found.source_share
    )
    where = _("Attention: cross-attention of the row being predicted, layer {layer}, {heads}.").format(
        layer=layer, heads=head_name(None) if state.head is None else head_name(state.head)
    )
    gap = _(
        "Completeness: the shares add up to {total:+.3f}, the score's change from the baseline is {change:+.3f}: a "
        "gap of {gap:.1%} ({n} gradients computed)."
    ).format(total=found.total, change=found.score - found.baseline, gap=found.gap, n=found.steps)
    sentences = [split, disagreement(snapshot.source_tokens, source, average), where, gap, _(METHOD)]
    return figure, "\n\n".join(sentences)


def disagreement(pieces: list[str], shares: np.ndarray, attention: np.ndarray) -> str:
    """One sentence: whether the most attended source piece is also the one that contributes most."""
    looked, made = int(attention.argmax()), int(np.abs(shares).argmax())
    if looked == made:
        return _(
            "Here attention and contribution agree: {piece} is both the most attended source piece ({attention:.0%} "
            "of the attention) and the largest contribution ({share:.0%})."
        ).format(piece=quoted(readable(pieces[made])), attention=attention[made], share=abs(shares[made]))
    return _(
        "Here they disagree: the most attended source piece, {looked} ({attention:.0%} of the attention), makes "
        "{looked_share:.0%} of the contribution; the largest contribution is {made} ({share:.0%}), which gets "
        "{made_attention:.0%} of the attention. Attention says where a head reads, not what made the word."
    ).format(
        looked=quoted(readable(pieces[looked])),
        attention=attention[looked],
        looked_share=abs(shares[looked]),
        made=quoted(readable(pieces[made])),
        share=abs(shares[made]),
        made_attention=attention[made],
    )


# ---- the census of the heads ---------------------------------------------------------------------------------


def head_label(head: tuple[str, int, int]) -> str:
    family, layer, number = head
    return _("{family}, layer {layer}, head {head}").format(family=_(FAMILY_NAMES[family]), layer=layer, head=number)


def census_view(explorer: Explorer, census: Census) -> tuple[figures.Figure, str, list[tuple[str, str]]]:
    """The census as grids, in words, and the heads ranked as (label, "family:layer:head") choices."""
    config = explorer.checkpoint.model.config
    grids = []
    for family in FAMILIES:
        rows = [h for h in census.heads if h.head[0] == family]
        changes = np.array([census.change(h) for h in rows]).reshape(config.n_layers(family), config.n_heads)
        flips = np.array([h.choice != census.token for h in rows]).reshape(changes.shape)
        grids.append((_(FAMILY_NAMES[family]), changes, flips))
    chosen = piece(explorer, census.token)
    title = _("Each head silenced alone: the change in p(“{token}”)").format(token=chosen)
    ranked = census.ranked()
    flips = census.flips
    if flips:
        named = _("; ").join(
            _("{head} (→ {other})").format(head=head_label(h.head), other=quoted(piece(explorer, h.choice)))
            for h in flips[:TOP_HEADS]
        )
        said = _("**{n} of {total} heads change the choice** when silenced alone: {heads}.").format(
            n=len(flips), total=len(census.heads), heads=named
        )
    else:
        said = _("**No head changes the choice** when silenced alone ({total} heads): {token} survives each.").format(
            total=len(census.heads), token=quoted(chosen)
        )
    moved = _("; ").join(f"{head_label(h.head)} {census.change(h):+.1%}" for h in ranked[:TOP_HEADS])
    text = _("{said}\n\nThe heads that move p({token}) most ({before:.1%} with every head): {moved}.").format(
        said=said, token=quoted(chosen), before=census.probability, moved=moved
    )
    choices = [(f"{head_label(h.head)}  {census.change(h):+.1%}", ":".join(map(str, h.head))) for h in ranked]
    return figures.census_grid(grids, title=title), text, choices


# ---- what each encoder layer already knows -------------------------------------------------------------------


def lens_view(explorer: Explorer, worked: WorkedStep) -> str:
    """Two tables: what the decoder would predict reading each encoder layer (the DecoderLens), and what each
    decoder layer would say (the logit lens); and where the token first appears in each."""
    step = explained(explorer)
    encoder, decoder = lens_of(explorer), worked.layer_predictions
    chosen = piece(explorer, step.token)
    tokenizer = explorer.checkpoint.tokenizer

    def table(title: str, rows: list[LayerPrediction]) -> str:
        header = f"| {title} | " + _("top 3") + " | " + _("p({token})").format(token=quoted(chosen)) + " |"
        lines = [
            f"| {row.layer} | "
            + ", ".join(
                f"{table_code(tokenizer.target_piece(i))} {p:.0%}"
                for i, p in zip(row.top_ids, row.top_probabilities, strict=True)
            )
            + f" | {row.chosen_probability:.1%} |"
            for row in rows
        ]
        return "\n".join([header, "|---|---|---|", *lines])

    first_encoder, first_decoder = first_knowing(encoder, step.token), first_knowing(decoder, step.token)
    if first_encoder is None:
        where = _("Whichever encoder layer it reads, the decoder's first choice is not {token}.").format(
            token=quoted(chosen)
        )
    else:
        where = _("Reading encoder layer {layer}, the decoder already writes {token}.").format(
            layer=first_encoder, token=quoted(chosen)
        )
    if first_decoder is not None:
        where += " " + _("Of the decoder's own layers, layer {layer} is the first whose guess is {token}.").format(
            layer=first_decoder, token=quoted(chosen)
        )
    intro = _(
        "**What each encoder layer already knows** (the DecoderLens of Langedijk et al., 2024): the whole decoder "
        "runs again, its cross-attention reading the output of one encoder layer instead of the last. Beside it, "
        "what each decoder layer would say if it were the last (the logit lens, as in Inside a step)."
    )
    tables = table(_("encoder layer read"), encoder) + "\n\n" + table(_("decoder layer"), decoder)
    return f"{intro}\n\n{where}\n\n{tables}"
