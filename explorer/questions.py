"""Questions made from the live model, for a class (issue 38 §3): the teacher asks at any step, with no preparation.

Four kinds, each answered by the model itself at the step the class is on:

- **next**: *Which word comes next?* The model's three most probable pieces and one plausible wrong one, shuffled,
  and "something else". The answer is the piece the model writes at this step, with its strategy and seed.
- **look**: *Where will it look?* Tap the source piece that the chosen cross-attention head (or the average of the
  heads) of the chosen layer attends to most, from the position that predicts the next piece.
- **silence**: *Does silencing this head change the next word?* Yes or no, decided by taking the step again with
  the head silenced.
- **layer**: *Which layer first knows?* The first decoder layer whose logit-lens top piece (its output put through
  the final projection, "what each layer would say") is the final layer's.

A `Question` is plain data (JSON in the class's store): its kind, its prompt as an English message with its values
(translated for each student when shown), its choices, the key of the right one, and the changes of the view that
prove the answer when it is revealed.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field

import torch

from .i18n import N_, _
from .session import Explorer
from .state import ExplorerError, ExplorerState

KINDS = ("next", "look", "silence", "layer")
TITLES = {
    "next": N_("Which word comes next?"),
    "look": N_("Where will it look?"),
    "silence": N_("Does silencing this head change the next word?"),
    "layer": N_("Which layer first knows?"),
}
OTHER = "other"  # the key of "something else"
FAMILIES = {
    "encoder": N_("encoder self-attention"),
    "decoder_self": N_("decoder self-attention"),
    "cross": N_("cross-attention"),
}
WORDS = {
    OTHER: N_("something else"),
    "yes": N_("Yes"),
    "no": N_("No"),
}


@dataclass(frozen=True)
class Choice:
    key: str
    label: str  # a piece or a number, shown as it is; or a key of `WORDS`, translated (`translated`)
    translated: bool = False


@dataclass(frozen=True)
class Question:
    kind: str
    prompt: str  # an English message (`N_`), with `values` to fill in
    values: dict = field(default_factory=dict)
    choices: tuple[Choice, ...] = ()
    answer: str = ""  # the key of the right choice
    reveal: dict = field(default_factory=dict)  # the changes of the view that show why (`ExplorerState` fields)
    why: str = ""  # an English message (`N_`) said at the reveal, with `values`

    def title(self) -> str:
        """The question's kind, in the speaker's language."""
        return _(TITLES[self.kind])

    def text(self) -> str:
        """The question itself, in the speaker's language."""
        return _(self.prompt).format(**self.said())

    def explanation(self) -> str:
        return _(self.why).format(**self.said()) if self.why else ""

    def said(self) -> dict:
        """The values, with the words among them in the speaker's language: which head (`who`: a head's number,
        or None for the average) and which family (`family`: its key)."""
        values = dict(self.values)
        if "who" in values:
            head = values["who"]
            values["who"] = _("the average of the heads") if head is None else _("head {head}").format(head=head)
        if "family" in values:
            values["family"] = _(FAMILIES.get(values["family"], FAMILIES["cross"]))
        return values

    def label(self, choice: Choice) -> str:
        return _(WORDS[choice.label]) if choice.translated else choice.label

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Question:
        values = json.loads(text)
        values["choices"] = tuple(Choice(**choice) for choice in values["choices"])
        question = cls(**values)
        if question.kind not in KINDS or question.answer not in {c.key for c in question.choices}:
            raise ValueError("not a question")
        return question


def ask(explorer: Explorer, kind: str, seed: int = 0) -> Question:
    """The question of `kind` at the explorer's step. `seed` shuffles the choices (the question's number, so two
    questions of a lesson do not put the answer in the same place)."""
    if kind not in KINDS:
        raise ExplorerError(_("there is no question of this kind"))
    if explorer.finished:
        raise ExplorerError(_("the translation is finished: step back to ask about a step"))
    return {"next": next_word, "look": where_it_looks, "silence": silencing, "layer": first_layer}[kind](explorer, seed)


def next_piece(explorer: Explorer, state: ExplorerState | None = None) -> int:
    """The piece the model writes at this step (with its strategy and seed), under `state` (default: the
    explorer's), without changing the explorer."""
    other = Explorer(explorer.registry, state or explorer.state)
    other.step()
    return other.decoding.output_ids[-1]


def piece(explorer: Explorer, token_id: int) -> str:
    return explorer.checkpoint.tokenizer.target_piece(token_id)


