"""The Walkthrough tab: the paper's path from tokens to next-token probabilities, section by section, computed on
the current sentence and step (the sections and figures are in `explorer.walkthrough`)."""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import walkthrough

from .panel import Panel as Base
from .runtime import LONG


class Panel(Base):
    def __init__(self, page):
        super().__init__(page)
        with gr.Tab("Walkthrough"):
            self.button = gr.Button("Walk through the current sentence and step", elem_id="walkthrough-btn")
            self.sections: list[Component] = []
            for heading, text in walkthrough.SECTIONS:
                gr.Markdown(f"### {heading}\n{text}", latex_delimiters=[{"left": "$", "right": "$", "display": False}])
                self.sections.append(gr.HTML() if not self.sections else gr.Plot(show_label=False))

    def wire(self) -> None:
        page = self.page
        walk = page.with_settled(self.walk, lambda error: self.empty())
        self.button.click(walk, page.inputs, self.sections, api_visibility="private", **LONG)

    def empty(self) -> dict[Component, Any]:
        return {section: "" if i == 0 else None for i, section in enumerate(self.sections)}

    def walk(self, explorer) -> dict[Component, Any]:
        return dict(zip(self.sections, walkthrough.walkthrough(explorer), strict=True))
