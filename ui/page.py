"""The page: builds every panel in order, keeps the per-user explorer, and runs the actions that refresh the views.

The panels (`ui.panel`) are the header, the sentence, the decoding controls and the tabs (`ui.tabs`); each uses
the page through `PageAccess`, which `Page` implements. Adding a view is a new module of `ui/tabs/` and one line
in `ui.tabs.TABS`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr
from gradio.components import Component
from gradio.i18n import I18nData

from explorer import Explorer, ExplorerError, ExplorerState, ModelRegistry, cache, figures
from explorer.classroom import Classroom
from explorer.config import Config
from explorer.i18n import DEFAULT as DEFAULT_LANGUAGE
from explorer.i18n import N_, _, speaking
from explorer.session import with_settings
from explorer.training import TrainingPool

from . import admission, api, gradio_patch, runtime
from .decoding import DecodingPanel
from .gradio_patch import Blocks
from .i18n import with_browser_words
from .panel import Frame, Panel, Updates, escaped
from .presentation import Header
from .runtime import QUICK, one_at_a_time, uses_gpu
from .sentence import SentencePanel
from .settings import NAMES, Settings
from .tabs import TABS

EMPTY_SENTENCE = N_("The sentence box is empty: type a sentence, or click one of the examples.")

# A move's button (Step, Back) clicks the hidden button of the same move for the open tab (`Page.wire_move`), whose
# event lists only what that tab and the page around it show: gradio's page does work for every output an event
# lists, shown or not (48 for a Step that listed every tab's).
ROUTE_JS = """() => {
    const open = document.querySelector("#views [role=tab][aria-selected=true]");
    const key = (open && open.dataset.tabId) || "attention";
    (document.getElementById(`__MOVE__-on-${key}`) || document.getElementById("__MOVE__-on-attention")).click();
}"""


# Gradio's page does work, at every change of an event's status, for each component that was ever an event's output,
# and for everything inside it: a step's 3 or 4 changes of status walked the 165 components of the views whenever the
# tab bar (`gr.Tabs`) or a tab had been an output, which opening a link or a language did at every page load
# (docs/benchmark-notes.md). So no event lists them: a handler opens a tab through `Page.tab_opener`, whose value
# names the tab (and a count, so that asking twice opens it twice), and this script clicks that tab's button, as a
# user would (which draws the tab: `Page.opened`); and `RETITLE_JS` writes the tab bar's titles in a new language.
OPEN_TAB_JS = """
watch("value", () => {
    const key = (props.value || "").split(" ")[0];
    const tab = document.querySelector(`#views [role=tab][data-tab-id="${key}"]`);
    if (tab && tab.getAttribute("aria-selected") !== "true") tab.click();
});
"""
RETITLE_JS = """() => {
    const titles = __WORDS__;
    for (const tab of document.querySelectorAll("#views [role=tab][data-tab-id]")) {
        const title = titles[tab.dataset.tabId];
        const text = [...tab.childNodes].find((node) => node.nodeType === Node.TEXT_NODE && node.nodeValue.trim());
        if (title && text && text.nodeValue.trim() !== title) text.nodeValue = title;
    }
}"""


def enlarged_for_presentation(updates: Updates, state: ExplorerState) -> Updates:
    """`updates`, with the figures among them enlarged in the presentation layout (as new figures: a figure may be
    shared by several users, `explorer.cache`)."""
    if not state.presentation:
        return updates
    return {
        key: figures.enlarged(value) if isinstance(value, figures.Figure) else value for key, value in updates.items()
    }


class Page:
    """The components of the page by name, and the handlers every panel wires its events to."""

    def __init__(self, registry: ModelRegistry, demo: gr.Blocks, pool: TrainingPool, classroom: Classroom):
        self.registry = registry
        self.classroom = classroom  # the classes on this server (`ui.class_panel`)
        self.demo = demo
        self.pool = pool  # the Train tab's runs, trained by worker processes shared by every user
        self.explorer = gr.State(None)  # the user's `Explorer`
        self.controls: dict[str, Component] = {}  # the settings controls, by setting name (`ui.settings.NAMES`)
        self.panels: list[Panel] = []
        self.status: gr.Markdown  # the message line (`message_line`)
        self._defaults: dict[str, tuple[str, str]] = {}  # by language: `default_for`
        self._openings = itertools.count(1)  # a tab asked for twice is opened twice (`opening`)
        self.default_model, _note = self.default_for(DEFAULT_LANGUAGE)  # opus-mt-en-de where it is cached, else en-de
        self.tabs: gr.Tabs  # the views, one tab each
        self.tab_opener: gr.HTML  # opens the tab its value names (`opening`)
        self.tab_by_key: dict[str, gr.Tab] = {}
        self.tab_titles: dict[str, str | I18nData] = {}
        self.section_tab: dict[str, str] = {}  # the tab of each section (`section`), by the section's key
        self._building_tab = ""  # the tab whose components are being made

    def tab(self, label: str | I18nData, key: str) -> gr.Tab:
        """A tab of the views (use it as `with page.tab(T("Attention"), "attention"):`), known by `key` to the
        state (`ExplorerState.tab`)."""
        opened = self.tab_by_key[key] = gr.Tab(label, id=key)
        self.tab_titles[key] = label
        self._building_tab = key
        return opened

    def section(self, label: str | I18nData, key: str) -> gr.Accordion:
        """A section of the tab being built (use it as `with page.section(T("Positions"), "positions"):`): a view
        that shares its tab with others, open, under its own title. A link that names `key` (one made when the
        section was a tab of its own) opens its tab (`tab_holding`)."""
        self.section_tab[key] = self._building_tab
        return gr.Accordion(label, open=True, elem_id=f"{key}-section", elem_classes="view-section")

    def tab_holding(self, key: str) -> str:
        """The tab that shows the view `key`: the tab itself, the tab of a section, else the Attention tab (a link
        may name a view that no longer exists)."""
        if key in self.tab_by_key:
            return key
        return self.section_tab.get(key, "attention")

    def default_for(self, language: str) -> tuple[str, str]:
        """The model a first view in `language` opens on, and a note in that language when it is not the preferred
        one (`ModelRegistry.default`); worked out once a language, not at every visit (a cached copy that fails to
        load would be read again each time)."""
        if language not in self._defaults:
            with speaking(language):
                self._defaults[language] = self.registry.default(language)
        return self._defaults[language]

    def in_the_new_language(self, event: Any) -> Any:
        """After `event`, which sets the browser's language (`ui.i18n.SET_LOCALE_JS`), the tab bar's titles in it
        (`RETITLE_JS`): gradio translates a tab's title when the tab bar takes it in, and after a change of language
        it does so again only for the open tab."""
        titles = {key: str(getattr(title, "key", title)) for key, title in self.tab_titles.items()}
        retitle = with_browser_words(RETITLE_JS, titles)
        return event.then(None, None, None, js=retitle, api_visibility="private")

    def opening(self, key: str) -> Updates:
        """The update that opens the tab that shows `key` (`tab_holding`), as a click on it would."""
        return {self.tab_opener: f"{self.tab_holding(key)} {next(self._openings)}"}

    owns_pool = False

    def close(self) -> None:
        """Stop the Train tab's workers if this page made them (`build_page` without a pool); a pool handed to the
        page is closed by whoever made it (`app.py`)."""
        if self.owns_pool:
            self.pool.close()

    def setting(self, name: str, component: Component) -> Component:
        """Register `component` as the control of the setting `name` (a field of `ExplorerState`, `NAMES`)."""
        if name not in NAMES:
            raise KeyError(f"{name!r} is not a setting of ExplorerState")
        self.controls[name] = component
        return component

    def control(self, name: str) -> Component:
        """The control of the setting `name`."""
        return self.controls[name]

    def message_line(self) -> gr.Markdown:
        """The page's message line, made where the panel that calls this lays it out."""
        self.status = gr.Markdown(elem_id="status")
        return self.status

    def on_load(self, handler: Callable, inputs: Sequence[Component], outputs: Sequence[Component]) -> Any:
        """Run `handler` when the page is opened (its event, for `.then`)."""
        return self.demo.load(handler, inputs, outputs, api_visibility="private")

    @property
    def inputs(self) -> list[Component]:
        """The inputs of every action: the user's explorer, then the settings in the order of `NAMES`."""
        return [self.explorer, *(self.controls[name] for name in NAMES)]

    @property
    def outputs(self) -> list[Component]:
        """What a change of the settings may redraw: `moving_outputs` (in the same places), then every panel's
        controls."""
        controls = [component for panel in self.panels for component in panel.controls]
        return list(dict.fromkeys([*self.moving_outputs, *controls]))

    @property
    def moving_outputs(self) -> list[Component]:
        """What a move through the decoding (Step, Back, Run, forcing) may redraw: the user's explorer and every
        panel's outputs, not the controls (a move changes no setting). Fewer outputs, less work for every message,
        in the server and in the browser."""
        return [self.explorer, *(component for panel in self.panels for component in panel.outputs)]

    def moving_outputs_on(self, tab: str) -> list[Component]:
        """What a move may redraw while the tab `tab` is open: `moving_outputs` less the other tabs' panels."""
        shown = (panel for panel in self.panels if self.shown(panel, tab))
        return [self.explorer, *(component for panel in shown for component in panel.outputs)]

    def wire_move(self, name: str, button: gr.Button, act: Callable[[Explorer], str | None]) -> None:
        """Wire the move `name` (Step, Back), `act` on the user's explorer. The page's `button` clicks the move's
        hidden button for the open tab (`ROUTE_JS`), which draws that tab and lists only its outputs; the API (and
        gradio_client) keeps the move `name`, which lists every tab's and draws the one the state has open."""
        for key in self.tab_by_key:
            routed = gr.Button(visible="hidden", elem_id=f"{name}-on-{key}")
            routed.click(
                self.action(act, moves=True, tab=key),
                self.inputs,
                self.moving_outputs_on(key),
                api_visibility="private",
                **QUICK,
            )
        api = gr.Button(visible="hidden", elem_id=f"{name}-api")
        api.click(
            self.action(act, moves=True),
            self.inputs,
            self.moving_outputs,
            api_name=name,
            api_visibility="undocumented",
            **QUICK,
        )
        button.click(None, None, None, js=ROUTE_JS.replace("__MOVE__", name), api_visibility="private")

    def explorer_with(self, explorer: Explorer | None, values: tuple) -> tuple[Explorer, str]:
        """The user's explorer with the settings whose values are `values` (in the order of `NAMES`), and a note
        when the sentence had to change (`explorer.session.with_settings`)."""
        return with_settings(self.registry_of(explorer), explorer, Settings.from_values(values).state_fields())

    def registry_of(self, explorer: Explorer | None) -> ModelRegistry:
        """The models the user can choose: with the models they trained (`PersonalRegistry`), once they have one."""
        return explorer.registry if isinstance(explorer, Explorer) else self.registry

    def refreshed(
        self,
        explorer: Explorer | None,
        message: str = "",
        light: bool = False,
        note: str = "",
        tab: str | None = None,
    ) -> Updates:
        """The outputs of every panel shown for the explorer's state (or for the tab `tab`, when the event that asks
        is that tab's own, `wire_move`), and unless `light` every panel's controls (or everything cleared, with
        `message`, when there is no explorer). `note`: why the sentence is not the one typed
        (`explorer.session.with_settings`)."""
        if explorer is None:
            updates: Updates = {self.explorer: None}
            for panel in self.panels:
                updates.update(panel.cleared(message))
            return updates
        frame = Frame(explorer, explorer.snapshot(), message, light, note)
        updates = {self.explorer: explorer}
        for panel in self.panels:
            if not light:
                updates.update(panel.sync(frame))
            if self.shown(panel, tab or explorer.state.tab):  # a hidden one is drawn when its tab opens (`opened`)
                updates.update(panel.refresh(frame))
        return enlarged_for_presentation(updates, explorer.state)

    @staticmethod
    def shown(panel: Panel, tab: str) -> bool:
        """Whether `panel` is drawn while the tab `tab` is open."""
        return panel.tab in (None, tab) or panel.refresh_hidden

    def opened(self, key: str) -> Callable[..., Updates]:
        """A handler for opening the tab `key`: the state (and so the link) remembers it, unless its panel is not
        `remembered`, and the tab's panels are drawn for the user's current step."""
        remembered = all(panel.remembered for panel in self.panels if panel.tab == key)
        drawn = self.drawn_on_opening(key)

        def handler(explorer) -> Updates:
            if not isinstance(explorer, Explorer):  # nothing to draw yet (an empty dict is no answer to gradio)
                return {self.explorer: gr.skip()}
            try:
                with one_at_a_time(explorer):
                    if remembered:
                        explorer.update(tab=key)
                    frame = Frame(explorer, explorer.snapshot(), "", light=False)
                    updates: Updates = {self.explorer: explorer}
                    for panel in drawn:
                        updates.update(panel.refresh(frame))
                    return enlarged_for_presentation(updates, explorer.state)
            except ExplorerError as error:
                return {self.explorer: explorer, self.status: escaped(str(error))}

        return uses_gpu(handler)

    def drawn_on_opening(self, key: str) -> list[Panel]:
        """The panels that opening the tab `key` draws: its own, and those drawn even while hidden."""
        return [panel for panel in self.panels if panel.tab == key or panel.refresh_hidden]

    def wire_tabs(self) -> None:
        """Opening a tab draws it (`opened`)."""
        for key, tab in self.tab_by_key.items():
            drawn = self.drawn_on_opening(key)
            outputs = [self.explorer, self.status, *(c for panel in drawn for c in panel.outputs)]
            tab.select(self.opened(key), self.explorer, outputs, api_visibility="private", **QUICK)

    def action(
        self,
        act: Callable[..., str | None],
        *,
        moves: bool = False,
        extra: int = 0,
        tab: str | None = None,
        unechoed: bool = False,
    ) -> Callable[..., Updates]:
        """A handler of (explorer, *extra values, *settings values): apply the settings, then `act(explorer, *extra
        values)` (which may return a message), then refresh. `moves`: it only moves through the decoding (Step,
        Back, forcing). `tab`: the event is that tab's own (`wire_move`): it draws that tab, and lists its
        outputs only. `unechoed`: the controls' values are the browser's own, as it sent them (`Page.unechoed`)."""
        outputs = self.moving_outputs_on(tab) if tab is not None else None  # what the move's event lists

        def handler(explorer, *inputs):
            given, values = inputs[:extra], inputs[extra:]
            settings = Settings.from_values(values)
            try:
                with one_at_a_time(explorer, settings["language"]):
                    before = explorer.state if isinstance(explorer, Explorer) else None
                    explorer, note = self.explorer_with(explorer, values)
                    light = moves and explorer.state == before and not note
                    updates = self.refreshed(explorer, act(explorer, *given) or "", light=light, note=note, tab=tab)
                    if note:  # the sentence changed: the text box shows the new one
                        updates[self.control("source")] = explorer.state.source
                    if unechoed:
                        updates = self.unechoed(updates, values)
            except ExplorerError as error:
                with one_at_a_time(explorer, settings["language"]):
                    message = str(error)
                    if not settings["source"].strip():  # an empty box: nothing of the old one stays
                        explorer, message = None, _(EMPTY_SENTENCE)
                    updates = self.refreshed(explorer if isinstance(explorer, Explorer) else None, message, tab=tab)
            return self.moved(updates, outputs) if moves else updates

        return uses_gpu(handler)

    def unechoed(self, updates: Updates, values: Sequence[Any]) -> Updates:
        """`updates` without the controls' values that the event itself sent (`values`, in the order of `NAMES`).
        An answer arrives a moment after its event was sent; meanwhile the user may have changed a control again
        (ticked a head while the mask's change was on its way). Sending back the value it had when the event left
        would undo that change, and the next event would then carry the undone value. A value the server changed
        (another model's heads, a layer it has not got) is sent, and so is everything else about a control (its
        choices, its range)."""
        kept = dict(updates)
        for name, sent in zip(NAMES, values, strict=True):
            component = self.control(name)
            update = kept.get(component)
            if isinstance(update, dict) and "value" in update and same_value(update["value"], sent):
                kept[component] = {key: value for key, value in update.items() if key != "value"}
            elif component in kept and not isinstance(update, dict) and same_value(update, sent):
                del kept[component]
        return kept

    def moved(self, updates: Updates, outputs: Sequence[Component] | None = None) -> Updates:
        """`updates` for an event of `moving_outputs` (or of `outputs`): a setting that reached the server with a
        move (changed a moment before the click, its own event still on its way) leaves the controls as the user set
        them."""
        allowed = set(self.moving_outputs if outputs is None else outputs)
        return {component: value for component, value in updates.items() if component in allowed}

    def on_input(self, *components: Component) -> None:
        """When the user changes one of `components`: apply the settings and redraw. A change made while the last
        one is still being applied is applied after it ("always_last"; gradio's default drops it, and the page
        then showed a view that was not the one chosen)."""
        for component in components:
            component.input(
                self.applied_input,
                self.inputs,
                self.outputs,
                api_visibility="private",
                trigger_mode="always_last",
                **QUICK,
            )

    @functools.cached_property
    def apply(self) -> Callable[..., Updates]:
        """The handler that applies the settings and redraws (made once: each handler is put on the GPU once)."""
        return self.action(lambda explorer: None)

    @functools.cached_property
    def applied_input(self) -> Callable[..., Updates]:
        """`apply` for a change of a control (`on_input`), which sends no control back the value it was sent."""
        return self.action(lambda explorer: None, unechoed=True)

    def apply_if_changed(self, name: str) -> Callable[..., Updates]:
        """`apply` for an event of the setting `name` that may bring the explorer's own value back: a box left as it
        was, or a control the page's opening set from the explorer it restored (applying it again redrew every view
        for nothing). Nothing to do then."""

        def handler(explorer, *values) -> Updates:
            if isinstance(explorer, Explorer) and Settings.from_values(values)[name] == getattr(explorer.state, name):
                return {self.explorer: gr.skip()}
            return self.apply(explorer, *values)

        return handler

    def view_handler(
        self, compute: Callable[..., Updates], failed: Callable[[ExplorerError], Updates], *, hold: bool = True
    ) -> Callable[..., Updates]:
        """A handler of (explorer, *settings values, *extra values) for a view of its own (a comparison, a set
        of figures): `compute(explorer, *extra values)` on the explorer with the settings, or `failed` with the
        error (the extra values are those of the inputs after `inputs`). `hold`: keep the user's explorer to itself
        while computing (needed when `compute` reads the decoding in progress)."""
        n_settings = len(NAMES)

        def handler(explorer, *values):
            settings, extra = values[:n_settings], values[n_settings:]
            language = Settings.from_values(settings)["language"]
            try:
                with one_at_a_time(explorer, language):
                    explorer, _note = self.explorer_with(explorer, settings)
                    if hold:
                        return enlarged_for_presentation(compute(explorer, *extra), explorer.state)
                with speaking(explorer.state.language):  # not holding the explorer, in the user's language all the same
                    return enlarged_for_presentation(compute(explorer, *extra), explorer.state)
            except ExplorerError as error:
                with speaking(language):
                    return failed(error)

        return uses_gpu(handler, runtime.LONG_GPU_S, hold=hold)


