"""The Attention tab: one attention family, layer and head (or the head average, or every head) as a heatmap."""

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
        with page.tab("Attention", "attention"):
            with gr.Row():
                self.family = page.setting("family", gr.Radio(
                    [(name, key) for key, name in render.FAMILY_NAMES.items()], value="cross",
                    label="Attention", elem_id="attention-family",
                ))  # fmt: skip
                self.layer = page.setting("layer", gr.Slider(0, 5, value=0, step=1, label="Layer",
                                                             elem_id="attention-layer"))  # fmt: skip
                self.head = page.setting("head", gr.Dropdown(render.head_choices(4), value=render.HEAD_AVERAGE,
                                                             label="Head", elem_id="head"))  # fmt: skip
            self.plot = gr.Plot(show_label=False, elem_id="attention-plot")
            self.caption = gr.Markdown(elem_id="attention-caption", elem_classes="caption")
        self.outputs = [self.plot, self.layer, self.head, self.caption]

    def refresh(self, frame: Refresh) -> dict[Component, Any]:
        state = frame.state
        updates: dict[Component, Any] = {
            self.plot: render.attention_figure(frame.views, state),
            self.caption: render.attention_caption(frame.views, state),
        }
        if not frame.light:  # the model's layers and heads, for a new model or family
            config = frame.explorer.checkpoint.model.config
            updates[self.layer] = gr.update(maximum=max(config.n_layers(state.family) - 1, 0), value=state.layer)
            updates[self.head] = gr.update(choices=render.head_choices(config.n_heads), value=render.head_choice(state))
        return updates

    def cleared(self, message: str) -> dict[Component, Any]:
        return {self.plot: None}

    def wire(self) -> None:
        self.page.on_input(self.family, self.layer, self.head)
