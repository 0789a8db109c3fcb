"""The page's settings as one object: what every handler reads from the controls, and what a state puts back.

The field order of `Settings` is the order in which the events take the controls' values, and so the order of
the parameters of the page's API endpoints (`/step`, `/run`, `/back`, `/reset`, `/apply`): a new setting goes at
the end, so that the parameters before it keep their places. Panels register their controls by field name
(`Page.setting`); a new setting is a new field and one registration.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from explorer import MAX_SOURCE_CHARS, Explorer, ExplorerState, ModelRegistry, render
from explorer.session import unknown_pieces


@dataclass(frozen=True)
class Settings:
    """The values of the page's controls, as the page sends them (strings, floats, lists)."""

    model: str
    source: str
    strategy: str
    temperature: float
    top_k: float
    top_p: float
    seed: float | None
    beam_width: float
    max_output_tokens: float
    causal_mask: bool
    padding_mask: bool
    positions: bool
    pad_to: float
    silenced: list[str] | None
    family: str
    layer: float
    head: str
    view: str
    presentation: bool
    stage: str
    stage_layer: float
    stage_head: float
    stage_position: float

    @classmethod
    def names(cls) -> list[str]:
        return [field.name for field in dataclasses.fields(cls)]

    @classmethod
    def from_values(cls, values: tuple) -> Settings:
        """From an event's input values, in the order of `names()`."""
        return cls(*values)

    def state_fields(self) -> dict[str, Any]:
        """The `ExplorerState` fields these settings choose (checked there: a bad value raises `ExplorerError`)."""
        head, grid = render.parse_head(self.head)
        return {
            "model": (self.model or "").strip(),
            "source": self.source or "",
            "strategy": self.strategy,
            "temperature": float(self.temperature),
            "top_k": int(self.top_k),
            "top_p": float(self.top_p),
            "seed": int(self.seed or 0),
            "beam_width": int(self.beam_width),
            "max_output_tokens": int(self.max_output_tokens),
            "causal_mask": bool(self.causal_mask),
            "padding_mask": bool(self.padding_mask),
            "positions": bool(self.positions),
            "pad_to": int(self.pad_to),
            "silenced": frozenset(render.parse_head_ref(label) for label in self.silenced or []),
            "family": self.family,
            "layer": int(self.layer),
            "head": head,
            "grid": grid,
            "view": self.view,
            "presentation": bool(self.presentation),
            "stage": self.stage,
            "stage_layer": int(self.stage_layer),
            "stage_head": int(self.stage_head),
            "stage_position": int(self.stage_position),
        }


# The controls a refresh does not set (it sets the model, the silenced heads, the layer and the head): a shared
# link's state puts these back on the page.
RESTORED = ("source", "strategy", "temperature", "top_k", "top_p", "seed", "beam_width", "max_output_tokens",
            "causal_mask", "padding_mask", "positions", "pad_to", "family", "view", "presentation",
            "stage")  # fmt: skip


def restored_values(state: ExplorerState) -> dict[str, Any]:
    """The values of the `RESTORED` controls for a state, by setting name."""
    return {name: getattr(state, name) for name in RESTORED}


def settle(registry: ModelRegistry, explorer: Explorer | None, settings: Settings) -> tuple[Explorer, str]:
    """The user's explorer with the settings on the page (a new one when there was none, or for a new model), and
    a note for the user when the sentence had to change: too long, it is cut (`within_limit`); a new model that
    cannot read the sentence (its pieces would be `<unk>`) starts from its own first example instead."""
    wanted = settings.state_fields()
    wanted["source"], note = within_limit(registry, wanted["model"], wanted["source"])
    if explorer is None or wanted["model"] != explorer.state.model:
        if explorer is not None:
            wanted.update(silenced=frozenset(), layer=0, head=None, tab=explorer.state.tab)
            wanted["source"], switched = suited_source(registry, wanted["model"], wanted["source"])
            note = switched or note
        return Explorer(registry, ExplorerState(**wanted)), note
    changes = {key: value for key, value in wanted.items() if getattr(explorer.state, key) != value}
    if changes:
        explorer.update(**changes)
    return explorer, ""


def within_limit(registry: ModelRegistry, model: str, source: str) -> tuple[str, str]:
    """`source`, or as much of it as the model and the explorer read, cut after a whole word, with a note saying so:
    at most `MAX_SOURCE_CHARS` characters, and at most as many pieces as the model has positions."""
    checkpoint = registry.get(model)
    positions = checkpoint.model.config.max_positions

    def fits(text: str) -> bool:
        return len(text) <= MAX_SOURCE_CHARS and len(checkpoint.tokenizer.encode_source(text.strip())) <= positions

    if fits(source):
        return source, ""
    ends = [0, *(word.end() for word in re.finditer(r"\S+", source[: MAX_SOURCE_CHARS + 1]))]  # after each word
    low, high = 0, len(ends) - 1  # the most words that fit: `low` fits, `high + 1` does not
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(source[: ends[middle]]) else (low, middle - 1)
    cut = source[: ends[low]].strip()
    note = (
        f"The text is too long ({len(source):,} characters): the explorer reads at most {MAX_SOURCE_CHARS} "
        f"characters, and {model} at most {positions} pieces. It was cut after “…{cut[-40:].lstrip()}”; shorten "
        f"it to choose where it ends."
    )
    return cut, note


def suited_source(registry: ModelRegistry, model: str, source: str) -> tuple[str, str]:
    """`source`, or the model's first example when the model cannot read it, with a note saying so."""
    unknown = unknown_pieces(registry.get(model).tokenizer, source)
    if not unknown:
        return source, ""
    example = registry.examples(model)[0][0]
    note = (
        f"{model} cannot read that sentence ({len(unknown)} of its pieces are unknown to it, e.g. "
        f"{unknown[0]!r}), so it starts from one of its own examples: {example!r}."
    )
    return example, note
