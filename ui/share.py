"""Sharing a view: the **Copy link** button in the header, with the link it copies beside it, and opening such a
link (`?state=…`) when the page loads. Sharing is an action, not a view: it has no tab."""

from __future__ import annotations

import gradio as gr

from explorer import Explorer, ExplorerError, ExplorerState
from explorer.i18n import DEFAULT as DEFAULT_LANGUAGE
from explorer.i18n import LANGUAGES, N_, _, language_of, speaking

from . import scripts
from .class_panel import class_query
from .i18n import SET_LOCALE_JS, T, with_browser_words
from .panel import Frame, PageAccess, Panel, Updates, escaped
from .runtime import LONG_GPU_S, one_at_a_time, uses_gpu
from .settings import NAMES, control_values


def share_markdown(state: ExplorerState) -> str:
    """A link to this exact view (model, sentence, step, strategy, masks, silenced heads, the open tab, the
    language: also as `lang=`, which the browser reads before the page starts)."""
    language = "" if state.language == DEFAULT_LANGUAGE else f"&lang={state.language}"
    return _("[Link to this view]({link})").format(link=f"?state={state.to_link()}{language}")


# What the copy button says, in the page's language (`copy_js`).
COPY_WORDS = {
    "copy": N_("Copy link"),
    "copied": N_("Link copied"),
    "none": N_("No link yet"),
    "by_hand": N_("Copy the link by hand"),
}

# The view's link as a full address, on the clipboard (`ui.scripts.COPY_JS`).
LINK_ADDRESS = """const link = document.querySelector("#share-link a");
        return link ? new URL(link.getAttribute("href"), location.href).href : null;"""


def copy_js() -> str:
    """`COPY_JS` with the button's words in the page's language."""
    return with_browser_words(scripts.copy_js("copy-link", LINK_ADDRESS), COPY_WORDS)


class SharePanel(Panel):
    """Made in the header, under the introduction (`ui.presentation.Header`)."""

    refresh_hidden = True  # drawn by every event, opening a tab included: the link names the open tab

    def __init__(self, page: PageAccess):
        super().__init__(page)
        with gr.Row(elem_id="share") as self.row:  # (the class panel adds its button here: `ui.class_panel`)
            self.copy = gr.Button(T("Copy link"), elem_id="copy-link", size="sm", scale=0, min_width=110)
            self.link = gr.Markdown(elem_id="share-link")  # always current: it is drawn at every action
        self.opened_with = gr.State({})  # the `state` and `lang` of the page's address, the browser's language
        self.outputs = [self.link]

    def refresh(self, frame: Frame) -> Updates:
        return {self.link: share_markdown(frame.state)}

    def cleared(self, message: str) -> Updates:
        return {self.link: ""}

    def wire(self) -> None:
        page = self.page
        outputs = list(dict.fromkeys([page.tab_opener, *page.inputs[1:], *page.outputs]))  # every control
        restored = page.on_load(self.address, None, self.opened_with).then(
            uses_gpu(self.restore, LONG_GPU_S), [self.opened_with, *page.inputs], outputs, api_visibility="private"
        )
        page.in_the_new_language(
            restored.then(None, page.control("language"), None, js=SET_LOCALE_JS, api_visibility="private")
        )
        for panel in page.panels:
            panel.on_opened(restored)
        self.copy.click(None, None, None, js=copy_js(), api_visibility="private")

    @staticmethod
    def address(request: gr.Request) -> dict[str, str]:
        """What the page was opened with: a shared state (`?state=`), a language (`?lang=`), and the language the
        browser prefers (Accept-Language)."""
        if request is None:
            return {}
        query = dict(request.query_params)
        return {
            "state": query.get("state", ""),
            "lang": query.get("lang", "") if query.get("lang") in LANGUAGES else "",
            "browser": language_of(request.headers.get("accept-language")),
            **class_query(query),  # a class's link (`ui.class_panel`)
        }

    def restore(self, opened: dict, explorer, *values) -> Updates:
        """On page load: the state of a shared link (?state=…), or the page's own settings, in the language of the
        address, else the link's, else the browser's."""
        page = self.page
        opened = opened or {}
        token, asked = opened.get("state", ""), opened.get("lang", "")
        language = asked or opened.get("browser") or DEFAULT_LANGUAGE  # the page's, unless a link says otherwise
        if not token:
            return self.first_view(language, explorer, values)
        try:
            with speaking(language):
                state = ExplorerState.from_link(token)
            state = state.replace(tab=page.tab_holding(state.tab))  # a view that became a section opens its tab
            with speaking(asked or state.language):
                explorer = Explorer(page.registry, state.replace(language=asked) if asked else state)
        except ExplorerError as error:
            with speaking(language):
                said = _("This link cannot be opened: {error}").format(error=error)
            return self.first_view(language, explorer, values) | {page.status: escaped(said)}
        with one_at_a_time(explorer):
            # Every control shows the link's setting; those a refresh sets (a model's layers and heads) as it sets
            # them.
            controls = {page.control(name): value for name, value in control_values(explorer.state).items()}
            return page.opening(explorer.state.tab) | controls | page.refreshed(explorer)

    def first_view(self, language: str, explorer, values: tuple) -> Updates:
        """The page's own settings, in `language`: a first view in Chinese opens on a model that reads Chinese."""
        page = self.page
        values = list(values)
        values[NAMES.index("language")] = language
        model, note = page.default_for(language) if explorer is None else ("", "")
        if explorer is None and language != DEFAULT_LANGUAGE:
            values[NAMES.index("model")] = model
            values[NAMES.index("source")] = page.registry.examples(model)[0][0]
        updates = page.apply(explorer, *values)
        updates[page.control("model")] = values[NAMES.index("model")]
        updates[page.control("source")] = values[NAMES.index("source")]
        if note:  # the first view of a page that fell back to the built-in model
            updates[page.status] = escaped(note)
        return updates
