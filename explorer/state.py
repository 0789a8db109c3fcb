"""What a user has chosen, as one immutable value: the `ExplorerState`, its limits, and its link token.

An `ExplorerState` is everything a user has chosen — model, sentence, strategy, masks, silenced heads, the
choices made at each decoding step, the selected view. It is what a shared link carries, and the whole
translation in progress is a pure function of it: the decoding is replayed from the choices (None = let the
strategy choose, a token id = forced), so a restored link shows exactly the same view.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from transformer.decoding import BeamSearch, Greedy, Sampling, Strategy
from transformer.model import ATTENTION_FAMILIES, HeadRef, ModelSwitches

from .i18n import DEFAULT as DEFAULT_LANGUAGE
from .i18n import LANGUAGES, _
from .stages import STAGES

MAX_SOURCE_CHARS = 500
MAX_OUTPUT_TOKENS = 128
MAX_BEAM_WIDTH = 8
MAX_TOP_K = 1000
STRATEGIES = ("greedy", "sampling", "beam")
ATTENTION_VIEWS = ("heatmap", "families", "alignment")  # one family as a heatmap; the three side by side; lines
TAB_NAME = re.compile(r"[a-z][a-z_]{0,23}")  # the page's name of a view, such as "attention" or "positions"


def shown(default: object) -> Any:
    """A setting that chooses what is shown, not what is computed (`VIEW_ONLY`): changing it replays nothing."""
    return dataclasses.field(default=default, metadata={"view_only": True})


class ExplorerError(ValueError):
    """A user input that cannot be used; the message says why and is safe to show."""


@dataclass(frozen=True)
class ExplorerState:
    model: str = "en-de"
    source: str = ""
    strategy: str = "greedy"
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    beam_width: int = 4
    max_output_tokens: int = 64
    causal_mask: bool = True
    padding_mask: bool = True
    positions: bool = True
    pad_to: int = 0  # pad the source to this many tokens, as a shorter sentence in a batch is (0 = no padding)
    silenced: frozenset[HeadRef] = frozenset()
    choices: tuple[int | None, ...] = ()  # one per step taken: None = the strategy chose, an id = forced
    family: str = shown("cross")  # the attention view selected
    layer: int = shown(0)
    head: int | None = shown(None)  # None = the average over heads
    grid: bool = shown(False)  # show every head of the layer at once
    tab: str = shown("attention")  # the view open on the page (a shared link opens it)
    view: str = shown("heatmap")  # how the Attention tab shows its layer (`ATTENTION_VIEWS`)
    presentation: bool = shown(False)  # the page's layout for a projector: large type, settings folded away
    stage: str = shown("decoder.self_attention")  # the Inside a step view: a block of the architecture (`STAGES`)
    stage_layer: int = shown(0)  # … of this layer (brought into the model's range when shown)
    stage_head: int = shown(0)  # … this head, for attention
    stage_position: int = shown(0)  # … at this source position, for the encoder's stages
    # the Train tab's setup (`LiveSetup.to_json`), "" before the user trains; read by the Train tab alone, which says
    # so when a link's cannot be used (the state loads no training code)
    training: str = shown("")
    language: str = shown(DEFAULT_LANGUAGE)  # the page's language (`explorer.i18n.LANGUAGES`): "en" or "zh"

    def __post_init__(self) -> None:
        def require(condition: bool, message: str) -> None:
            if not condition:
                raise ExplorerError(message)

        # Every field has its type, whatever sent it (a link, the API): `true` is no token and "no" is no `false`.
        require(isinstance(self.model, str) and 0 < len(self.model) <= 200, _("the model must be a name"))
        require(isinstance(self.source, str), _("the source must be text"))
        require(is_unicode(self.source), _("the text holds invalid characters (lone surrogates)"))
        require(
            len(self.source) <= MAX_SOURCE_CHARS,
            _("the sentence is too long (at most {limit} characters)").format(limit=MAX_SOURCE_CHARS),
        )
        require(
            self.strategy in STRATEGIES,
            _("unknown strategy {strategy}; choose greedy, sampling or beam").format(strategy=repr(self.strategy)),
        )
        for name in ("causal_mask", "padding_mask", "positions", "grid", "presentation"):
            require(type(getattr(self, name)) is bool, _("{name} must be true or false").format(name=name))
        require(
            is_number(self.temperature) and 0.01 <= self.temperature <= 10, _("temperature must be between 0.01 and 10")
        )
        require(
            is_whole(self.top_k) and 0 <= self.top_k <= MAX_TOP_K,
            _("top-k must be 0…{limit}").format(limit=MAX_TOP_K),
        )
        require(is_number(self.top_p) and 0 < self.top_p <= 1, _("top-p must be in (0, 1]"))
        require(is_whole(self.seed) and 0 <= self.seed < 2**31, _("the seed must be a non-negative integer"))
        require(
            is_whole(self.beam_width) and 1 <= self.beam_width <= MAX_BEAM_WIDTH,
            _("beam width must be 1…{limit} (wider beams make every step slower)").format(limit=MAX_BEAM_WIDTH),
        )
        require(
            is_whole(self.max_output_tokens) and 1 <= self.max_output_tokens <= MAX_OUTPUT_TOKENS,
            _("the output length must be 1…{limit} tokens").format(limit=MAX_OUTPUT_TOKENS),
        )
        require(is_whole(self.pad_to) and 0 <= self.pad_to <= 256, _("pad_to must be 0…256"))
        require(isinstance(self.choices, tuple), _("invalid forced token"))
        require(len(self.choices) <= self.max_output_tokens, _("more steps than the output length allows"))
        require(all(c is None or (is_whole(c) and 0 <= c < 2**31) for c in self.choices), _("invalid forced token"))
        require(
            isinstance(self.silenced, frozenset)
            and all(
                isinstance(h, tuple) and len(h) == 3 and isinstance(h[0], str) and is_whole(h[1]) and is_whole(h[2])
                for h in self.silenced
            ),
            _("invalid silenced head"),
        )
        require(
            isinstance(self.family, str) and self.family in ATTENTION_FAMILIES,
            _("unknown attention family {family}").format(family=repr(self.family)),
        )
        require(isinstance(self.tab, str) and TAB_NAME.fullmatch(self.tab) is not None, _("unknown view"))
        require(
            isinstance(self.view, str) and self.view in ATTENTION_VIEWS,
            _("unknown attention view {view}").format(view=repr(self.view)),
        )
        require(
            isinstance(self.stage, str) and self.stage in STAGES,
            _("unknown stage {stage}").format(stage=repr(self.stage)),
        )
        for name in ("stage_layer", "stage_head", "stage_position"):
            value = getattr(self, name)
            require(is_whole(value) and 0 <= value < 1024, _("{name} must be an integer 0…1023").format(name=name))
        require(is_whole(self.layer) and 0 <= self.layer < 1024, _("the layer must be a non-negative integer"))
        require(self.head is None or (is_whole(self.head) and 0 <= self.head < 1024), _("invalid head"))
        require(isinstance(self.training, str) and len(self.training) <= 1000, _("the training setup is not valid"))
        require(
            isinstance(self.language, str) and self.language in LANGUAGES,
            _("unknown language {language}: choose en or zh").format(language=repr(str(self.language)[:20])),
        )

    def replace(self, **changes) -> ExplorerState:
        return dataclasses.replace(self, **changes)

    def computed(self) -> ExplorerState:
        """This state with every view-only setting (`VIEW_ONLY`) at its default: what the computed views depend on,
        and so the key of what is computed once for them."""
        return self.replace(**VIEW_DEFAULTS)

    def strategy_object(self, length_penalty: float = 1.0) -> Strategy:
        """The decoding strategy; beam search ranks finished beams with the model's length penalty."""
        if self.strategy == "sampling":
            return Sampling(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, seed=self.seed)
        if self.strategy == "beam":
            return BeamSearch(width=self.beam_width, length_penalty=length_penalty)
        return Greedy()

    def switches(self) -> ModelSwitches:
        return ModelSwitches(
            causal_mask_on=self.causal_mask,
            padding_mask_on=self.padding_mask,
            use_positions=self.positions,
            silenced=self.silenced,
        )

    # ---- links ------------------------------------------------------------------------------------------

    def to_link(self) -> str:
        """A compact URL-safe token holding the whole state."""
        values = dataclasses.asdict(self)
        values["silenced"] = sorted(list(h) for h in self.silenced)
        values["choices"] = list(self.choices)
        if not self.training:  # a page that never trained gives the same link as before the Train tab was made
            del values["training"]
        if self.language == DEFAULT_LANGUAGE:  # and an English page the same link as before the Chinese page
            del values["language"]
        raw = json.dumps(values, separators=(",", ":"), ensure_ascii=False).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def settings(self) -> dict:
        """The settings that differ from a new page's, as JSON values: what a lesson file keeps of a view
        (`explorer.lessons`), readable and editable by hand. `from_settings` reads them back."""
        values = dataclasses.asdict(self)
        values["silenced"] = sorted(list(h) for h in self.silenced)
        values["choices"] = list(self.choices)
        new = dataclasses.asdict(ExplorerState())
        new["silenced"], new["choices"] = [], []
        return {name: value for name, value in values.items() if value != new[name] or name == "model"}

    @classmethod
    def from_link(cls, token: str) -> ExplorerState:
        """Parse `to_link`'s token; anything malformed is an ExplorerError, never an exception from deep inside."""
        if not isinstance(token, str) or len(token) > 20_000:
            raise ExplorerError(_("the link is not valid"))
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            values = json.loads(raw.decode())
        except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deep
            raise ExplorerError(_("the link is damaged and cannot be read")) from None
        if not isinstance(values, dict):
            raise ExplorerError(_("the link is not valid"))
        return cls.from_settings(values)

    @classmethod
    def from_settings(cls, values: dict) -> ExplorerState:
        """The state of a link's or a lesson's settings (JSON values, by field name; the others at their defaults).
        Anything unknown or invalid is an ExplorerError."""
        known = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(values, dict) or set(values) - known:
            raise ExplorerError(_("the link holds unknown settings"))
        values = dict(values)
        try:
            if "silenced" in values:
                values["silenced"] = frozenset(tuple(h) for h in values["silenced"])
            if "choices" in values:
                values["choices"] = tuple(values["choices"])
            return cls(**values)
        except ExplorerError:
            raise
        except (TypeError, ValueError):
            raise ExplorerError(_("the link holds invalid settings")) from None


# The settings that choose what is shown (`shown`), and the state they leave the computed views with: each at its
# default.
VIEW_ONLY = frozenset(field.name for field in dataclasses.fields(ExplorerState) if field.metadata.get("view_only"))
VIEW_DEFAULTS = {field.name: field.default for field in dataclasses.fields(ExplorerState) if field.name in VIEW_ONLY}


def is_whole(value: object) -> bool:
    """An integer, and not `True` or `False` (which Python counts as 1 and 0)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """A finite int or float, and not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_unicode(text: str) -> bool:
    """False for text that is not valid Unicode (lone surrogates, which can arrive through the API)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
