"""The page's header: the introduction and the presentation switch, a layout for a projector.

With the switch on, the page shows the sentence, the buttons, the output and the candidates in a narrow column on
the left and the views beside them, in large type, so that one 1024×768 screen holds a whole step; the settings
fold away. The switch is a setting like any other, so a shared link remembers it.
"""

from __future__ import annotations

import gradio as gr

from explorer.i18n import N_

from . import i18n
from .class_panel import ClassPanel
from .i18n import T
from .lesson_panel import LessonPanel
from .panel import Frame, PageAccess, Panel, Updates
from .settings import DEFAULTS
from .share import SharePanel

INTRODUCTION = N_(
    "Type a sentence, then **Step** through the translation token by token and look inside: every layer's and "
    "head's attention, the next-token probabilities, masks, heads, positions."
)

# The layout follows the switch (also when a shared link sets it); the figures then measure their new width. The
# page's column loses the mark of its own layout (`.page-layout`, assets/style.css) while the switch is on.
LAYOUT_JS = """(on) => {
    document.body.classList.toggle("presentation", Boolean(on));
    document.getElementById("page").classList.toggle("page-layout", !on);
    const fit = () => window.dispatchEvent(new Event("resize"));
    requestAnimationFrame(() => requestAnimationFrame(fit));
    setTimeout(fit, 300);
    return [];
}"""


class Header(Panel):
    def __init__(self, page: PageAccess):
        super().__init__(page)
        with gr.Row(elem_id="header"):
            with gr.Column(elem_id="introduction", scale=4):
                gr.Markdown("# Transformer Explorer")
                gr.Markdown(T(INTRODUCTION))
                self.share = SharePanel(page)  # Copy link, and the link
                self.classes = ClassPanel(page, self.share.opened_with)  # teach or join a class
                self.classes.make_box(self.share.row)
                self.lessons = LessonPanel(page, self.classes)  # a lesson's moments, Previous and Next
                self.lessons.make_box(self.share.row)
            with gr.Column(scale=0, min_width=220, elem_id="page-switches"):
                self.language = page.setting("language", i18n.switch(DEFAULTS["language"]))
                switch = gr.Checkbox(
                    DEFAULTS["presentation"],
                    label=T("Presentation layout (for a projector)"),
                    elem_id="presentation",
                    min_width=220,
                )

            self.switch = page.setting("presentation", switch)
        self.controls = [self.language]  # the page's language, as the page was opened (`ShareTab.restore`)

    def sync(self, frame: Frame) -> Updates:
        return {self.language: frame.state.language}

    def wire(self) -> None:
        self.switch.change(None, self.switch, None, js=LAYOUT_JS, api_visibility="private")
        switched = self.language.input(None, self.language, None, js=i18n.SET_LOCALE_JS, api_visibility="private")
        self.page.in_the_new_language(switched)
        self.page.on_input(self.switch, self.language)
