"""Masks and heads, a section of the Experiments tab: the causal and padding masks, the teacher-forced predictions,
and silencing heads (with a comparison against the model with every head, which follows every step once asked
for)."""

from __future__ import annotations

import gradio as gr

from explorer import render
from explorer.i18n import N_

from ..i18n import T
from ..panel import Frame, PageAccess, Panel, Updates, escaped
from ..plot import Plot
from ..runtime import LONG
from ..settings import DEFAULTS, control_values, silenced_options

COMPARE_HINT = N_(
    "Tick heads above to silence them, then press the button: the next token's probabilities and the whole "
    "translation, with those heads and without them."
)

FOLLOWING = "silenced"  # the name of the comparison in `Explorer.following`


class MasksTab(Panel):
    tab = "experiments"  # a section of the Experiments tab (`ui.tabs.experiments`)

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.section(T("Masks and heads"), "masks"):
            with gr.Row():
                causal = gr.Checkbox(
                    DEFAULTS["causal_mask"], label=T("Causal mask (decoder sees only the past)"), elem_id="causal-mask"
                )
                padding = gr.Checkbox(DEFAULTS["padding_mask"], label=T("Source padding mask"), elem_id="padding-mask")
            pad_to = gr.Slider(  # a row of its own: beside the two, a narrow column stacked its label a word a line
                0, 64, value=DEFAULTS["pad_to"], step=1, label=T("Pad the source to this many tokens (0 = off)")
            )
            self.teacher_forced = gr.Markdown(elem_id="teacher-forced")
            self.silenced = gr.CheckboxGroup([], label=T("Silenced heads"), elem_id="silenced-heads")
            self.compare_btn = gr.Button(T("Compare with no heads silenced"), elem_id="compare-btn")
            self.compare_text = gr.Markdown(T(COMPARE_HINT), elem_id="compare-text")
            self.compare_plot = Plot(show_label=False, elem_id="compare-plot", visible=False)
            self.compare_caption = gr.Markdown(
                T(render.COMPARE_CAPTION), elem_id="compare-caption", elem_classes="caption", visible=False
            )
        settings = {"causal_mask": causal, "padding_mask": padding, "pad_to": pad_to, "silenced": self.silenced}
        self.settings = [page.setting(name, control) for name, control in settings.items()]
        self.outputs = [self.teacher_forced, self.compare_plot, self.compare_text, self.compare_caption]
        self.controls = [self.silenced]

    def refresh(self, frame: Frame) -> Updates:
        """The teacher-forced table, and the comparison (once asked for, it follows every step and setting)."""
        updates = {self.teacher_forced: render.teacher_forced_markdown(frame.snapshot, frame.state)}
        if FOLLOWING in frame.explorer.following:
            updates |= self.comparison(frame.explorer)
        return updates

    def sync(self, frame: Frame) -> Updates:
        """The model's heads, and the ones silenced."""
        return {
            self.silenced: gr.update(
                choices=silenced_options(frame.explorer),
                value=control_values(frame.state)["silenced"],
            )
        }

    def cleared(self, message: str) -> Updates:
        return {self.teacher_forced: ""}

    def wire(self) -> None:
        page = self.page
        page.on_input(*self.settings)
        compare = page.view_handler(self.asked, lambda error: {self.compare_text: escaped(error)})
        outputs = [self.compare_plot, self.compare_text, self.compare_caption]
        self.compare_btn.click(compare, page.inputs, outputs, api_visibility="private", **LONG)

    def asked(self, explorer) -> Updates:
        """The button: the comparison, followed from now on."""
        explorer.following.add(FOLLOWING)
        return self.comparison(explorer)

    def comparison(self, explorer) -> Updates:
        figure, text = render.comparison(explorer)
        shown = bool(explorer.state.silenced)
        return {
            self.compare_plot: gr.update(value=figure, visible=shown),
            self.compare_text: text,
            self.compare_caption: gr.update(visible=shown),
        }
