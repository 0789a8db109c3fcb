"""The sentence panel: the model, the source sentence, its example sentences and its pieces (token chips)."""

from __future__ import annotations

import html

import gradio as gr

from explorer import Explorer, ExplorerError, ModelRegistry, render
from explorer.i18n import _, ngettext, speaking
from explorer.registry import PersonalRegistry

from .i18n import T
from .panel import Frame, PageAccess, Panel, Updates, escaped
from .runtime import QUICK, device_said

FAILURE = "✗"  # how the label of an instructive failure starts, in every language (`explorer.registry`)
HUB_EXAMPLES = ["Helsinki-NLP/opus-mt-en-de", "Helsinki-NLP/opus-mt-en-fr", "Helsinki-NLP/opus-mt-en-zh"]


class SentencePanel(Panel):
    def __init__(self, page: PageAccess):
        super().__init__(page)
        registry = page.registry
        default = page.default_model
        examples = registry.examples(default)
        self.names = [*registry.builtin, *(name for name in HUB_EXAMPLES if name not in registry.builtin)]
        with gr.Row():
            with gr.Column(scale=2, min_width=300, elem_id="model-column"):
                model = gr.Dropdown(
                    self.choices(),
                    value=default,
                    allow_custom_value=True,
                    label=T("Model"),
                    elem_id="model-select",
                    info=T("a built-in model, or any opus-mt model id from the Hugging Face Hub"),
                )
                self.model = page.setting("model", model)
                self.model_message = gr.Markdown(elem_id="model-message", elem_classes="note")  # why a model failed
                with gr.Accordion(T("About this model: source, size, quality"), open=False, elem_id="model-about-box"):
                    self.about = gr.Markdown(elem_id="model-about", elem_classes="caption")
            with gr.Column(scale=3, min_width=300):
                # No `max_length`: the browser would cut a long paste without a word (`within_limit` says so).
                source = gr.Textbox(
                    examples[0][0], label=T("Source sentence"), lines=1, max_lines=6, elem_id="source-text"
                )
                self.source = page.setting("source", source)
                self.note = gr.Markdown(elem_id="source-note", elem_classes="note")  # what the model makes of it
        with gr.Accordion(T("Examples: sentences to try"), open=False, elem_id="examples-box"):  # folded: the first
            # screen keeps its room for Step and the views
            self.examples = gr.Dataset(
                components=["textbox"],
                samples=[[sentence] for sentence, _label in examples],
                label=T("Examples"),
                sample_labels=[label for _sentence, label in examples],
                elem_id="examples",
                show_label=False,
            )
            # gradio cuts a long example after about fifty characters: the failures' reasons in full, under them
            self.failures = gr.Markdown(elem_id="examples-failures", elem_classes="caption")
        self.pieces = gr.HTML(elem_id="source-pieces")
        self.outputs = [self.pieces, self.note]  # with a move too: a sentence typed and not yet sent goes with the Step
        self.controls = [
            self.examples,
            self.failures,
            self.model,
            self.about,
            self.source,
        ]  # the source: for a model that
        # cannot read it (`Page.action`)

    def choices(self, registry: ModelRegistry | PersonalRegistry | None = None) -> list[tuple[str, str]]:
        """The picker's models, each said to need the internet while it is a Hub model not downloaded yet; first
        those of the user's own (trained in the Train tab, or loaded from a file), newest first."""
        registry = registry or self.page.registry
        own = list(reversed(registry.own)) if isinstance(registry, PersonalRegistry) else []
        return [(registry.picker_label(name), name) for name in [*own, *self.names]]

    def refresh(self, frame: Frame) -> Updates:
        if frame.light:  # the sentence and the model did not change
            return {}
        notes = [frame.note, unknown_note(frame.explorer)]
        return {
            self.pieces: render.source_chips(frame.explorer),
            self.note: "\n\n".join(escaped(note) for note in notes if note),
        }

    def sync(self, frame: Frame) -> Updates:
        """The model's examples and description, for the model in use."""
        registry = frame.explorer.registry
        examples = registry.examples(frame.state.model)
        labels = [_(label) for _sentence, label in examples]  # a failure's label says why
        failures = [label for label in labels if label.startswith(FAILURE)]
        return {
            self.examples: gr.update(samples=[[sentence] for sentence, _label in examples], sample_labels=labels),
            self.failures: "\n".join(f"- {html.escape(label, quote=False)}" for label in failures),
            # after a failed load, back to the model in use; the user's own models among the choices
            self.model: gr.update(value=frame.state.model, choices=self.choices(registry)),
            self.about: registry.describe(frame.state.model).markdown() + "\n\n" + device_said(frame.explorer.device),
        }

    def cleared(self, message: str) -> Updates:
        return {self.pieces: "", self.note: ""}

    def wire(self) -> None:
        page = self.page
        self.model.input(
            self.prepare_model,
            [self.model, page.explorer, page.control("language")],
            [self.model_message, self.model],
            api_visibility="private",
        ).then(page.apply, page.inputs, page.outputs, api_visibility="private")
        self.source.submit(
            page.apply, page.inputs, page.outputs, api_name="apply", api_visibility="undocumented", **QUICK
        )
        # Leaving the box takes the sentence as Enter does: the pieces never show another sentence than the box.
        self.source.blur(page.apply_if_changed("source"), page.inputs, page.outputs, api_visibility="private", **QUICK)
        self.examples.click(lambda sample: sample[0], self.examples, self.source, api_visibility="private").then(
            page.apply, page.inputs, page.outputs, api_visibility="private"
        )

    def prepare_model(
        self,
        name: str,
        explorer,
        language: str,
        progress=gr.Progress(track_tqdm=True),  # noqa: B008
    ) -> dict:
        """Load (and for a Hub model, download, with progress) before anything is computed with it. A model that
        cannot be loaded is said so beside the picker, and the picker goes back to the model in use. In the page's
        `language`; the user's explorer stays free meanwhile (a download can take minutes)."""
        name = (name or "").strip()
        with speaking(language):
            progress(0, desc=_("Loading {model}").format(model=name))
            registry = self.page.registry_of(explorer)
            try:
                registry.get(name)
            except ExplorerError as error:
                in_use = explorer.state.model if isinstance(explorer, Explorer) else self.model.value
                failed = _("**{model}** could not be loaded: {error}").format(
                    model=escaped(name[:100]), error=escaped(error)
                )
                return {self.model_message: failed, self.model: gr.update(value=in_use, choices=self.choices(registry))}
            choices = self.choices(registry)  # a Hub model now downloaded: no mark
            return {self.model_message: "", self.model: gr.update(choices=choices)}


def named_piece(piece: str) -> str:
    """A piece of the sentence, named so that it shows: in quotes, or a space said in words (sentencepiece's “▁”,
    which has nothing left to quote once its mark is taken off)."""
    text = piece.lstrip("▁")
    return f"“{text}”" if text else _("a space (▁)")


def unknown_note(explorer: Explorer) -> str:
    """What the model cannot read in the sentence (pieces it reads as `<unk>`, which never come out again)."""
    unknown = explorer.unknown_pieces()
    if not unknown:
        return ""
    shown = ", ".join(map(named_piece, unknown[:8])) + (" …" if len(unknown) > 8 else "")
    said = ngettext(
        "{model} does not know {pieces}: it reads it as <unk>, so the translation cannot contain it. Try a sentence "
        "in the model's own language, or one of its examples.",
        "{model} does not know {pieces}: it reads each as <unk>, so the translation cannot contain them. Try a "
        "sentence in the model's own language, or one of its examples.",
        len(unknown),
    )
    return said.format(model=explorer.state.model, pieces=shown)
