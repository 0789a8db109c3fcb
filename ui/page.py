"""The page: builds every panel in order, keeps the per-user explorer, and runs the actions that refresh the views.

A *panel* is one module of `ui/` (the sentence, the decoding controls, each tab). It builds its components when
constructed, registers its settings controls with the page (`Page.setting`), lists the components it redraws
after every action (`outputs`), draws them (`refresh`) and wires its own events (`wire`). Everything a handler
returns is a `{component: value}` dict; a component left out stays as it is. Adding a view is a new panel module
and one line in `TABS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import Explorer, ExplorerError, ModelRegistry, cache
from explorer.render import presented

from . import (
    api,
    attention,
    beam,
    decoding,
    inside,
    masks,
    positions,
    presentation,
    sentence,
    share,
    twins,
    walkthrough,
)
from .panel import FIT_PLOTS_JS, Panel, Refresh, escaped
from .runtime import QUICK, Blocks, lock_of, run_gpu
from .settings import Settings, settle

EMPTY_SENTENCE = "The sentence box is empty: type a sentence, or click one of the examples."

# In the order of the tab bar: where the views' column is too narrow for all of them (beside the controls, the views
# have 60% of the page: five tabs at 1400 px, three at 1024), the last ones are in its menu ("More tabs"); the
# walkthrough stays in sight.
TABS = (
    attention.Panel,
    inside.Panel,
    walkthrough.Panel,
    masks.Panel,
    positions.Panel,
    twins.Panel,
    beam.Panel,
    share.Panel,
)


class Page:
    """The components of the page by name, and the handlers every panel wires its events to."""

    def __init__(self, registry: ModelRegistry, demo: gr.Blocks):
        self.registry = registry
        self.demo = demo
        self.explorer = gr.State(None)  # the user's `Explorer`
        self.controls: dict[str, Component] = {}  # the settings controls, by `Settings` field name
        self.panels: list[Panel] = []
        self.status: gr.Markdown | None = None  # the message line, set by the decoding panel
        self.startup_note = ""  # why the page does not open on the preferred model, if it does not
        self.tabs: gr.Tabs | None = None  # the views, one tab each
        self.tab_by_key: dict[str, gr.Tab] = {}

    def tab(self, label: str, key: str) -> gr.Tab:
        """A tab of the views (use it as `with page.tab("Positions", "positions"):`), known by `key` to the
        state (`ExplorerState.tab`), whose figures fill their width whenever it is opened."""
        opened = self.tab_by_key[key] = gr.Tab(label, id=key)
        opened.select(None, None, None, js=FIT_PLOTS_JS, api_visibility="private")
        return opened

    def setting(self, name: str, component: Component) -> Component:
        """Register `component` as the control of the setting `name` (a field of `Settings`)."""
        if name not in Settings.names():
            raise KeyError(f"{name!r} is not a field of Settings")
        self.controls[name] = component
        return component

    @property
    def inputs(self) -> list[Component]:
        """The inputs of every action: the user's explorer, then the settings in the order of `Settings`."""
        return [self.explorer, *(self.controls[name] for name in Settings.names())]

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

    def settled(self, explorer: Explorer | None, values: tuple) -> tuple[Explorer, str]:
        """The user's explorer with the settings whose values are `values` (in the order of `Settings`), and a
        note when the sentence had to change for a new model (`settle`)."""
        return settle(self.registry, explorer, Settings.from_values(values))

    def refreshed(
        self, explorer: Explorer | None, message: str = "", light: bool = False, note: str = ""
    ) -> dict[Component, Any]:
        """The outputs of every panel shown for the explorer's state, and unless `light` every panel's controls (or
        everything cleared, with `message`, when there is no explorer). `note`: why the sentence is not the one
        typed (`settle`)."""
        if explorer is None:
            updates: dict[Component, Any] = {self.explorer: None}
            for panel in self.panels:
                updates.update(panel.cleared(message))
            return updates
        frame = Refresh(explorer, explorer.views(), message, light, note)
        updates = {self.explorer: explorer}
        for panel in self.panels:
            if not light:
                updates.update(panel.sync(frame))
            if self.shown(panel, explorer.state.tab):  # a hidden one is drawn when its tab opens (`opened`)
                updates.update(panel.refresh(frame))
        return presented(updates, explorer.state)

    @staticmethod
    def shown(panel: Panel, tab: str) -> bool:
        """Whether `panel` is drawn while the tab `tab` is open."""
        return panel.tab in (None, tab) or panel.refresh_hidden

    def opened(self, key: str) -> Callable[..., dict]:
        """A handler for opening the tab `key`: the state (and so the link) remembers it, unless its panel is not
        `remembered`, and the tab's panels are drawn for the user's current step."""
        remembered = all(panel.remembered for panel in self.panels if panel.tab == key)
        drawn = self.drawn_on_opening(key)

        def handler(explorer) -> dict[Component, Any]:
            if not isinstance(explorer, Explorer):  # nothing to draw yet (an empty dict is no answer to gradio)
                return {self.explorer: gr.skip()}
            try:
                with lock_of(explorer):
                    if remembered:
                        explorer.update(tab=key)
                    frame = Refresh(explorer, explorer.views(), "", light=False)
                    updates: dict[Component, Any] = {self.explorer: explorer}
                    for panel in drawn:
                        updates.update(panel.refresh(frame))
                    return presented(updates, explorer.state)
            except ExplorerError as error:
                return {self.explorer: explorer, self.status: escaped(str(error))}

        return run_gpu(handler)

    def drawn_on_opening(self, key: str) -> list[Panel]:
        """The panels that opening the tab `key` draws: its own, and those drawn even while hidden."""
        return [panel for panel in self.panels if panel.tab == key or panel.refresh_hidden]

    def wire_tabs(self) -> None:
        """Opening a tab draws it (`opened`)."""
        for key, tab in self.tab_by_key.items():
            drawn = self.drawn_on_opening(key)
            outputs = [self.explorer, self.status, *(c for panel in drawn for c in panel.outputs)]
            tab.select(self.opened(key), self.explorer, outputs, api_visibility="private", **QUICK)

    def action(self, act: Callable[[Explorer], str | None], *, moves: bool = False) -> Callable[..., dict]:
        """A handler of (explorer, *settings values): settle the settings, then `act` (which may return a
        message), then refresh. `moves`: it only moves through the decoding (Step, Back, forcing)."""

        def handler(explorer, *values):
            try:
                with lock_of(explorer):
                    before = explorer.state if isinstance(explorer, Explorer) else None
                    explorer, note = self.settled(explorer, values)
                    light = moves and explorer.state == before and not note
                    updates = self.refreshed(explorer, act(explorer) or "", light=light, note=note)
                    if note:  # the sentence changed: the text box shows the new one
                        updates[self.controls["source"]] = explorer.state.source
            except ExplorerError as error:
                message = str(error)
                if not Settings.from_values(values).source.strip():  # an empty box: nothing of the old sentence stays
                    explorer, message = None, EMPTY_SENTENCE
                updates = self.refreshed(explorer if isinstance(explorer, Explorer) else None, message)
            return self.moved(updates) if moves else updates

        return run_gpu(handler)

    def moved(self, updates: dict[Component, Any]) -> dict[Component, Any]:
        """`updates` for an event of `moving_outputs`: a setting that reached the server with a move (changed a
        moment before the click, its own event still on its way) leaves the controls as the user set them."""
        allowed = set(self.moving_outputs)
        return {component: value for component, value in updates.items() if component in allowed}

    def on_input(self, *components: Component) -> None:
        """When the user changes one of `components`: apply the settings and redraw. A change made while the last
        one is still being applied is applied after it ("always_last"; gradio's default drops it, and the page
        then showed a view that was not the one chosen)."""
        for component in components:
            component.input(self.apply, self.inputs, self.outputs, api_visibility="private", trigger_mode="always_last",
                            **QUICK)  # fmt: skip

    @property
    def apply(self) -> Callable[..., dict]:
        return self.action(lambda explorer: None)

    def with_settled(
        self, compute: Callable[[Explorer], dict], failed: Callable[[ExplorerError], dict], *, hold: bool = True
    ) -> Callable[..., dict]:
        """A handler of (explorer, *settings values, *extra values) for a view of its own (a comparison, a set
        of figures): `compute(explorer, *extra values)` on the settled explorer, or `failed` with the error (the
        extra values are those of the inputs after `inputs`). `hold`: keep the user's explorer to itself while
        computing (needed when `compute` reads the decoding in progress)."""
        n_settings = len(Settings.names())

        def handler(explorer, *values):
            settings, extra = values[:n_settings], values[n_settings:]
            try:
                with lock_of(explorer):
                    explorer, _ = self.settled(explorer, settings)
                    if hold:
                        return presented(compute(explorer, *extra), explorer.state)
                return presented(compute(explorer, *extra), explorer.state)
            except ExplorerError as error:
                return failed(error)

        return run_gpu(handler)


def cache_stats() -> dict[str, float]:
    """The counters of the cache every user shares (`explorer.cache.SHARED`): hits, misses, entries, megabytes."""
    return cache.SHARED.stats()


def build_demo(registry: ModelRegistry) -> gr.Blocks:
    """The whole page: the introduction, the sentence and decoding panels, the tabs, and the `/translate` API."""
    return build_page(registry).demo


def build_page(registry: ModelRegistry) -> Page:
    """The page of `build_demo`, with its components and handlers by name (for tests and benchmarks)."""
    with Blocks(title="Transformer Explorer") as demo:
        page = Page(registry, demo)
        page.panels = [presentation.Panel(page), sentence.Panel(page), decoding.Panel(page)]
        with gr.Tabs(elem_id="views") as page.tabs:
            page.panels += [tab(page) for tab in TABS]
        for panel in page.panels:
            panel.wire()
        page.wire_tabs()
        gr.api(run_gpu(api.make_translate(registry)), api_name="translate")
        gr.api(cache_stats, api_name="cache_stats", api_visibility="undocumented")
    return page
