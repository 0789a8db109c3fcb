"""What a panel of the page is (`Panel`), and what it draws from after every action (`Refresh`).

A panel is one module of `ui/`: the sentence, the decoding controls, or a tab. It builds its components when
constructed (inside the page's `gr.Blocks`), registers its settings controls with the page (`Page.setting`),
lists the components it redraws after every action (`outputs`), draws them (`refresh`, `cleared`) and wires its
own events (`wire`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gradio.components import Component

from explorer import Explorer, ExplorerState, Views, inside
from transformer.worked import WorkedStep

if TYPE_CHECKING:
    from .page import Page

# After a tab opens, every plot measures its container again: a plot drawn while its tab was hidden had no width to
# measure and fell back to Plotly's 700 px. Plotly listens to the window's resize event; it is sent once the tab's
# content is laid out (two frames), and again a little later for a figure that arrives while the tab opens.
FIT_PLOTS_JS = """() => {
    const fit = () => window.dispatchEvent(new Event("resize"));
    requestAnimationFrame(() => requestAnimationFrame(fit));
    setTimeout(fit, 250);
}"""


@dataclass(frozen=True)
class Refresh:
    """What the panels draw from after an action."""

    explorer: Explorer
    views: Views
    message: str
    light: bool  # only moved through the decoding (Step, Back, Run, forcing): controls set by settings stay
    note: str = ""  # why the sentence is not the one typed (cut to the limit, or another model's example)

    @property
    def state(self) -> ExplorerState:
        return self.explorer.state

    @cached_property
    def worked(self) -> WorkedStep:
        """The current step worked through stage by stage, once for every panel that shows it."""
        return inside.worked_step(self.explorer)


class Panel:
    """A part of the page. Subclasses build their components in `__init__` and override what they need.

    A panel in a tab says which (`tab`, the key of `Page.tab`). While its tab is hidden, no event draws it: it is
    drawn when the tab opens (a hidden figure costs the server's time for nobody, and is drawn at the wrong size).
    Its settings controls (`controls`: a slider's range, a dropdown's choices) follow every change of the settings
    all the same (`sync`), open or not, because every event reads their values. `refresh_hidden` panels are drawn
    even while hidden (what they show is cheap and must always be current), and opening a tab that is not
    `remembered` leaves the state's open tab as it was.
    """

    tab: str | None = None
    refresh_hidden = False
    remembered = True

    def __init__(self, page: Page):
        self.page = page
        self.outputs: list[Component] = []  # what `refresh` and `cleared` may set
        self.controls: list[Component] = []  # what `sync` may set

    def refresh(self, frame: Refresh) -> dict[Component, Any]:
        """The outputs for the explorer's new state, while the panel is shown."""
        return {}

    def sync(self, frame: Refresh) -> dict[Component, Any]:
        """The controls for the explorer's new settings (not called for a move through the decoding, which
        changes no setting), shown or not. Cheap: no view is computed here."""
        return {}

    def cleared(self, message: str) -> dict[Component, Any]:
        """The outputs when there is no explorer (the first input was bad): `message` says why."""
        return {}

    def wire(self) -> None:
        """Connect this panel's own events (called once every panel is built)."""


def escaped(error: object) -> str:
    """An error (or its message), safe to show in Markdown or HTML."""
    return html.escape(str(error))
