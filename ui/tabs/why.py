"""The Why? tab: what made the token being chosen, beyond where the heads look (explorer.why;
transformer.explain computes the numbers). Three sections: each piece's contribution beside the attention, the
census of the heads (asked for with a button: it reruns the step once per head), and what each encoder layer
already knows."""

from __future__ import annotations

import threading

import gradio as gr

from explorer import Explorer, ExplorerError, why
from explorer.i18n import N_, _

from ..browser_internals import with_internals
from ..i18n import T
from ..panel import Frame, PageAccess, Panel, Updates, escaped
from ..plot import Plot
from ..runtime import APART, LONG, QUICK
from ..settings import control_values

KEY = "why"
HINT = N_(
    "Attention shows where each head reads. These views ask what made the model choose its next token: how much each "
    "piece contributed, which heads it cannot do without, and from which encoder layer on the answer is there."
)
NO_CONTRAST = N_("(no contrast: the token alone)")
FOLLOWING = "census"  # the name of the census in `Explorer.following`: once run, it follows every step
# A click on a cell of the census's grids: the hidden `census-clicks` element's `select` event, with [the family's
# grid, the layer, the head]. Plotly's own click event is listened to from the first press on the plot (its div is
# drawn after this script runs; Plotly forgets its listeners only when the figure is purged, and the mark with them:
# `ui.browser_internals`).
CENSUS_CLICK_JS = with_internals("""
document.addEventListener("pointerdown", (event) => {
    const plot = event.target.closest && event.target.closest("#census-plot .js-plotly-plot");
    if (!plot || !plot.on || __PLOT_LISTENERS__(plot)?.censusListens) return;
    plot.on("plotly_click", (clicked) => {
        const point = clicked.points && clicked.points[0];
        if (!point || !Array.isArray(point.pointIndex)) return;
        trigger("select", {index: [point.curveNumber, ...point.pointIndex], value: ""});
    });
    __PLOT_LISTENERS__(plot).censusListens = true;
}, true);
""")


def why_tab(page: PageAccess) -> list[Panel]:
    """The tab and its sections' panels."""
    with page.tab(T("Why?"), KEY):
        gr.Markdown(T(HINT), elem_classes="caption", elem_id="why-hint")
        return [ContributionsSection(page), CensusSection(page), LensSection(page)]


class ContributionsSection(Panel):
    tab = KEY

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.section(T("Contributions"), "contributions"):
            self.versus = gr.Dropdown(
                [(T(NO_CONTRAST), "")], value="", label=T("Why this token and not…"), elem_id="why-versus"
            )
            self.plot = Plot(show_label=False, elem_id="contributions-plot")
            self.text = gr.Markdown(elem_id="contributions-text")
        self.outputs = [self.versus, self.plot, self.text]

    def refresh(self, frame: Frame) -> Updates:
        explorer = frame.explorer
        figure, text = why.contributions_view(explorer, None)
        choices = [(_(NO_CONTRAST), ""), *((label, str(token)) for label, token in why.versus_choices(explorer))]
        return {self.versus: gr.update(choices=choices, value=""), self.plot: figure, self.text: text}

    def cleared(self, message: str) -> Updates:
        return {self.plot: None, self.text: ""}

    def wire(self) -> None:
        page = self.page
        contrast = page.view_handler(self.contrasted, lambda error: {self.text: escaped(error)})
        self.versus.input(
            contrast, [*page.inputs, self.versus], [self.plot, self.text], api_visibility="private", **QUICK
        )

    def contrasted(self, explorer: Explorer, versus: str) -> Updates:
        figure, text = why.contributions_view(explorer, int(versus) if str(versus).isdigit() else None)
        return {self.plot: figure, self.text: text}


