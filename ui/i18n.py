"""The page's language: its fixed text translated in the browser, and the switch between English and Chinese.

The fixed text of the page (labels, buttons, tab and accordion titles) is marked `T("…")`: gradio sends the key and
the browser shows it in the page's language, from the tables of `gr.I18n` that `translations` fills from the
gettext catalogs (`explorer.i18n`). The text made for one user (captions, messages, figures) is translated on the
server, into the language of the user's state.

The page's language is chosen, in this order: by `?lang=zh` (or `en`) in the address, which a shared link and the
language switch write; else by the browser's preferred languages. The switch changes it in place: the server's
state (and so every text it draws) and, through `SET_LOCALE_JS`, gradio's own language in the browser.
"""

from __future__ import annotations

import json

import gradio as gr
from gradio.i18n import I18nData

from explorer import i18n
from explorer.i18n import LANGUAGES, N_, NAMES, gradio_translations

from .browser_internals import with_internals

# gradio calls Chinese of China "zh-CN" (its own strings: "Submit", "Loading…"); the catalog's strings go under the
# language's name alone, which the browser falls back to from "zh-CN" and every other Chinese region (they went
# under both names: the same 82 KB twice in every page).
BROWSER_LOCALES = {"en": ("en",), "zh": ("zh",)}

# The browser shows the page's fixed text in `language`: gradio's own language switch (its Settings panel's,
# `ui.browser_internals`); the event ends once the language is set, so that what follows it
# (`Page.in_the_new_language`) is drawn in it. An address without `?lang=` gets `lang=` written in, so that reloading
# it keeps the language.
SET_LOCALE_JS = with_internals("""(language) => {
    const tags = {en: "en", zh: "zh-CN"};
    if (!(language in tags)) return [];
    document.documentElement.lang = tags[language];
    const url = new URL(location.href);
    if (url.searchParams.get("lang") !== language) {
        url.searchParams.set("lang", language);
        history.replaceState(history.state, "", url.href);
    }
    return __CHANGE_LOCALE__(tags[language]).then(() => []);
}""")


def T(message: str) -> I18nData:
    """A fixed string of the page, shown in the page's language by the browser."""
    return I18nData(message)


# Gradio's own words that its Chinese table lacks (and its English one, for "common.complete"): its status tracker
# announces "common.complete" to a screen reader when an event ends (the page's text then held the key itself), and
# its footer links to "Runs", the runs this browser saved, once the browser has any (a returning user's page in
# Chinese showed it in English).
GRADIO_GAPS = {
    "common.complete": N_("Done"),
    "common.runs": N_("Runs"),
    "common.runs_description": N_("View runs saved in this browser"),
}


def with_browser_words(script: str, words: dict[str, str]) -> str:
    """`script`, code that runs in the browser (a button's answer, a tooltip), with `__WORDS__` made the object of
    `words` ({key: English text, marked N_}) in the page's language: the page's (`<html lang>`, which
    `SET_LOCALE_JS` sets), else English. Every language's words go in, from the catalogs, when the page is built."""
    table = {
        language: {key: i18n.translations(language).gettext(text) for key, text in words.items()}
        for language in LANGUAGES
    }
    chosen = "((all) => all[(document.documentElement.lang || '').split('-')[0]] || all.en)"
    return script.replace("__WORDS__", f"{chosen}({json.dumps(table, ensure_ascii=False)})")


def translations() -> gr.I18n:
    """gradio's translation tables, from the gettext catalogs."""
    tables = gradio_translations()
    for language, table in tables.items():
        table |= {key: i18n.translations(language).gettext(text) for key, text in GRADIO_GAPS.items()}
    return gr.I18n(**{locale: tables[language] for language in LANGUAGES for locale in BROWSER_LOCALES[language]})


def switch(value: str) -> gr.Radio:
    """The language switch: each language named in itself."""
    return gr.Radio(
        [(NAMES[language], language) for language in LANGUAGES],
        value=value,
        label=T("Language"),  # not shown: what a screen reader says of the switch
        show_label=False,
        elem_id="language",
        container=False,
        scale=0,
        min_width=180,
    )
