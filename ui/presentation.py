"""The page's header: the introduction and the presentation switch, a layout for a projector.

With the switch on, the page shows the sentence, the buttons, the output and the candidates in a narrow column on
the left and the views beside them, in large type, so that one 1024×768 screen holds a whole step; the settings
fold away. The switch is a setting like any other, so a shared link remembers it.
"""

from __future__ import annotations

import gradio as gr

from .panel import PageAccess, Panel
from .settings import DEFAULTS

INTRODUCTION = (
    "# Transformer Explorer\nType a sentence, then **Step** through the translation token by token and look "
    "inside: every layer's and head's attention, the next-token probabilities, masks, heads, positions."
)

# The layout follows the switch (also when a shared link sets it); the figures then measure their new width.
LAYOUT_JS = """(on) => {
    document.body.classList.toggle("presentation", Boolean(on));
    const fit = () => window.dispatchEvent(new Event("resize"));
    requestAnimationFrame(() => requestAnimationFrame(fit));
    setTimeout(fit, 300);
    return [];
}"""


class Header(Panel):
    def __init__(self, page: PageAccess):
        super().__init__(page)
        with gr.Row(elem_id="header"):
            gr.Markdown(INTRODUCTION, elem_id="introduction")
            switch = gr.Checkbox(
                DEFAULTS["presentation"],
                label="Presentation layout (for a projector)",
                elem_id="presentation",
                scale=0,
                min_width=220,
            )
            self.switch = page.setting("presentation", switch)

    def wire(self) -> None:
        self.switch.change(None, self.switch, None, js=LAYOUT_JS, api_visibility="private")
        self.page.on_input(self.switch)