def next_word(explorer: Explorer, seed: int) -> Question:
    """Which word comes next: the top three, one plausible wrong one (the most probable word piece after the top
    three that is not punctuation), shuffled, and "something else"."""
    candidates = explorer.snapshot().candidates
    chosen = next_piece(explorer)
    top = [c.token_id for c in candidates[:3]]
    if chosen not in top:  # sampling may write a less probable piece: it is among the choices all the same
        top = [*top[:2], chosen]
    rest = [c.token_id for c in candidates[3:] if any(ch.isalpha() for ch in piece(explorer, c.token_id))]
    shown = [*top, *rest[:1]]
    random.Random(seed).shuffle(shown)
    choices = tuple(Choice(str(t), piece(explorer, t)) for t in shown) + (Choice(OTHER, OTHER, translated=True),)
    return Question(
        kind="next",
        prompt=N_("Which piece will the model write next, after “{output}”?"),
        values={"output": explorer.snapshot().output_text or "…", "piece": piece(explorer, chosen)},
        choices=choices,
        answer=str(chosen),
        reveal={"choices": [*explorer.state.choices, None], "tab": "attention"},
        why=N_("The model wrote “{piece}”: the candidates show how sure it was."),
    )


def cross_row(explorer: Explorer, layer: int, head: int | None) -> torch.Tensor:
    """The cross-attention of the position that predicts the next piece, over the source pieces."""
    cross = explorer.snapshot().cross[layer]  # (H, T_tgt, T_src)
    weights = cross.mean(dim=0) if head is None else cross[head]
    return weights[-1]


def where_it_looks(explorer: Explorer, seed: int) -> Question:
    """Where will it look: the source piece with the most cross-attention, in the state's layer and head."""
    state = explorer.state
    layers = explorer.checkpoint.model.config.n_layers("cross")
    layer = min(state.layer, layers - 1)
    row = cross_row(explorer, layer, state.head)
    source = explorer.snapshot().source_tokens
    most = int(torch.argmax(row))
    return Question(
        kind="look",
        prompt=N_("Tap the source piece that cross-attention layer {layer} ({who}) will look at most."),
        values={"layer": layer, "who": state.head, "piece": source[most], "weight": f"{float(row[most]):.0%}"},
        choices=tuple(Choice(str(i), f"{i} · {token}") for i, token in enumerate(source)),
        answer=str(most),
        reveal={"tab": "attention", "family": "cross", "layer": layer, "head": state.head},
        why=N_("It looks most at “{piece}” ({weight} of its attention): the heatmap's last row."),
    )


def silencing(explorer: Explorer, seed: int) -> Question:
    """Does silencing this head change the next word: the step taken again with the state's head silenced (head 0
    of its layer when the view shows the average)."""
    state = explorer.state
    family = state.family
    layer = min(state.layer, explorer.checkpoint.model.config.n_layers(family) - 1)
    head = state.head if state.head is not None else 0
    silenced = state.silenced | {(family, layer, head)}
    before, after = next_piece(explorer), next_piece(explorer, state.replace(silenced=silenced))
    return Question(
        kind="silence",
        prompt=N_("If head {head} of {family} layer {layer} is silenced, does the next piece change?"),
        values={
            "head": head,
            "layer": layer,
            "family": family,
            "before": piece(explorer, before),
            "after": piece(explorer, after),
        },
        choices=(Choice("yes", "yes", translated=True), Choice("no", "no", translated=True)),
        answer="yes" if before != after else "no",
        reveal={"silenced": sorted(list(h) for h in silenced), "tab": "masks"},
        why=N_("With the head silenced the model writes “{after}”; with it, “{before}”."),
    )


def first_layer(explorer: Explorer, seed: int) -> Question:
    """Which layer first knows: the first decoder layer whose logit-lens top piece is the last layer's."""
    from .inside import worked_step

    predictions = worked_step(explorer).layer_predictions
    final = predictions[-1].top_ids[0]
    first = next(p.layer for p in predictions if p.top_ids[0] == final)
    return Question(
        kind="layer",
        prompt=N_("Which decoder layer is the first whose own guess is already the final “{piece}”?"),
        values={"piece": piece(explorer, final), "layer": first},
        choices=tuple(Choice(str(p.layer), str(p.layer)) for p in predictions),
        answer=str(first),
        reveal={"tab": "inside", "stage": "layers"},
        why=N_("Layer {layer} is the first whose guess is “{piece}”: What each layer would say."),
    )


def revealed(state: ExplorerState, question: Question) -> ExplorerState:
    """The teacher's view at the reveal: the view that proves the answer (and for "next", the step taken)."""
    changes = dict(question.reveal)
    if "choices" in changes:
        changes["choices"] = tuple(changes["choices"])
    if "silenced" in changes:
        changes["silenced"] = frozenset(tuple(h) for h in changes["silenced"])
    return state.replace(**changes)
