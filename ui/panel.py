"""A part of the page (`Panel`), what it may use of the page (`PageAccess`), and what it draws from (`Frame`).

A panel is the sentence, the decoding controls, the header, or one of the tabs (`ui/tabs/`). It builds its
components when constructed (inside the page's `gr.Blocks`), registers its settings controls with the page
(`PageAccess.setting`), lists the components it redraws after every action (`outputs`), draws them for a `Frame`
(`refresh`, `cleared`) and wires its own events (`wire`). Everything a handler returns is a `{component: value}`
dict; a component left out stays as it is.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import gradio as gr
from gradio.components import Component
from gradio.i18n import I18nData

from explorer import Explorer, ExplorerError, ExplorerState, ModelRegistry, StepSnapshot
from explorer.classroom import Classroom
from explorer.session import WorkedStep
from explorer.training import TrainingPool

Updates = dict[Component, Any]  # what a handler returns: the components it draws, with their new values


@dataclass(frozen=True)
class Frame:
    """The page as it is drawn after an action: the user's explorer, the snapshot of its step, and what to say."""

    explorer: Explorer
    snapshot: StepSnapshot
    message: str
    light: bool  # only moved through the decoding (Step, Back, Run, forcing): controls set by settings stay
    note: str = ""  # why the sentence is not the one typed (cut to the limit, or another model's example)

    @property
    def state(self) -> ExplorerState:
        return self.explorer.state

    @cached_property
    def worked(self) -> WorkedStep:
        """The current step worked through stage by stage, once for every panel that shows it."""
        return self.explorer.worked_step()


class PageAccess(Protocol):
    """What a panel may use of the page (`ui.page.Page`)."""

    registry: ModelRegistry
    classroom: Classroom  # the classes on this server (`explorer.classroom`)
    pool: TrainingPool  # the Train tab's runs, trained by worker processes shared by every user
    explorer: gr.State  # the user's `Explorer`
    tabs: gr.Tabs  # the views, one tab each (never an event's output: `opening` opens one)
    tab_opener: gr.HTML  # what an event lists to open a tab (`opening`)
    tab_by_key: dict[str, gr.Tab]  # the tabs, by key (`ExplorerState.tab`)
    status: gr.Markdown  # the message line (made by the decoding panel, `message_line`)
    default_model: str  # the model the page opens on

    @property
    def inputs(self) -> list[Component]: ...  # of every action: the explorer, then every setting's control

    @property
    def outputs(self) -> list[Component]: ...  # what a change of the settings may redraw

    @property
    def moving_outputs(self) -> list[Component]: ...  # what a move through the decoding may redraw

    def setting(self, name: str, component: Component) -> Component: ...

    def control(self, name: str) -> Component: ...

    def message_line(self) -> gr.Markdown: ...

    def tab(self, label: str | I18nData, key: str) -> gr.Tab: ...

    def section(self, label: str | I18nData, key: str) -> gr.Accordion: ...  # a view in the tab being built

    def tab_holding(self, key: str) -> str: ...  # the tab that shows the view `key`

    def default_for(self, language: str) -> tuple[str, str]: ...  # a first view's model, and why if not the best

    def in_the_new_language(self, event: Any) -> Any: ...  # the tab bar's titles redrawn after `event`

    def opening(self, key: str) -> Updates: ...  # the update that opens the tab that shows `key`

    def on_load(self, handler: Callable, inputs: Sequence[Component], outputs: Sequence[Component]) -> Any: ...

    def on_input(self, *components: Component) -> None: ...

    def action(
        self, act: Callable[..., str | None], *, moves: bool = False, extra: int = 0, tab: str | None = None
    ) -> Callable[..., Updates]: ...

    @property
    def apply(self) -> Callable[..., Updates]: ...

    def apply_if_changed(self, name: str) -> Callable[..., Updates]: ...

    def view_handler(
        self, compute: Callable[..., Updates], failed: Callable[[ExplorerError], Updates], *, hold: bool = True
    ) -> Callable[..., Updates]: ...

    def explorer_with(self, explorer: Explorer | None, values: tuple) -> tuple[Explorer, str]: ...

    def registry_of(self, explorer: Explorer | None) -> ModelRegistry: ...

    def refreshed(
        self, explorer: Explorer | None, message: str = "", light: bool = False, note: str = "", tab: str | None = None
    ) -> Updates: ...

    def moved(self, updates: Updates, outputs: Sequence[Component] | None = None) -> Updates: ...

    def wire_move(self, name: str, button: gr.Button, act: Callable[[Explorer], str | None]) -> None: ...


class Panel:
    """A part of the page. Subclasses build their components in `__init__` and override what they need.

    A panel in a tab says which (`tab`, the key of `PageAccess.tab`). While its tab is hidden, no event draws it: it
    is drawn when the tab opens (a hidden figure costs the server's time for nobody, and is drawn at the wrong size).
    Its settings controls (`controls`: a slider's range, a dropdown's choices) follow every change of the settings
    all the same (`sync`), open or not, because every event reads their values. `refresh_hidden` panels are drawn
    even while hidden (what they show is cheap and must always be current), and opening a tab that is not
    `remembered` leaves the state's open tab as it was.
    """

    tab: str | None = None
    refresh_hidden = False
    remembered = True

    def __init__(self, page: PageAccess):
        self.page = page
        self.outputs: list[Component] = []  # what `refresh` and `cleared` may set
        self.controls: list[Component] = []  # what `sync` may set

    def refresh(self, frame: Frame) -> Updates:
        """The outputs for the explorer's new state, while the panel is shown."""
        return {}

    def sync(self, frame: Frame) -> Updates:
        """The controls for the explorer's new settings (not called for a move through the decoding, which
        changes no setting), shown or not. Cheap: no view is computed here."""
        return {}

    def cleared(self, message: str) -> Updates:
        """The outputs when there is no explorer (the first input was bad): `message` says why."""
        return {}

    def wire(self) -> None:
        """Connect this panel's own events (called once every panel is built)."""

    def on_opened(self, event: Any) -> None:
        """Chain what this panel does when the page opens to `event`, the page load that shows a shared link or
        the page's own settings (`ui.share.SharePanel`)."""


# What would make text in a Markdown component more than text, within a line: links and images (`[…](…)`,
# `![…](…)`), code, emphasis, strikethrough, formulas, table cells, and a backslash itself. Each is shown as itself
# with a backslash before it (CommonMark); the rest of Markdown's syntax takes effect only at the start of a line.
INLINE_MARKDOWN = re.compile(r"([\\`*_\[\]~$|])")
# … and what gradio's Markdown makes a link of by itself (GFM's autolinks): http://…, www.…, name@host. A backslash
# before their ":", "." or "@" breaks them.
AUTOLINKS = (
    (re.compile(r"(?i)\b(https?|ftp|mailto):"), r"\1\\:"),
    (re.compile(r"(?i)\b(www)\."), r"\1\\."),
    (re.compile("@"), r"\\@"),
)


def escaped(text: object) -> str:
    """Text for a Markdown component (a message, or a part of one) that may hold what a user typed or a link sent,
    shown as the text it is: no HTML, no image fetched, no link, no formatting. A message's own formatting around
    it (`**{model}** could not be loaded`) is kept."""
    safe = INLINE_MARKDOWN.sub(r"\\\1", html.escape(str(text)))
    for autolink, broken in AUTOLINKS:
        safe = autolink.sub(broken, safe)
    return safe
