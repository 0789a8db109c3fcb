"""The page's gettext catalogs, kept in step with the code: `python -m explorer.catalogs update`.

It collects the strings marked in the code (`_`, `T`, `N_`, `ngettext`; see `explorer.i18n`), and the page's words
written in data files (the model picker's descriptions, the examples' notes), into
`locale/messages.pot` and merges them into every language's `messages.po`: a new string waits there untranslated
(and the tests fail until a translator fills it in), a string gone from the code leaves its catalog.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from babel.messages.pofile import read_po

from . import i18n
from .i18n import DEFAULT, DOMAIN, LANGUAGES, ROOT, catalog_path

TEMPLATE_NAME = "messages.pot"
SOURCES = ("app.py", "explorer", "ui")  # where the page's strings are written
KEYWORDS = {"_": None, "T": None, "N_": None, "ngettext": (1, 2)}
# The page's words that live in data files: what the model picker says of each model, and why a model's instructive
# failures fail (`explorer.registry` translates them where it shows them).
MODEL_TEXTS = ("label", "source", "size", "quality")


def extract():
    """The page's marked strings (`_`, `T`, `N_`, `ngettext`) as a Babel catalog, in the order of the code."""
    from babel.messages.catalog import Catalog
    from babel.messages.extract import extract_from_file

    template = Catalog(project="Transformer Explorer", domain=DOMAIN, charset="utf-8")
    files = [ROOT / "app.py", *(path for folder in SOURCES[1:] for path in sorted((ROOT / folder).rglob("*.py")))]
    for path in files:
        for line, message, comments, _context in extract_from_file("python", path, keywords=KEYWORDS):
            template.add(message, locations=[(path.relative_to(ROOT).as_posix(), line)], auto_comments=comments)
    for path, line, message in data_texts():
        template.add(message, locations=[(path, line)])
    return template


def data_texts() -> Iterator[tuple[str, int, str]]:
    """(file, line, text) of the page's words written in data files: `assets/models.json`, each model's
    `examples.json`."""
    models = ROOT / "assets" / "models.json"
    for entry in json.loads(models.read_text(encoding="utf-8")).values():
        if isinstance(entry, dict):
            for field in MODEL_TEXTS:
                if entry.get(field):
                    yield _located(models, entry[field])
    for path in sorted(ROOT.glob("checkpoints/*/examples.json")):
        for example in json.loads(path.read_text(encoding="utf-8"))["examples"]:
            if example.get("why"):
                yield _located(path, example["why"])


def _located(path: Path, text: str) -> tuple[str, int, str]:
    """`text` with the line of `path` it is written on (as JSON writes it)."""
    written = path.read_text(encoding="utf-8")
    at = written.find(json.dumps(text, ensure_ascii=False)[1:-1])
    return path.relative_to(ROOT).as_posix(), written.count("\n", 0, max(at, 0)) + 1, text


def translated(message) -> bool:
    """Whether a catalog's message is translated: every plural form filled in, and not fuzzy (gettext skips those)."""
    forms = message.string if isinstance(message.string, tuple) else (message.string,)
    return all(forms) and not message.fuzzy


def update() -> dict[str, int]:
    """Write `locale/messages.pot` from the code and merge it into every catalog (a new language's is created);
    returns each catalog's untranslated count."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    template = extract()
    i18n.LOCALE_DIR.mkdir(exist_ok=True)
    with i18n.LOCALE_DIR.joinpath(TEMPLATE_NAME).open("wb") as file:
        write_po(file, template, width=120, omit_header=False, sort_output=False)
    untranslated = {}
    for language, locale in LANGUAGES.items():
        if language == DEFAULT:
            continue
        path = catalog_path(language)
        if path.is_file():
            with path.open("rb") as file:
                catalog = read_po(file, locale=locale, domain=DOMAIN)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            catalog = Catalog(locale=locale, domain=DOMAIN, project="Transformer Explorer", charset="utf-8")
        catalog.update(template, update_header_comment=False)
        with path.open("wb") as file:
            write_po(file, catalog, width=120, ignore_obsolete=True, include_previous=True)
        untranslated[language] = sum(1 for m in catalog if m.id and not translated(m))
    i18n.translations.cache_clear()
    return untranslated


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["update"]:
        sys.exit("usage: python -m explorer.catalogs update")
    for language, count in update().items():
        print(f"{catalog_path(language).relative_to(ROOT)}: {count} untranslated")