def same_value(answered: Any, sent: Any) -> bool:
    """Whether a control's value in an answer is the value its event sent (a number sent as 1.0 is the 1 answered)."""
    if isinstance(answered, I18nData) or isinstance(sent, I18nData):
        return False  # a text in the user's language: sent back, as it is worded for them
    try:
        return bool(answered == sent)
    except (TypeError, ValueError):
        return False


def cache_stats() -> dict[str, float]:
    """The counters of the cache every user shares (`explorer.cache.SHARED`): hits, misses, entries, megabytes."""
    return cache.SHARED.stats()


def build_demo(
    registry: ModelRegistry,
    pool: TrainingPool | None = None,
    classroom: Classroom | None = None,
    config: Config | None = None,
) -> gr.Blocks:
    """The whole page: the introduction, the sentence and decoding panels, the tabs, and the `/translate` API.
    `pool`: the workers that train the Train tab's runs (by default one worker). `classroom`: the classes of this
    server (by default in a store of its own, in a temporary file). `config`: the server's configuration (`app.py`
    reads it from the environment); without it, the page's modules keep their own values (the defaults, or what a
    test set)."""
    return build_page(registry, pool, classroom, config).demo


def page_column() -> gr.Column:
    """The column that holds the whole page, marked with its layout (`page-layout`: on a wide screen, the views
    beside the sentence and the decoding, assets/style.css), a mark the presentation layout takes away while it is
    on (ui/presentation.py)."""
    return gr.Column(elem_id="page", elem_classes="page-layout")


