"""The Walkthrough tab: the paper's path from tokens to next-token probabilities, section by section, computed on
the current sentence and step and drawn again after every action while the tab is open, so it is never stale (the
sections and figures are in `explorer.walkthrough`)."""

from __future__ import annotations

import functools
from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import walkthrough

from .panel import Panel as Base
from .panel import Refresh

HINT = (
    "Each section below is drawn from your own sentence, model and current step, from the pieces the encoder reads "
    "to the probabilities of the next token, and follows every Step, Back, Run and setting."
)


class Panel(Base):
    tab = "walkthrough"

    def __init__(self, page):
        super().__init__(page)
        with page.tab("Walkthrough", self.tab):
            gr.Markdown(HINT, elem_id="walkthrough-hint")
            self.sections: list[Component] = []
            for i, (heading, text) in enumerate(walkthrough.SECTIONS):
                gr.Markdown(f"### {heading}\n{text}", latex_delimiters=[{"left": "$", "right": "$", "display": False}])
                shown = gr.HTML if i == 0 else functools.partial(gr.Plot, show_label=False)
                self.sections.append(shown(elem_id=f"walkthrough-{i}"))
        self.outputs = list(self.sections)

    def refresh(self, frame: Refresh) -> dict[Component, Any]:
        drawn = walkthrough.walkthrough(frame.explorer)
        return dict(zip(self.sections, drawn, strict=True))

    def cleared(self, message: str) -> dict[Component, Any]:
        return {section: None for section in self.sections}
