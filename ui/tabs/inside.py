"""The Inside a step tab: the whole computation of the token being predicted now, stage by stage, on the
paper's architecture diagram (explorer.inside; transformer.worked computes the numbers)."""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import Explorer, inside
from explorer.i18n import N_

from ..browser_internals import with_internals
from ..i18n import T, with_browser_words
from ..panel import Frame, PageAccess, Panel, Updates
from ..plot import Plot
from ..runtime import QUICK
from ..settings import DEFAULTS

# After a button far down the page opened a view (a walkthrough section's button its stage in Inside a step; Inside a
# step's the Why? tab): the page scrolls back up to the tabs. The tab's content is laid out a frame or two after the
# answer (the page is short until then, and could not scroll), so it scrolls then, and once more a little later.
SHOW_STAGE_JS = """() => {
    const show = () => document.querySelector("#views").scrollIntoView({block: "start"});
    requestAnimationFrame(() => requestAnimationFrame(show));
    setTimeout(show, 250);
}"""

WHY = N_("What made this token? Its contributions, the heads it needs, what each encoder layer knows: Why? →")
HINT = N_(
    "Every number the model computes for the next token, with this sentence's values: click a block of the "
    "architecture (the paper's Figure 1) or choose it below the diagram, then a layer and a head. Hover a strip or "
    "a matrix for its numbers."
)


# The number under the pointer, for the strips and matrices of `explorer.figures.tensor_panels_html` (each image
# carries its values and row labels), in the page's language (`<html lang>`, `ui.i18n.SET_LOCALE_JS`); the bars carry
# theirs in a tooltip of their own. Its one word, DIMENSION, in the page's language (`ui.i18n.with_browser_words`).
DIMENSION = N_("dimension {column}")
HOVER_JS = """
const parsed = new WeakMap();
const words = () => __WORDS__;  // as the pointer moves: the page's language may have changed since
const tip = () => element.querySelector(".tensor-tip") || element.appendChild(Object.assign(
    document.createElement("div"), {className: "tensor-tip"}));
element.addEventListener("mousemove", (event) => {
    const image = event.target.closest("img[data-values]");
    if (!image) { tip().style.display = "none"; return; }
    if (!parsed.has(image)) parsed.set(image, [JSON.parse(image.dataset.values), JSON.parse(image.dataset.labels)]);
    const [values, labels] = parsed.get(image), box = image.getBoundingClientRect();
    const at = (offset, size, n) => Math.min(n - 1, Math.floor(offset / size * n));
    const row = at(event.clientY - box.top, box.height, values.length);
    const column = at(event.clientX - box.left, box.width, values[0].length);
    const name = labels[row] ? `${row} · ${labels[row]}, ` : "";
    const shown = tip();
    shown.textContent = `${name}${words().dimension.replace("{column}", column)}: ${values[row][column]}`;
    Object.assign(shown.style, {display: "block", left: `${event.clientX + 14}px`, top: `${event.clientY + 14}px`});
});
element.addEventListener("mouseleave", () => { tip().style.display = "none"; });
"""
HOVER_JS = with_browser_words(HOVER_JS, {"dimension": DIMENSION})

# A click on a block of the diagram chooses its stage, as a click in the list of stages does: the list's own input
# event runs the page's handler. The diagram's rectangles carry their stage's key (`name`, explorer.figures.
# architecture_diagram); the click's place in the plot, in the axes' units, finds the one under it. Over a block the
# pointer is a hand, and the block's name (the list's label) shows as a tooltip. The listeners are the document's,
# added once: the diagram's plot is drawn again, or anew, as the page goes on.
DIAGRAM_JS = with_internals("""
if (!window.insideDiagramListens) {
    window.insideDiagramListens = true;
    const blockAt = (event) => {
        const plot = event.target.closest && event.target.closest("#inside-diagram .js-plotly-plot");
        const layout = plot && plot.layout, area = plot && __PLOT_AREA__(plot);
        if (!area || !layout.xaxis || !layout.yaxis || event.target.closest(".modebar")) return null;
        const box = area.getBoundingClientRect();
        const [x0, x1] = layout.xaxis.range, [y0, y1] = layout.yaxis.range;
        const x = x0 + (event.clientX - box.left) / box.width * (x1 - x0);
        const y = y1 - (event.clientY - box.top) / box.height * (y1 - y0);
        const block = (layout.shapes || []).find((s) => s.name && s.x0 <= x && x <= s.x1 && s.y0 <= y && y <= s.y1);
        const choice = block && document.querySelector(`#inside-stage input[value="${CSS.escape(block.name)}"]`);
        return choice ? {plot, choice} : null;
    };
    document.addEventListener("click", (event) => {
        const block = blockAt(event);
        if (block && !block.choice.checked) block.choice.click();
    });
    document.addEventListener("mousemove", (event) => {
        const plot = event.target.closest && event.target.closest("#inside-diagram .js-plotly-plot");
        if (!plot) return;
        const block = blockAt(event);
        plot.classList.toggle("on-block", Boolean(block));
        plot.title = block ? block.choice.closest("label").innerText.trim() : "";
    });
}
""")


