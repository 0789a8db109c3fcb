"""The Trained vs untrained tab: the selected attention view for the model and for its untrained twin."""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import render

from .panel import Panel as Base
from .panel import escaped
from .runtime import LONG


class Panel(Base):
    def __init__(self, page):
        super().__init__(page)
        with gr.Tab("Trained vs untrained"):
            self.button = gr.Button("Show the same view for the untrained twin", elem_id="twin-btn")
            self.text = gr.Markdown()
            with gr.Row():
                self.trained = gr.Plot(show_label=False, elem_id="trained-plot")
                self.untrained = gr.Plot(show_label=False, elem_id="untrained-plot")

    def wire(self) -> None:
        page = self.page
        outputs = [self.trained, self.untrained, self.text]
        compare = page.with_settled(self.comparison, lambda error: {self.trained: None, self.untrained: None,
                                                                    self.text: escaped(error)})  # fmt: skip
        self.button.click(compare, page.inputs, outputs, api_visibility="private", **LONG)

    def comparison(self, explorer) -> dict[Component, Any]:
        trained, untrained, text = render.twin_comparison(explorer)
        return {self.trained: trained, self.untrained: untrained, self.text: text}
