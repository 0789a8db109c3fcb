"""The Walkthrough tab: a guided tour of the stages of the Inside a step view, from the sentence's pieces to the
next token, written with the numbers of the current sentence and step (`explorer.walkthrough`). It is drawn again
after every action while the tab is open, so it is never stale, and each section's button opens its stage."""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import Explorer, walkthrough
from explorer.i18n import N_

from ..i18n import T
from ..panel import Frame, PageAccess, Panel, Updates
from ..plot import Plot
from ..runtime import QUICK
from .inside import HOVER_JS, SHOW_STAGE_JS

HINT = N_(
    "A tour of the computation of the next token, stage by stage, for a student who has read the paper once. "
    "Every number is your own sentence's at the current step, and follows every Step, Back, Run and setting; "
    "each section's button opens its stage in *Inside a step*."
)
LATEX = [{"left": "$", "right": "$", "display": False}]


OPENS = {  # a section's button, by the view it opens (`walkthrough.Kind.opens`)
    "inside": N_("Open this stage in Inside a step →"),
    "why": N_("Open the Why? tab →"),
}


class Section:
    """The components of one section: its text, its tensors and figure (when it has them), and its link."""

    def __init__(self, kind: walkthrough.Kind):
        self.kind = kind
        self.text = gr.Markdown("## " + T(kind.heading), latex_delimiters=LATEX, elem_id=f"walkthrough-{kind.key}")
        self.tensors = gr.HTML(elem_id=f"walkthrough-{kind.key}-tensors", js_on_load=HOVER_JS) if kind.tensors else None
        self.plot = Plot(show_label=False, elem_id=f"walkthrough-{kind.key}-plot") if kind.plot else None
        self.link = gr.Button(
            T(OPENS[kind.opens]),
            size="sm",
            elem_id=f"walkthrough-{kind.key}-link",
            elem_classes="walkthrough-link",
        )

    @property
    def outputs(self) -> list[Component]:
        return [c for c in (self.text, self.tensors, self.plot) if c is not None]

    def drawn(self, section: walkthrough.Section) -> Updates:
        updates: dict[Component, Any] = {self.text: section.text}
        if self.tensors is not None:
            updates[self.tensors] = section.tensors or ""
        if self.plot is not None:
            updates[self.plot] = section.plot
        return updates


class WalkthroughTab(Panel):
    tab = "walkthrough"

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.tab(T("Walkthrough"), self.tab):
            gr.Markdown(T(HINT), elem_id="walkthrough-hint")
            self.sections = [Section(kind) for kind in walkthrough.SECTIONS]
        self.outputs = [component for section in self.sections for component in section.outputs]

    def refresh(self, frame: Frame) -> Updates:
        updates: dict[Component, Any] = {}
        for shown, section in zip(self.sections, walkthrough.tour(frame.explorer, frame.worked), strict=True):
            updates.update(shown.drawn(section))
        return updates

    def cleared(self, message: str) -> Updates:
        return {component: None for component in self.outputs}

    def wire(self) -> None:
        page = self.page
        outputs = [page.tab_opener, page.control("stage"), *page.outputs]
        for section in self.sections:
            opened = section.link.click(
                self.stage_opener(section.kind.key), page.inputs, outputs, api_visibility="private", **QUICK
            )
            opened.then(None, None, None, js=SHOW_STAGE_JS, api_visibility="private")

    def stage_opener(self, key: str):
        """A handler for a section's button: the Inside a step view opens on the section's stage."""
        page = self.page

        def act(explorer: Explorer) -> None:
            explorer.update(**walkthrough.link(explorer, key).state_fields())

        handler = page.action(act)
        opens = next(kind.opens for kind in walkthrough.SECTIONS if kind.key == key)

        def open_stage(explorer, *values) -> Updates:
            updates = handler(explorer, *values)
            explorer = updates.get(page.explorer)
            if isinstance(explorer, Explorer) and explorer.state.tab == opens:
                updates |= page.opening(opens)
                if opens == "inside":
                    updates[page.control("stage")] = explorer.state.stage
            return updates

        return open_stage