class CensusSection(Panel):
    tab = KEY

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.section(T("Census of the heads"), "census"):
            self.hint = gr.Markdown(T(why.CENSUS_HINT), elem_id="census-hint")
            self.button = gr.Button(T("Silence each head in turn"), elem_id="census-btn")
            self.plot = Plot(show_label=False, elem_id="census-plot", visible=False)
            self.clicks = gr.HTML("", elem_id="census-clicks", js_on_load=CENSUS_CLICK_JS, padding=False)
            self.text = gr.Markdown(elem_id="census-text")
            with gr.Row():
                self.head = gr.Dropdown([], label=T("A head, by its effect"), elem_id="census-head", scale=3)
                self.open = gr.Button(T("Open its heatmap, silenced"), elem_id="census-open", scale=1)
        self.outputs = [self.plot, self.text, self.head]

    def refresh(self, frame: Frame) -> Updates:
        if FOLLOWING not in frame.explorer.following:
            return {}
        return self.census(frame.explorer)

    def census(self, explorer: Explorer, progress=None) -> Updates:
        figure, text, choices = why.census_view(explorer, why.census_of(explorer, progress))
        return {
            self.plot: gr.update(value=figure, visible=True),
            self.text: text,
            self.head: gr.update(choices=choices, value=choices[0][1] if choices else None),
        }

    def cleared(self, message: str) -> Updates:
        return {self.plot: gr.update(value=None, visible=False), self.text: ""}

    def wire(self) -> None:
        page = self.page
        self.button.click(
            self.asked_handler(), page.inputs, [self.plot, self.text, self.head], api_visibility="private", **LONG
        )
        opened = page.action(self.opened_head, extra=1)
        outputs = [page.tab_opener, *(page.control(n) for n in ("family", "layer", "head", "silenced")), *page.outputs]
        open_head = {
            "fn": lambda explorer, *values: self.opening(opened(explorer, *values)),
            "inputs": [page.explorer, self.head, *page.inputs[1:]],
            "outputs": list(dict.fromkeys(outputs)),
            "api_visibility": "private",
        }
        self.open.click(**open_head, **QUICK)
        # a click on a cell of the grid: that head, chosen in the list, then opened as the button opens it
        self.clicks.select(self.clicked, None, [self.head], api_visibility="private", **QUICK).then(**open_head)

    def asked_handler(self):
        """The button's handler: the census, with a progress bar while it runs (opus-mt has 144 heads: 4 s of CPU),
        followed from now on. (Gradio passes a `gr.Progress` to a parameter whose default is one.)"""
        progress_of = threading.local()  # each user's event runs in a thread of its own

        def asked(explorer: Explorer) -> Updates:
            return self.asked(explorer, getattr(progress_of, "progress", None))

        handler = self.page.view_handler(asked, lambda error: {self.text: escaped(error)})

        def with_progress(explorer, progress=gr.Progress(), *values) -> Updates:  # noqa: B008 (gradio's own way)
            progress_of.progress = None if APART else progress  # (ZeroGPU: the census runs in another process)
            try:
                return handler(explorer, *values)
            finally:
                progress_of.progress = None

        return with_progress

    def asked(self, explorer: Explorer, progress=None) -> Updates:
        """The census, followed from now on; `progress(fraction, desc=…)` told as each head is silenced."""
        explorer.following.add(FOLLOWING)

        def told(done: int, total: int) -> None:
            progress(done / total, desc=_("head {done} of {total}").format(done=done, total=total))

        return self.census(explorer, told if progress is not None else None)

    @staticmethod
    def clicked(event: gr.SelectData) -> str:
        """The head of the grid's cell clicked, as the list of heads names it ("family:layer:head")."""
        family, layer, head = event.index
        return f"{why.FAMILIES[family]}:{layer}:{head}"

    @staticmethod
    def opened_head(explorer: Explorer, choice: str | None) -> None:
        """The head chosen ("family:layer:head"), silenced, its heatmap open, and the comparison with every head
        followed (Masks and heads)."""
        try:
            family, layer, head = str(choice).split(":")
            ref = (family, int(layer), int(head))
        except ValueError:
            raise ExplorerError(_("choose a head first")) from None
        state = explorer.state
        explorer.update(
            tab="attention", family=family, layer=ref[1], head=ref[2], grid=False, silenced=state.silenced | {ref}
        )
        explorer.following.add("silenced")

    def opening(self, updates: Updates) -> Updates:
        page = self.page
        explorer = updates.get(page.explorer)
        if isinstance(explorer, Explorer) and explorer.state.tab == "attention":
            updates |= page.opening("attention")
            values = control_values(explorer.state)
            updates |= {page.control(name): values[name] for name in ("family", "layer", "head", "silenced")}
        return updates


class LensSection(Panel):
    tab = KEY

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.section(T("What each encoder layer already knows"), "lens"):
            self.text = gr.Markdown(elem_id="lens-text")
        self.outputs = [self.text]

    def refresh(self, frame: Frame) -> Updates:
        return {self.text: why.lens_view(frame.explorer, frame.worked)}

    def cleared(self, message: str) -> Updates:
        return {self.text: ""}
