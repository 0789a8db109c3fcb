"""Small scripts the page runs in the browser, shared by its panels: a box that unfolds under its button, an event
sent only when it has something to do, and a link copied to the clipboard."""

from __future__ import annotations

import json


def toggle_js(box: str) -> str:
    """Unfold the box `box` (an elem_id) under its button, or fold it; unfolded, its first control has the focus."""
    return f"""() => {{
    const box = document.getElementById({json.dumps(box)});
    box.classList.toggle("folded");
    if (!box.classList.contains("folded")) box.querySelector("button, input, textarea")?.focus();
}}"""


def fold_js(box: str) -> str:
    """Fold the box `box`."""
    return f"() => {{ document.getElementById({json.dumps(box)})?.classList.add('folded'); }}"


def click_when(condition: str, button: str) -> str:
    """A browser-only event that clicks the hidden button `button` (an elem_id, whose own event goes to the server)
    when `condition` (a JavaScript expression) holds, and otherwise sends nothing: for an event that would often
    answer nothing."""
    return f"() => {{ if ({condition}) document.getElementById({json.dumps(button)})?.click(); }}"


# A link as a full address, on the clipboard; the button says it worked or why not. The clipboard API exists only on
# https and localhost: a classroom server at http://192.168.… copies through a selected, hidden text box instead
# (`execCommand`, deprecated but still the only way there). `__ADDRESS__`: code that gives the address, or null;
# `__WORDS__`: the button's words (`copy`, `copied`, `none`, `by_hand`) in the page's language
# (`ui.i18n.with_browser_words`).
COPY_JS = """() => {
    const words = __WORDS__;
    const button = document.getElementById(__BUTTON__);
    const say = (text) => { button.innerText = text; clearTimeout(button.reset);
                            button.reset = setTimeout(() => { button.innerText = words.copy; }, 2000); };
    const url = (() => { __ADDRESS__ })();
    if (!url) return say(words.none);
    const byHand = () => {
        const box = document.createElement("textarea");
        box.value = url; box.setAttribute("readonly", ""); box.style.position = "fixed"; box.style.opacity = "0";
        document.body.appendChild(box); box.select();
        let copied = false;
        try { copied = document.execCommand("copy"); } catch (error) { copied = false; }
        box.remove();
        say(copied ? words.copied : words.by_hand);
    };
    if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(url).then(() => say(words.copied), byHand);
    } else {
        byHand();
    }
}"""


def copy_js(button: str, address: str) -> str:
    """`COPY_JS` for the button `button` (an elem_id), copying what the code `address` returns (`__WORDS__` left
    for `with_browser_words`)."""
    return COPY_JS.replace("__BUTTON__", json.dumps(button)).replace("__ADDRESS__", address)
