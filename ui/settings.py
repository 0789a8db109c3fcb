"""The page's settings: the fields of `ExplorerState` that the page's controls set, and the values they send.

`ExplorerState` (explorer/state.py) declares every setting once: its name, type, default and limits. The page has
a control for each field but `NOT_CONTROLS`, registered by name (`Page.setting`) with the default as its first
value (`DEFAULTS`); the `/translate` API takes a few of them. A new setting is one field of `ExplorerState` and its
control.

The fields' order is the order in which the events take the controls' values, and so the order of the
parameters of the page's event endpoints (`/step`, `/run`, `/back`, `/reset`): a new field goes at the end of
`ExplorerState`, so that the parameters before it keep their places.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from explorer import Explorer, ExplorerError, ExplorerState, i18n
from explorer.i18n import LANGUAGES, N_, _
from explorer.render import FAMILY_NAMES
from explorer.state import HeadRef

# The state's fields that no control sets: the steps taken (Step, Back, forcing), whether the heads are shown as a
# grid (a choice of the head control, `parse_head`), and the open tab (opening it).
NOT_CONTROLS = ("choices", "grid", "tab")
NAMES = tuple(field.name for field in dataclasses.fields(ExplorerState) if field.name not in NOT_CONTROLS)
_TYPES = typing.get_type_hints(ExplorerState)
DEFAULT_STATE = ExplorerState()  # every setting at its default

# ---- the head controls' words --------------------------------------------------------------------------------------

HEAD_AVERAGE, ALL_HEADS = "average", "all heads"
# One head of the model, as the page's checkboxes write it ("cross · layer 1 · head 3") or as the API does
# ("cross:1:3").
HEAD_REF = re.compile(r"\s*(\w+)\s*(?:·\s*layer\s*(\d+)\s*·\s*head\s*(\d+)|:\s*(\d+)\s*:\s*(\d+))\s*")


def head_choices(n_heads: int) -> list[str]:
    """The head control's choices: the average of the heads, every head as a grid, or one head."""
    return [HEAD_AVERAGE, ALL_HEADS, *(f"head {h}" for h in range(n_heads))]


def head_options(n_heads: int) -> list[tuple[str, str]]:
    """`head_choices` as the head control shows them, in the user's language: (label, value) pairs."""
    one = _("head {head}")
    labels = {HEAD_AVERAGE: _("average"), ALL_HEADS: _("all heads")}
    labels |= {f"head {head}": one.format(head=head) for head in range(n_heads)}
    return [(labels[value], value) for value in head_choices(n_heads)]


def head_choice(state: ExplorerState) -> str:
    """The head control's value for a state (the inverse of `parse_head`)."""
    if state.grid:
        return ALL_HEADS
    return HEAD_AVERAGE if state.head is None else f"head {state.head}"


def parse_head(choice: str | None) -> tuple[int | None, bool]:
    """The state's `head` and `grid` for a choice of the head control: "average" -> (None, False), "all heads" ->
    (None, True), "head 3" -> (3, False)."""
    if choice == ALL_HEADS:
        return None, True
    if choice in (HEAD_AVERAGE, "", None):
        return None, False
    try:
        return int(str(choice).removeprefix("head ").strip()), False
    except ValueError:
        raise ExplorerError(_("unknown head choice {choice!r}").format(choice=choice)) from None


def head_label(ref: HeadRef) -> str:
    """A head as the page's checkboxes name it: ("cross", 1, 3) -> "cross · layer 1 · head 3"."""
    family, layer, head = ref
    return f"{family} · layer {layer} · head {head}"


# A head as the silenced-heads checkboxes show it and send it, by family, in the user's language (`head_caption`): the
# browser shows a checkbox's value when the pointer rests on it, so the value is the caption too.
HEAD_CAPTIONS = {
    "encoder": N_("encoder self-attention · layer {layer} · head {head}"),
    "decoder_self": N_("decoder self-attention · layer {layer} · head {head}"),
    "cross": N_("cross-attention · layer {layer} · head {head}"),
}


def head_caption(ref: HeadRef) -> str:
    """A head as the checkboxes show it and send it, in the user's language."""
    family, layer, head = ref
    return _(HEAD_CAPTIONS[family]).format(layer=layer, head=head)


@functools.cache
def _captions() -> tuple[tuple[re.Pattern, str], ...]:
    """Each family's caption in every language, as a pattern that reads the layer and the head back: a checkbox sends
    its caption in the language the page had when it was drawn."""
    patterns = []
    for language in LANGUAGES:
        for family, template in HEAD_CAPTIONS.items():
            text = re.escape(i18n.translations(language).gettext(template))
            text = text.replace(r"\{layer\}", r"(?P<layer>\d+)").replace(r"\{head\}", r"(?P<head>\d+)")
            patterns.append((re.compile(rf"\s*{text}\s*"), family))
    return tuple(patterns)


