"""The Beam search tab: the tree of hypotheses the beam kept and dropped, step by step."""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import render

from .panel import Panel as Base
from .panel import Refresh


class Panel(Base):
    def __init__(self, page):
        super().__init__(page)
        with gr.Tab("Beam search"):
            self.plot = gr.Plot(show_label=False, elem_id="beam-plot")
        self.outputs = [self.plot]

    def refresh(self, frame: Refresh) -> dict[Component, Any]:
        if frame.light and frame.state.strategy != "beam":  # nothing to draw, and nothing drawn before
            return {}
        return {self.plot: render.beam_figure(frame.explorer)}

    def cleared(self, message: str) -> dict[Component, Any]:
        return {self.plot: None}
