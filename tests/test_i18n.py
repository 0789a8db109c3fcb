"""The page's languages: gettext catalogs read with Babel, every marked string translated, the browser's language."""

from __future__ import annotations

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
    translated = {m.id for m in catalog if m.id and m.string and not m.fuzzy}
    assert sorted(marked - {m.id for m in catalog}) == [], "run: python -m explorer.catalogs update"
    assert sorted(marked - translated) == [], "translate these in locale/zh_CN/LC_MESSAGES/messages.po"


def test_the_catalog_keeps_placeholders_of_each_message():
    with i18n.catalog_path("zh").open("rb") as file:
        catalog = read_po(file)
    for message in catalog:
        if message.id and message.string:
            for placeholder in ("{", "%("):
                assert message.id.count(placeholder) == message.string.count(placeholder), message.id


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
    assert tables == {"en": {"Step": "Step"}, "zh": {"Step": "下一步"}}


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