def parse_head_ref(text: str) -> HeadRef:
    """A head named as the checkboxes do, in any of the page's languages (`head_caption`), or as the API does
    ("cross:1:3", or "cross · layer 1 · head 3", `head_label`)."""
    match = HEAD_REF.fullmatch(str(text))
    if match is not None:
        family, *numbers = (group for group in match.groups() if group is not None)
        layer, head = (int(number) for number in numbers)
        return family, layer, head
    for pattern, family in _captions():
        if caption := pattern.fullmatch(str(text)):
            return family, int(caption["layer"]), int(caption["head"])
    raise ExplorerError(
        _(
            "not a head: {text!r} (a head is written family:layer:head, e.g. cross:0:1, or cross · layer 0 · head 1)"
        ).format(text=text)
    )


def silenced_choices(explorer: Explorer) -> list[str]:
    """Every head of the explorer's model, as the silenced-heads checkboxes name them."""
    config = explorer.config
    return [
        head_label((family, layer, head))
        for family in FAMILY_NAMES
        for layer in range(config.n_layers(family))
        for head in range(config.n_heads)
    ]


def silenced_options(explorer: Explorer) -> list[tuple[str, str]]:
    """`silenced_choices` as the checkboxes show them, in the user's language: (label, value) pairs."""
    captions = [head_caption(parse_head_ref(value)) for value in silenced_choices(explorer)]
    return [(caption, caption) for caption in captions]


# ---- from the controls to the state, and back ----------------------------------------------------------------------


def state_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """The `ExplorerState` fields that the controls' `values` (by setting name, as the page or the API sends them:
    strings, floats, lists) choose. Each is read as its field's type; an empty number is the field's default. A bad
    value raises `ExplorerError` when the state is made."""
    fields = {}
    for name, value in values.items():
        if name == "head":
            fields["head"], fields["grid"] = parse_head(value)
        elif name == "silenced":
            fields["silenced"] = frozenset(parse_head_ref(label) for label in value or [])
        elif name == "model":
            fields["model"] = str(value or "").strip()
        else:
            fields[name] = _typed(name, value)
    return fields


def _typed(name: str, value: Any) -> Any:
    """`value` as the type of the state's field `name` (a slider sends 3.0 for 3; an empty number box sends None)."""
    kind = _TYPES[name]
    if value is None:
        return "" if kind is str else getattr(DEFAULT_STATE, name)
    if kind in (int, float):
        try:
            return kind(value)
        except (TypeError, ValueError):
            raise ExplorerError(
                _("{setting} must be a number, not {value}").format(setting=name.replace("_", " "), value=shown(value))
            ) from None
    if kind is bool and not isinstance(value, bool):  # "no" is text, and bool("no") would be True
        raise ExplorerError(
            _("{setting} must be true or false, not {value}").format(setting=name.replace("_", " "), value=shown(value))
        )
    return value


def shown(value: Any) -> str:
    """A value the user sent, as a message names it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def control_values(state: ExplorerState) -> dict[str, Any]:
    """What each control shows for a state, by setting name (the inverse of `state_fields`)."""
    values = {name: getattr(state, name) for name in NAMES}
    values["head"] = head_choice(state)
    values["silenced"] = [head_caption(ref) for ref in sorted(state.silenced)]  # in the language being spoken
    return values


DEFAULTS = control_values(DEFAULT_STATE)  # each control's first value


def event_values(**settings: Any) -> list:
    """The values an event of the page takes after the user's explorer, in their order (`NAMES`): `settings`, as the
    controls send them, and every other control at its first value. For clients of `/step`, `/run`, `/back`, …"""
    unknown = set(settings) - set(NAMES)
    if unknown:
        raise KeyError(f"not settings of the page: {sorted(unknown)}")
    values = DEFAULTS | settings
    return [values[name] for name in NAMES]


@dataclasses.dataclass(frozen=True)
class Settings:
    """The values of the page's controls, by setting name, as the page sends them (strings, floats, lists)."""

    values: Mapping[str, Any]

    @classmethod
    def from_values(cls, values: Sequence) -> Settings:
        """From an event's input values, in the order of `NAMES`."""
        return cls(dict(zip(NAMES, values, strict=True)))

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def replace(self, **changes: Any) -> Settings:
        return Settings({**self.values, **changes})

    def state_fields(self) -> dict[str, Any]:
        return state_fields(self.values)
