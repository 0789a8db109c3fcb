"""The Walkthrough tab: the paper's path from tokens to next-token probabilities, section by section, computed on
the current sentence and step (the sections and figures are in `explorer.walkthrough`)."""

from __future__ import annotations

import functools
from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import walkthrough

from .panel import Panel as Base
from .runtime import LONG

HINT = (
    "Press the button: each section below is then drawn from your own sentence, model and current step, from the "
    "pieces the encoder reads to the probabilities of the next token."
)


class Panel(Base):
    tab = "walkthrough"

    def __init__(self, page):
        super().__init__(page)
        with page.tab("Walkthrough", self.tab):
            self.button = gr.Button("Walk through the current sentence and step", elem_id="walkthrough-btn")
            gr.Markdown(HINT, elem_id="walkthrough-hint")
            self.sections: list[Component] = []
            for i, (heading, text) in enumerate(walkthrough.SECTIONS):
                gr.Markdown(f"### {heading}\n{text}", latex_delimiters=[{"left": "$", "right": "$", "display": False}])
                # hidden until the button draws them: an empty box would say nothing
                shown = gr.HTML if i == 0 else functools.partial(gr.Plot, show_label=False)
                self.sections.append(shown(visible=False, elem_id=f"walkthrough-{i}"))

    def wire(self) -> None:
        page = self.page
        walk = page.with_settled(self.walk, lambda error: self.empty())
        self.button.click(walk, page.inputs, self.sections, api_visibility="private", **LONG)

    def empty(self) -> dict[Component, Any]:
        return {section: gr.update(value=None, visible=False) for section in self.sections}

    def walk(self, explorer) -> dict[Component, Any]:
        drawn = walkthrough.walkthrough(explorer)
        return {
            section: gr.update(value=value, visible=True) for section, value in zip(self.sections, drawn, strict=True)
        }
