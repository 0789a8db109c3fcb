"""Trained vs untrained, a section of the Experiments tab: the selected attention view for the model and for its
untrained twin. Once asked for, it follows every step and setting (never a figure of a step that is gone)."""

from __future__ import annotations

import gradio as gr

from explorer import render
from explorer.i18n import N_

from ..i18n import T
from ..panel import Frame, PageAccess, Panel, Updates, escaped
from ..plot import Plot
from ..runtime import LONG

HINT = N_(
    "Press the button to see the attention view chosen in the *Attention* tab twice, on the same tokens: for this "
    "model, and for its untrained twin (the same architecture with random weights). What training put there is "
    "the difference."
)

FOLLOWING = "twins"  # the name of the comparison in `Explorer.following`


class TwinsTab(Panel):
    tab = "experiments"  # a section of the Experiments tab (`ui.tabs.experiments`)

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.section(T("Trained vs untrained"), "twins"):
            self.button = gr.Button(T("Show the same view for the untrained twin"), elem_id="twin-btn")
            self.text = gr.Markdown(T(HINT), elem_id="twin-text")
            # one above the other, each at full width; hidden until the button draws them
            self.trained = Plot(show_label=False, elem_id="trained-plot", visible=False)
            self.untrained = Plot(show_label=False, elem_id="untrained-plot", visible=False)
            self.caption = gr.Markdown(elem_id="twin-caption", elem_classes="caption", visible=False)
        self.outputs = [self.trained, self.untrained, self.text, self.caption]

    def refresh(self, frame: Frame) -> Updates:
        """The comparison again for the new step, once the user has asked for it."""
        return self.comparison(frame.explorer) if FOLLOWING in frame.explorer.following else {}

    def wire(self) -> None:
        page = self.page
        compare = page.view_handler(self.asked, lambda error: {self.text: escaped(error)})
        self.button.click(compare, page.inputs, self.outputs, api_visibility="private", **LONG)

    def asked(self, explorer) -> Updates:
        """The button: the comparison, followed from now on."""
        explorer.following.add(FOLLOWING)
        return self.comparison(explorer)

    def comparison(self, explorer) -> Updates:
        trained, untrained, text = render.twin_comparison(explorer)
        shown = trained is not None
        return {
            self.trained: gr.update(value=trained, visible=shown),
            self.untrained: gr.update(value=untrained, visible=shown),
            self.text: text,
            self.caption: gr.update(value=render.attention_caption(explorer.snapshot(), explorer.state), visible=shown),
        }
