"""What is switched off (masks, positions, silenced heads), said beside the output whichever view is open, with one
button that switches it all back on: a translation made with a head silenced looks like any other."""

from __future__ import annotations

import gradio as gr

from explorer import render

from .i18n import T
from .panel import Frame, PageAccess, Panel, Updates
from .runtime import QUICK
from .settings import NAMES

# The settings that switch a part of the model off, and the value that switches it back on.
SWITCHES = {"causal_mask": True, "padding_mask": True, "positions": True, "silenced": []}


class SwitchedOffPanel(Panel):
    """Made by the decoding panel, under the message line (`ui.decoding.DecodingPanel`)."""

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with gr.Row(elem_id="switched-off", visible=False) as self.row:
            self.text = gr.Markdown(elem_id="switched-off-text")
            self.button = gr.Button(
                T("Switch everything back on"), elem_id="switch-on", size="sm", scale=0, min_width=160
            )
        self.controls = [self.row, self.text]

    def sync(self, frame: Frame) -> Updates:
        said = render.switched_off(frame.state)
        return {self.row: gr.update(visible=bool(said)), self.text: said}

    def cleared(self, message: str) -> Updates:
        return {self.row: gr.update(visible=False)}

    def wire(self) -> None:
        page = self.page
        switches = [page.control(name) for name in SWITCHES]
        outputs = list(dict.fromkeys([*page.outputs, *switches]))
        self.button.click(self.switched_on, page.inputs, outputs, api_visibility="private", **QUICK)

    def switched_on(self, explorer, *values) -> Updates:
        """Every switch back on: the settings applied as if each control had been set so, and the controls showing
        it."""
        values = list(values)
        for name, on in SWITCHES.items():
            values[NAMES.index(name)] = on
        controls = {self.page.control(name): on for name, on in SWITCHES.items()}
        return controls | self.page.apply(explorer, *values)  # a control the page redraws anyway, as it draws it
