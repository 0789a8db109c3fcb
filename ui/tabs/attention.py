"""The Attention tab: one attention family, layer and head (or the head average, or every head) as a heatmap, the
three families of a layer side by side, or cross-attention as alignment lines; and every layer × head of the
family as thumbnails, which open large when clicked."""

from __future__ import annotations

import gradio as gr

from explorer import Explorer, render
from explorer.i18n import N_

from ..i18n import T
from ..panel import Frame, PageAccess, Panel, Updates
from ..plot import Plot
from ..runtime import QUICK
from ..settings import DEFAULTS, head_choice, head_choices, head_options

VIEWS = [
    (N_("one family"), "heatmap"),
    (N_("three families side by side"), "families"),
    (N_("alignment lines"), "alignment"),
]

# A click on a thumbnail sends the gradio `select` event with [layer, head] as its index.
THUMBNAIL_CLICK_JS = """
element.addEventListener("click", (event) => {
    const thumb = event.target.closest("button[data-layer]");
    if (!thumb) return;
    trigger("select", {index: [Number(thumb.dataset.layer), Number(thumb.dataset.head)], value: thumb.title});
});
"""


class AttentionTab(Panel):
    tab = "attention"

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.tab(T("Attention"), self.tab):
            with gr.Row():
                families = [(T(name), key) for key, name in render.FAMILY_NAMES.items()]
                family = gr.Radio(
                    families, value=DEFAULTS["family"], label=T("Attention"), elem_id="attention-family", scale=2
                )
                layer = gr.Slider(0, 5, value=DEFAULTS["layer"], step=1, label=T("Layer"), elem_id="attention-layer")
                # the heads' labels in the user's language once the page is open (`sync`)
                head = gr.Dropdown(head_choices(4), value=DEFAULTS["head"], label=T("Head"), elem_id="head")
                views = [(T(label), value) for label, value in VIEWS]
                view = gr.Radio(views, value=DEFAULTS["view"], label=T("Show"), elem_id="attention-view", scale=2)
            self.family, self.layer = page.setting("family", family), page.setting("layer", layer)
            self.head, self.view = page.setting("head", head), page.setting("view", view)
            self.plot = Plot(show_label=False, elem_id="attention-plot")
            self.caption = gr.Markdown(elem_id="attention-caption", elem_classes="caption")
            gr.Markdown(T(render.THUMBNAILS_CAPTION), elem_classes="caption", elem_id="thumbnails-caption")
            self.thumbnails = gr.HTML(elem_id="attention-thumbnails", js_on_load=THUMBNAIL_CLICK_JS)
        self.outputs = [self.plot, self.caption, self.thumbnails]
        self.controls = [self.layer, self.head]

    def refresh(self, frame: Frame) -> Updates:
        state = frame.state
        return {
            self.plot: render.attention_figure(frame.snapshot, state),
            # what the figure shows, then its numbers in words and as a table (for a reader who cannot see it)
            self.caption: render.attention_caption(frame.snapshot, state)
            + "\n\n"
            + render.attention_in_words(frame.snapshot, state),
            self.thumbnails: render.attention_thumbnails(frame.snapshot, state),
        }

    def sync(self, frame: Frame) -> Updates:
        """The model's layers and heads, for a new model or family."""
        state, config = frame.state, frame.explorer.config
        return {
            self.layer: gr.update(maximum=max(config.n_layers(state.family) - 1, 0), value=state.layer),
            self.head: gr.update(choices=head_options(config.n_heads), value=head_choice(state)),
        }

    def cleared(self, message: str) -> Updates:
        return {self.plot: None, self.thumbnails: ""}

    def wire(self) -> None:
        page = self.page
        page.on_input(self.family, self.layer, self.head)
        self.view.input(
            page.action(self.opened_view),
            page.inputs,
            page.outputs,
            api_visibility="private",
            trigger_mode="always_last",
            **QUICK,
        )
        self.thumbnails.select(
            self.open_large, None, [self.layer, self.head, self.view], api_visibility="private", **QUICK
        ).then(page.apply, page.inputs, page.outputs, api_visibility="private")

    @staticmethod
    def opened_view(explorer: Explorer) -> None:
        """The user chose a view: the alignment lines open on the layer whose cross-attention is the most peaked for
        the sentence (`render.most_peaked_layer`; the caption says so), and the layer control follows. A layer the
        user picks after that stays; a shared link opens on the layer it names (it chooses no view)."""
        state = explorer.state
        if state.view == "alignment":
            peaked = render.most_peaked_layer(explorer.snapshot(), state.head)
            deepest = explorer.config.n_layers(state.family) - 1  # the layer control's range
            explorer.update(layer=min(peaked, deepest))

    def open_large(self, event: gr.SelectData) -> Updates:
        """A thumbnail was clicked: show its layer and head, large, as one heatmap."""
        layer, head = (int(i) for i in event.index)
        return {self.layer: layer, self.head: f"head {head}", self.view: "heatmap"}