def build_page(
    registry: ModelRegistry,
    pool: TrainingPool | None = None,
    classroom: Classroom | None = None,
    config: Config | None = None,
) -> Page:
    """The page of `build_demo`, with its components and handlers by name (for tests and benchmarks)."""
    if config is not None:  # before the events are made: they take the queues' concurrency
        for module in (runtime, admission, gradio_patch):
            module.configure(config)
    # Files handed out (a trained model's Download) are deleted after an hour.
    with Blocks(title="Transformer Explorer", delete_cache=(1800, 3600)) as demo, page_column():
        classroom = classroom if classroom is not None else Classroom.temporary()
        page = Page(registry, demo, pool if pool is not None else TrainingPool(), classroom)
        page.owns_pool = pool is None  # made here: `close` closes it
        header = Header(page)  # the panels are built in the page's order
        sentence = SentencePanel(page)
        decoding = DecodingPanel(page)
        page.panels = [header, sentence, decoding, decoding.switched_off]
        # Every view one click away: the tabs that do not fit the views' width go on a second row, not into a
        # menu. The tabs hold nothing but tabs: gradio numbers a tab by its place among them (`test_page`).
        with gr.Tabs(elem_id="views", overflow_behavior="wrap") as page.tabs:
            for tab in TABS:
                page.panels += tab(page)
        page.tab_opener = gr.HTML("", html_template="", js_on_load=OPEN_TAB_JS, visible="hidden", elem_id="tab-opener")
        page.panels.append(header.classes)  # teach or join a class (ui/class_panel.py)
        page.panels.append(header.lessons)  # a lesson (ui/lesson_panel.py)
        page.panels.append(header.share)  # last, as when it was a tab: it opens a shared link once the rest is wired
        for panel in page.panels:
            panel.wire()
        page.wire_tabs()
        # The public API waits in its own line, with its own budget (`ui.admission`).
        gr.api(uses_gpu(api.make_translate(registry), runtime.LONG_GPU_S), api_name="translate", **admission.API)
        gr.api(cache_stats, api_name="cache_stats", api_visibility="undocumented", **admission.API)
    runtime.know_components(demo.blocks.values())  # the answers of handlers run apart name them (`uses_gpu`)
    return page