class InsideTab(Panel):
    tab = "inside"

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.tab(T("Inside a step"), self.tab):
            gr.Markdown(T(HINT), elem_classes="caption", elem_id="inside-hint")
            with gr.Row(elem_id="inside-row"):  # side by side in the presentation layout too (assets/style.css)
                with gr.Column(scale=2, min_width=320, elem_id="inside-map"):
                    self.diagram = Plot(show_label=False, elem_id="inside-diagram")
                    stage = gr.Radio(
                        [(T(label), key) for label, key in inside.stage_choices()],
                        value=DEFAULTS["stage"],
                        label=T("Stage"),
                        elem_id="inside-stage",
                    )
                    self.stage = page.setting("stage", stage)
                with gr.Column(scale=3, elem_id="inside-shown"):
                    with gr.Row(elem_id="inside-controls"):
                        layer = gr.Slider(
                            0, 5, value=DEFAULTS["stage_layer"], step=1, label=T("Layer"), elem_id="inside-layer"
                        )
                        head = gr.Slider(
                            0, 7, value=DEFAULTS["stage_head"], step=1, label=T("Head"), elem_id="inside-head"
                        )
                        position = gr.Slider(
                            0,
                            63,
                            value=DEFAULTS["stage_position"],
                            step=1,
                            label=T("Source position"),
                            info=T("the encoder's stages, the stacks"),
                            elem_id="inside-position",
                        )
                    self.layer, self.head = page.setting("stage_layer", layer), page.setting("stage_head", head)
                    self.position = page.setting("stage_position", position)
                    self.text = gr.Markdown(elem_id="inside-text")
                    self.plot = gr.HTML(elem_id="inside-plot", js_on_load=HOVER_JS + DIAGRAM_JS)
                    self.why = gr.Button(T(WHY), size="sm", elem_id="inside-why", elem_classes="walkthrough-link")
        self.outputs = [self.diagram, self.text, self.plot]
        self.controls = [self.layer, self.head, self.position]

    def refresh(self, frame: Frame) -> Updates:
        figure, text = inside.stage_view(frame.explorer, frame.worked)
        updates: dict[Component, Any] = {self.plot: figure, self.text: text}
        if not frame.light:  # the stage, the model or the sentence changed, or the tab opened
            updates[self.diagram] = inside.diagram(frame.explorer, frame.state.stage)
        return updates

    def sync(self, frame: Frame) -> Updates:
        """The ranges of the layer, head and position, for the model and the sentence."""
        config, state = frame.explorer.config, frame.state
        n_layers = max(config.n_encoder_layers, config.n_decoder_layers)
        n_source = len(frame.snapshot.source_tokens)
        layer, head = inside.layer_and_head(frame.explorer)
        return {
            self.layer: gr.update(maximum=max(n_layers - 1, 0), value=layer),
            self.head: gr.update(maximum=config.n_heads - 1, value=head),
            self.position: gr.update(maximum=max(n_source - 1, 1), value=min(state.stage_position, n_source - 1)),
        }

    def cleared(self, message: str) -> Updates:
        return {self.plot: "", self.text: ""}

    def wire(self) -> None:
        page = self.page
        page.on_input(self.stage, self.layer, self.head, self.position)
        opened = page.action(lambda explorer: explorer.update(tab="why"))

        def open_why(explorer, *values) -> Updates:
            updates = opened(explorer, *values)
            return updates | page.opening("why") if isinstance(updates.get(page.explorer), Explorer) else updates

        self.why.click(open_why, page.inputs, [page.tab_opener, *page.outputs], api_visibility="private", **QUICK).then(
            None, None, None, js=SHOW_STAGE_JS, api_visibility="private"
        )
