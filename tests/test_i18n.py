"""The page's languages: gettext catalogs read with Babel, every marked string translated, the browser's language."""

from __future__ import annotations

import ast
import re
import threading

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from explorer import catalogs, i18n
from explorer.i18n import _, language_of, speaking

# --- the shipped catalogs ---------------------------------------------------------------------------------------------


def test_every_string_marked_in_the_code_has_a_chinese_translation():
    """A new `_()` or `T()` string fails here until `python -m explorer.catalogs update` has put it in the catalog and a
    translator has translated it (fuzzy entries, which gettext does not use, count as untranslated)."""
    marked = {message.id for message in catalogs.extract() if message.id}
    with i18n.catalog_path("zh").open("rb") as file:
        catalog = read_po(file)
    translated = {m.id for m in catalog if m.id and catalogs.translated(m)}
    assert sorted(marked - {m.id for m in catalog}) == [], "run: python -m explorer.catalogs update"
    assert sorted(marked - translated) == [], "translate these in locale/zh_CN/LC_MESSAGES/messages.po"


def test_the_catalog_keeps_placeholders_of_each_message():
    with i18n.catalog_path("zh").open("rb") as file:
        catalog = read_po(file)
    for message in catalog:
        if not (message.id and catalogs.translated(message)):
            continue
        english = message.id[-1] if isinstance(message.id, tuple) else message.id  # the plural's placeholders
        for chinese in message.string if isinstance(message.string, tuple) else (message.string,):
            assert sorted(re.findall(r"\{[^{}]*\}|%\{[^{}]*\}", english)) == sorted(
                re.findall(r"\{[^{}]*\}|%\{[^{}]*\}", chinese)
            ), english


# --- translating ------------------------------------------------------------------------------------------------------


@pytest.fixture
def zh_catalog(tmp_path, monkeypatch):
    """A Chinese catalog of two messages, one fuzzy, in place of the shipped ones."""
    catalog = Catalog(locale="zh_CN", domain="messages")
    catalog.add("Step", "下一步")
    catalog.add("Back", "后退", flags=["fuzzy"])
    path = tmp_path / "zh_CN" / "LC_MESSAGES" / "messages.po"
    path.parent.mkdir(parents=True)
    with path.open("wb") as file:
        write_po(file, catalog)
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n.translations.cache_clear()
    yield
    i18n.translations.cache_clear()


def test_underscore_translates_into_the_language_being_spoken(zh_catalog):
    assert _("Step") == "Step"  # English, the language of the code, by default
    with speaking("zh"):
        assert _("Step") == "下一步"
        assert _("Back") == "Back"  # fuzzy: not used
        assert _("Run") == "Run"  # not in the catalog: the English text
        with speaking("en"):
            assert _("Step") == "Step"
        assert _("Step") == "下一步"
    with speaking("xx"):  # not one of ours: English
        assert _("Step") == "Step"


def test_each_thread_speaks_its_own_users_language(zh_catalog):
    """Actions of several users run at once in gradio's threads; each translates into its own user's language."""
    seen = {}

    def user(language):
        with speaking(language):
            barrier.wait()
            seen[language] = _("Step")

    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=user, args=(language,)) for language in ("en", "zh")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"en": "Step", "zh": "下一步"}


def test_gradio_translations_come_from_the_catalogs(zh_catalog):
    tables = i18n.gradio_translations()
    assert tables == {"en": {}, "zh": {"Step": "下一步"}}  # English: the key is the text


# --- which language ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preferred", "expected"),
    [
        ("zh-CN,zh;q=0.9,en;q=0.8", "zh"),
        ("zh-TW", "zh"),  # Chinese of another region: the page's Chinese is closer than English
        ("zh", "zh"),
        ("en-US,en;q=0.9", "en"),
        ("de-DE,de;q=0.9", "en"),  # none of ours
        ("de-DE,zh-CN;q=0.5", "zh"),
        ("", "en"),
        (None, "en"),
    ],
)
def test_language_of_a_browsers_preferences(preferred, expected):
    assert language_of(preferred) == expected


