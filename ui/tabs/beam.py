"""The Beam search tab: the tree of hypotheses the beam kept and dropped, step by step."""

from __future__ import annotations

import gradio as gr

from explorer import render
from explorer.i18n import N_, _

from ..i18n import T
from ..panel import Frame, PageAccess, Panel, Updates
from ..plot import Plot

NOT_BEAM = N_(
    "Beam search is not in use. Choose **beam** under *Decoding*, then press **Step** or **Run**: the tree of the "
    "hypotheses the beam keeps and drops grows here, a column a step."
)
NO_STEP = N_(
    "Press **Step** or **Run**: the tree of the hypotheses the beam keeps and drops grows here, a column a step."
)


class BeamTab(Panel):
    tab = "beam"

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.tab(T("Beam search"), self.tab):
            self.hint = gr.Markdown(T(NOT_BEAM), elem_id="beam-hint")
            self.plot = Plot(show_label=False, elem_id="beam-plot", visible=False)
            self.caption = gr.Markdown(T(render.BEAM_CAPTION), elem_classes="caption", visible=False)
        self.outputs = [self.hint, self.plot, self.caption]

    def refresh(self, frame: Frame) -> Updates:
        if frame.light and frame.state.strategy != "beam":  # nothing to draw, and nothing drawn before
            return {}
        figure = render.beam_figure(frame.explorer)
        if figure is None:
            hint = NOT_BEAM if frame.state.strategy != "beam" else NO_STEP
            return {
                self.hint: gr.update(value=_(hint), visible=True),
                self.plot: gr.update(value=None, visible=False),
                self.caption: gr.update(visible=False),
            }
        return {
            self.hint: gr.update(visible=False),
            self.plot: gr.update(value=figure, visible=True),
            self.caption: gr.update(visible=True),
        }

    def cleared(self, message: str) -> Updates:
        return {self.plot: gr.update(value=None, visible=False)}
