"""Positions, a section of the Experiments tab: the model's positional encoding (table, curves, similarity), and
what happens to the translation when the words are shuffled or the positions switched off."""

from __future__ import annotations

import json
import re

import gradio as gr

from explorer import render
from explorer.i18n import _, ngettext

from .. import scripts
from ..i18n import T
from ..panel import PageAccess, Panel, Updates, escaped
from ..plot import Plot
from ..runtime import LONG
from ..settings import DEFAULTS

# Another model chosen (or opened by a link): the figures drawn again only while their tab is open, else as it opens
# (an event for nothing, at every opening of a link to another model than the first).
EXPERIMENTS_OPEN = """document.querySelector('#views [role=tab][data-tab-id="experiments"]')
    ?.getAttribute('aria-selected') === 'true'"""
REDRAW_IF_OPEN_JS = scripts.click_when(EXPERIMENTS_OPEN, "positions-redraw")


class PositionsTab(Panel):
    tab = "experiments"  # a section of the Experiments tab (`ui.tabs.experiments`)

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with page.section(T("Positions"), "positions"):
            with gr.Row():
                toggle = gr.Checkbox(
                    DEFAULTS["positions"], label=T("Add positional encodings"), elem_id="positions-toggle"
                )
                self.positions = page.setting("positions", toggle)
                self.n_positions = gr.Slider(4, 128, value=50, step=1, label=T("Positions shown"))
                with gr.Column():
                    self.dims = gr.Textbox(
                        "",
                        label=T("Dimensions for the curves"),
                        placeholder=T("e.g. 0, 1, 10, 11"),
                        elem_id="dims",
                        info=T("empty: four, from the fastest wave to the slowest"),
                    )
                    self.dims_note = gr.Markdown(elem_id="dims-note", elem_classes="note")  # what was left out
            table_caption, curves_caption, similarity_caption = render.POSITION_CAPTIONS
            self.table = Plot(show_label=False, elem_id="pe-plot")
            gr.Markdown(T(table_caption), elem_classes="caption")
            with gr.Row():
                with gr.Column():
                    self.curves = Plot(show_label=False, elem_id="pe-curves")
                    gr.Markdown(T(curves_caption), elem_classes="caption")
                with gr.Column():
                    self.similarity = Plot(show_label=False, elem_id="pe-similarity")
                    gr.Markdown(T(similarity_caption), elem_classes="caption")
            self.shuffle_btn = gr.Button(T("Translate with the source words shuffled"), elem_id="shuffle-btn")
            self.shuffle_text = gr.Markdown(elem_id="shuffle-text")
            self.drawn_for = gr.State("")  # what the page's figures were drawn for (`figures`)
            self.redraw = gr.Button(visible="hidden", elem_id="positions-redraw")  # another model, the tab open

    def wire(self) -> None:
        page = self.page
        page.on_input(self.positions)
        figures = [self.table, self.curves, self.similarity, self.dims_note, self.drawn_for]
        draw = page.view_handler(self.figures, lambda error: dict.fromkeys(figures, ""), hold=False)
        inputs = [*page.inputs, self.n_positions, self.dims, self.drawn_for]
        self.n_positions.change(draw, inputs, figures, api_visibility="private")
        shown = page.view_handler(self.figures_if_shown, lambda error: dict.fromkeys(figures, ""), hold=False)
        # the last model chosen wins, as the model's change event did (a click's default drops one sent meanwhile)
        self.redraw.click(shown, inputs, figures, api_visibility="private", trigger_mode="always_last")
        page.control("model").change(None, None, None, js=REDRAW_IF_OPEN_JS, api_visibility="private")
        for typed in (self.dims.submit, self.dims.blur):  # when the numbers are typed, not at every keystroke
            typed(draw, inputs, figures, api_visibility="private")
        # drawn as the tab opens, the first time (and when something they show changed meanwhile)
        page.tab_by_key[self.tab].select(draw, inputs, figures, api_visibility="private", show_progress="hidden")
        shuffled = page.view_handler(
            lambda e: {self.shuffle_text: render.shuffled_report(e)},
            lambda error: {self.shuffle_text: escaped(error)},
            hold=False,
        )
        self.shuffle_btn.click(shuffled, page.inputs, self.shuffle_text, api_visibility="private", **LONG)

    def figures(self, explorer, n_positions: float, typed: str, drawn_for: str = "") -> Updates:
        """The figures for the model, the positions shown and the dimensions typed, in the user's language and
        layout; nothing new when the page shows those already (the tab opened again: 130 KB not sent again)."""
        state = explorer.state
        key = json.dumps([state.model, state.language, state.presentation, int(n_positions), typed])
        if key == drawn_for:
            return {self.drawn_for: key}  # the rest stays as it is
        dims, note = chosen_dimensions(typed, explorer.config.d_model)
        table, curves, similarity = render.positional_figures(explorer, int(n_positions), dims)
        drawn = {self.table: table, self.curves: curves, self.similarity: similarity, self.dims_note: escaped(note)}
        return drawn | {self.drawn_for: key}

    def figures_if_shown(self, explorer, n_positions: float, typed: str, drawn_for: str = "") -> Updates:
        """`figures` for another model, while the tab is open; nothing while another is (a model chosen there, or
        by a link as the page opens): the tab draws them as it opens."""
        if explorer.state.tab != self.tab:
            return {self.drawn_for: drawn_for}
        return self.figures(explorer, n_positions, typed, drawn_for)


# A whole number as typed: ASCII digits only ("²" and "٣" are digits to `str.isdigit`, not to `int`), and short
# (a 5,000-digit number is past what `int` reads; no model has a millionth dimension).
WHOLE_NUMBER = re.compile(r"-?[0-9]{1,6}")


def chosen_dimensions(text: str, d_model: int) -> tuple[list[int], str]:
    """The dimensions typed for the curves ("0, 1, 10 11" -> [0, 1, 10, 11]), and a note on what was left out and
    why (not a whole number, or not a dimension of a `d_model`-wide encoding); none left: the default spread."""
    words = (text or "").replace(",", " ").split()
    numbers = [int(word) for word in words if WHOLE_NUMBER.fullmatch(word)]
    dims = [x for x in numbers if 0 <= x < d_model]
    problems = []
    if not_numbers := [word for word in words if not WHOLE_NUMBER.fullmatch(word)]:
        named = ", ".join(f"“{word[:20]}”" for word in not_numbers[:5])
        said = ngettext("{words} is not a whole number", "{words} are not whole numbers", len(not_numbers))
        problems.append(said.format(words=named))
    if out_of_range := [x for x in numbers if not 0 <= x < d_model]:
        named = ", ".join(map(str, out_of_range[:5]))
        said = ngettext(
            "{numbers} is not between 0 and {last}", "{numbers} are not between 0 and {last}", len(out_of_range)
        )
        problems.append(said.format(numbers=named, last=d_model - 1))
    if not problems:
        return dims, ""
    if len(problems) == 2:
        problems = [_("{first}; {second}").format(first=problems[0], second=problems[1])]
    shown = _("the default four") if not dims else ", ".join(map(str, dims))
    note = _("Left out: {problems} (this model has {dimensions} dimensions). Showing {shown}.")
    return dims, note.format(problems=problems[0], dimensions=d_model, shown=shown)