def test_update_writes_the_template_and_merges_it_into_the_catalogs(tmp_path, monkeypatch):
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    untranslated = catalogs.update()
    with (tmp_path / "zh_CN" / "LC_MESSAGES" / "messages.po").open("rb") as file:
        catalog = read_po(file)
    marked = {message.id for message in catalogs.extract() if message.id}
    assert {m.id for m in catalog if m.id} == marked
    assert untranslated == {"zh": len(marked)}
    i18n.translations.cache_clear()


# --- nothing shown without a catalog ----------------------------------------------------------------------------------

UNTRANSLATED = {"# Transformer Explorer", "d_model"}  # a name and a symbol: the same in every language
SHOWN_KEYWORDS = {"label", "info", "placeholder"}
SHOWN_FIRST = {"Button", "DownloadButton", "UploadButton", "Tab", "TabItem", "Accordion", "Markdown"}


def fixed_texts_left_unmarked(path, root=i18n.ROOT):
    """The literal texts given to a gradio component in `path` (a label, an info, a button's or a tab's title, a
    Markdown's text) that are not marked for translation: each would be shown in English on the Chinese page."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        called = node.func if isinstance(node, ast.Call) else None
        if not (isinstance(called, ast.Attribute) and isinstance(called.value, ast.Name) and called.value.id == "gr"):
            continue
        texts = [keyword.value for keyword in node.keywords if keyword.arg in SHOWN_KEYWORDS]
        if called.attr in SHOWN_FIRST:
            texts += node.args[:1] + [keyword.value for keyword in node.keywords if keyword.arg == "value"]
        for text in texts:
            literal = (
                isinstance(text, ast.Constant) and isinstance(text.value, str) and re.search("[A-Za-z]", text.value)
            )
            if isinstance(text, ast.JoinedStr) or (literal and text.value not in UNTRANSLATED):
                yield f"{path.relative_to(root)}:{node.lineno}: gr.{called.attr}({ast.unparse(text)[:60]})"


def test_every_fixed_text_of_the_page_is_marked_for_translation():
    """A label or a title written as a plain string is not in any catalog: mark it T("…") (`ui.i18n`)."""
    files = [i18n.ROOT / "app.py", *sorted((i18n.ROOT / "ui").rglob("*.py"))]
    assert [found for path in files for found in fixed_texts_left_unmarked(path)] == []


def test_the_check_for_unmarked_text_finds_one(tmp_path):
    page = tmp_path / "page.py"
    page.write_text('gr.Button("Step")\ngr.Button(T("Step"))\ngr.Slider(label=f"Layer {n}")\ngr.Markdown("d_model")\n')
    found = list(fixed_texts_left_unmarked(page, tmp_path))
    assert found == ["page.py:1: gr.Button('Step')", "page.py:3: gr.Slider(f'Layer {n}')"]


def test_words_written_in_the_browser_come_in_every_language_and_the_page_picks_its_own():
    from ui.i18n import with_browser_words

    script = with_browser_words("const words = __WORDS__;", {"step": "Step"})
    assert "__WORDS__" not in script and '"en": {"step": "Step"}' in script and '"zh": {"step": "下一步"}' in script
    assert "document.documentElement.lang" in script and "|| all.en" in script  # the page's language, else English


def test_every_text_the_browser_translates_is_one_line_with_no_backslash(registry):
    """Issue 35: gradio's browser cannot translate a text (`T(…)`) that holds a line break or a backslash: the Train
    tab's recipe showed its raw key, `i18n{"type": "translation_metadata", …`, and its formula in pieces. Such a text
    is shown whole by the server, or split: the words translated, a formula apart."""
    import json

    from explorer.training import TrainingPool
    from ui.page import build_demo

    def keys(value):
        if isinstance(value, dict):
            if value.get("__type__") == "translation_metadata":
                yield value["key"]
            for inner in value.values():
                yield from keys(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from keys(inner)
        elif isinstance(value, str) and value.startswith("__i18n__"):
            yield json.loads(value.removeprefix("__i18n__"))["key"]

    pool = TrainingPool()
    config = build_demo(registry, pool).get_config_file()
    pool.close()
    found = [key for component in config["components"] for key in keys(component["props"])]
    assert len(found) > 40  # the labels, buttons and captions of the page
    assert [key for key in found if "\n" in key or "\\" in key] == []
