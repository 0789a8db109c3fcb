"""The Trained vs untrained tab: the selected attention view for the model and for its untrained twin."""

from __future__ import annotations

import gradio as gr

from explorer import render
from explorer.i18n import N_

from ..i18n import T
from ..panel import PageAccess, Panel, Updates, escaped
from ..runtime import LONG

HINT = N_(
    "Press the button to see the attention view chosen in the *Attention* tab twice, on the same tokens: for this "
    "model, and for its untrained twin (the same architecture with random weights). What training put there is "
    "the difference."
)


class TwinsTab(Panel):
    tab = "experiments"  # a section of the Experiments tab (`ui.tabs.experiments`)

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.section(T("Trained vs untrained"), "twins"):
            self.button = gr.Button(T("Show the same view for the untrained twin"), elem_id="twin-btn")
            self.text = gr.Markdown(T(HINT), elem_id="twin-text")
            # one above the other, each at full width; hidden until the button draws them
            self.trained = gr.Plot(show_label=False, elem_id="trained-plot", visible=False)
            self.untrained = gr.Plot(show_label=False, elem_id="untrained-plot", visible=False)
            self.caption = gr.Markdown(elem_id="twin-caption", elem_classes="caption", visible=False)

    def wire(self) -> None:
        page = self.page
        outputs = [self.trained, self.untrained, self.text, self.caption]
        compare = page.view_handler(self.comparison, lambda error: {self.text: escaped(error)})
        self.button.click(compare, page.inputs, outputs, api_visibility="private", **LONG)

    def comparison(self, explorer) -> Updates:
        trained, untrained, text = render.twin_comparison(explorer)
        shown = trained is not None
        return {
            self.trained: gr.update(value=trained, visible=shown),
            self.untrained: gr.update(value=untrained, visible=shown),
            self.text: text,
            self.caption: gr.update(value=render.attention_caption(explorer.snapshot(), explorer.state), visible=shown),
        }
