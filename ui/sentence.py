"""The sentence panel: the model, the source sentence, its example sentences and its pieces (token chips)."""

from __future__ import annotations

import html
from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import MAX_SOURCE_CHARS, ExplorerError, render

from .panel import Panel as Base
from .panel import Refresh
from .runtime import QUICK

HUB_EXAMPLES = ["Helsinki-NLP/opus-mt-en-de", "Helsinki-NLP/opus-mt-en-fr", "Helsinki-NLP/opus-mt-en-zh"]


class Panel(Base):
    def __init__(self, page):
        super().__init__(page)
        registry = page.registry
        default, page.startup_note = registry.default()  # opus-mt-en-de where it is cached, else en-de
        examples = registry.examples(default)
        names = [*registry.builtin, *(name for name in HUB_EXAMPLES if name not in registry.builtin)]
        with gr.Row():
            with gr.Column(scale=2, min_width=300, elem_id="model-column"):
                self.model = page.setting("model", gr.Dropdown(
                    [(registry.describe(name).label, name) for name in names], value=default, allow_custom_value=True,
                    label="Model", elem_id="model-select",
                    info="a built-in model, or any opus-mt model id from the Hugging Face Hub",
                ))  # fmt: skip
                with gr.Accordion("About this model: source, size, quality", open=False, elem_id="model-about-box"):
                    self.about = gr.Markdown(elem_id="model-about", elem_classes="caption")
            self.source = page.setting("source", gr.Textbox(
                label="Source sentence", value=examples[0][0], lines=1, max_length=MAX_SOURCE_CHARS,
                elem_id="source-text", scale=3,
            ))  # fmt: skip
        self.examples = gr.Dataset(
            components=["textbox"], samples=[[sentence] for sentence, _ in examples], label="Examples",
            sample_labels=[label for _, label in examples], elem_id="examples",
        )  # fmt: skip
        self.pieces = gr.HTML(elem_id="source-pieces")
        self.outputs = [self.pieces]  # with a move too: a sentence typed and not yet sent goes with the Step
        self.controls = [self.examples, self.model, self.about, self.source]  # the source: for a model that
        # cannot read it (`Page.action`)

    def refresh(self, frame: Refresh) -> dict[Component, Any]:
        if frame.light:  # the sentence and the model did not change
            return {}
        return {self.pieces: render.source_chips(frame.explorer)}

    def sync(self, frame: Refresh) -> dict[Component, Any]:
        """The model's examples and description, for the model in use."""
        examples = self.page.registry.examples(frame.state.model)
        return {
            self.examples: gr.update(
                samples=[[sentence] for sentence, _ in examples], sample_labels=[label for _, label in examples]
            ),
            self.model: gr.update(value=frame.state.model),  # after a failed load, back to the model in use
            self.about: self.page.registry.describe(frame.state.model).markdown(),
        }

    def cleared(self, message: str) -> dict[Component, Any]:
        return {self.pieces: ""}

    def wire(self) -> None:
        page = self.page
        self.model.input(self.prepare_model, self.model, page.status, api_visibility="private").then(
            page.apply, page.inputs, page.outputs, api_visibility="private"
        )
        self.source.submit(page.apply, page.inputs, page.outputs, api_name="apply", api_visibility="undocumented",
                           **QUICK)  # fmt: skip
        self.examples.click(lambda sample: sample[0], self.examples, self.source, api_visibility="private").then(
            page.apply, page.inputs, page.outputs, api_visibility="private"
        )

    def prepare_model(self, name: str, progress=gr.Progress(track_tqdm=True)) -> str:  # noqa: B008 (gradio's idiom)
        """Load (and for a Hub model, download, with progress) before anything is computed with it."""
        progress(0, desc=f"Loading {name}")
        try:
            self.page.registry.get((name or "").strip())
        except ExplorerError as error:
            return html.escape(str(error))
        return ""
