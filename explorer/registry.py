"""The models the explorer can show: the built-in checkpoints and opus-mt models from the Hugging Face Hub.

They are loaded once, on first use, and shared read-only by every user; each model's example sentences come
with it (`examples.json` in its folder, or the fallbacks in `assets/examples.json`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from transformer.checkpoint import TWIN, Checkpoint, CheckpointError, load_checkpoint
from transformer.hub import load_hub_model

from . import config
from .i18n import _, current, speaking
from .state import ExplorerError

ASSETS = Path(__file__).resolve().parent.parent / "assets"

# What a user may name besides a built-in model: a Hub repo id, "owner/name". Never a path on the server.
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")


# The name of a model trained in the Train tab ("reverse · 2 layers · step 450 · trained 45 s", `PersonalRegistry`).
TRAINED_NAME = re.compile(r".+ · step \d+ · trained \d+ s( \(\d+\))?")  # "(2)": another model, the same words

HUB_DEFAULT = "Helsinki-NLP/opus-mt-en-de"  # the page opens on it wherever it is already in the local cache
# The model a page in each language opens on: the Hub model where it is cached, else the built-in one.
DEFAULTS = {"en": (HUB_DEFAULT, "en-de"), "zh": ("Helsinki-NLP/opus-mt-zh-en", "zh-en")}


def in_hub_cache(repo_id: str, cache_dir: str | Path | None = None) -> bool:
    """Whether a Hub model is in the local Hugging Face cache (its config.json at least), without any network."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir), str)


BUILTIN_FILES = ("config.json", TWIN)  # a built-in model is a checkpoint folder or an untrained twin's

# Every `ModelRegistry` of this process, by number: a pickled registry is its number (`ModelRegistry.__reduce__`).
_REGISTRIES: weakref.WeakValueDictionary[int, ModelRegistry] = weakref.WeakValueDictionary()
_NUMBERS = itertools.count()
# A model that failed to load is not tried again for this many seconds: its message is given at once (a hostile
# model cost seconds of CPU and gigabytes on every click). The last `FAILURES_KEPT` failures are remembered.
FAILED_LOAD_S = config.DEFAULTS.failed_load_s  # (`EXPLORER_FAILED_LOAD_S`: `ModelRegistry`'s `failed_load_s`)
FAILURES_KEPT = 256


def registry_numbered(number: int) -> ModelRegistry:
    """The registry a pickled copy names: the same one, in the process that made it or in one forked from it (a
    ZeroGPU worker)."""
    if number not in _REGISTRIES:
        raise LookupError(f"no model registry number {number} in this process: it was made in another one")
    return _REGISTRIES[number]


class ModelRegistry:
    """Built-in checkpoints (folders under `checkpoints/`) and Hub models, loaded once, shared read-only.

    Names come from users: a built-in name, or a Hub repo id ("Helsinki-NLP/opus-mt-en-de"). Anything else, a
    path on the server included, is refused before any file is touched.
    """

    def __init__(
        self,
        folder: str | Path,
        loader: Callable[..., Checkpoint] = load_hub_model,
        device: str = "cpu",
        hub_cache: str | Path | None = None,
        failed_load_s: float = FAILED_LOAD_S,
    ):
        self.folder = Path(folder)
        self.hub_cache = hub_cache  # where to look for HUB_DEFAULT (None: the standard Hugging Face cache)
        self.device = device
        self.failed_load_s = failed_load_s
        self.builtin = sorted(p.name for p in self.folder.iterdir() if any((p / f).is_file() for f in BUILTIN_FILES))
        self.loader = loader
        self._loaded: dict[str, Checkpoint] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._failed: OrderedDict[str, tuple[float, str]] = OrderedDict()  # name: (when, why), `failed_load_s`
        self._guard = threading.Lock()
        self.number = next(_NUMBERS)
        _REGISTRIES[self.number] = self

    def __reduce__(self):
        """Pickled by reference: a user's explorer that crosses to a ZeroGPU worker (forked from this process) and
        back names the registry every user shares, not a copy of its models."""
        return registry_numbered, (self.number,)

    def preload(self, names: list[str] | None = None) -> None:
        """Load `names` now (by default the built-in models and the Hub defaults in the local cache). On ZeroGPU the
        models must be on the GPU before the app starts: they are then packed once and sent to every worker
        (`app.py`)."""
        wanted = names if names is not None else self.builtin + [hub for hub, _builtin in DEFAULTS.values()]
        for name in wanted:
            if name in self.builtin or in_hub_cache(name, self.hub_cache):
                self.get(name)

    def get(self, name: str) -> Checkpoint:
        """The model called `name` (a built-in, or a Hub repo id such as Helsinki-NLP/opus-mt-en-de)."""
        builtin = name in self.builtin
        if TRAINED_NAME.fullmatch(name):
            raise ExplorerError(
                _(
                    "“{name}” was trained in another page and lives only there: train it again in the Train tab "
                    "(a shared link brings its setup), or load its downloaded file there"
                ).format(name=name[:100])
            )
        if not builtin and not (HUB_ID.fullmatch(name) and ".." not in name):
            raise ExplorerError(
                _(
                    "unknown model {name}: choose a built-in model ({models}) or give a Hugging Face Hub id such as "
                    "Helsinki-NLP/opus-mt-en-de"
                ).format(name=repr(name[:100]), models=", ".join(self.builtin))
            )
        with self._guard:
            if name in self._loaded:
                return self._loaded[name]

            lock = self._locks.setdefault(name, threading.Lock())
        with lock:  # one load per model, even when several users ask for it at once
            if name not in self._loaded:
                failed = self._failed.get(name)
                if failed is not None and time.monotonic() - failed[0] < self.failed_load_s:
                    raise ExplorerError(failed[1])  # not tried again on every click
                try:
                    checkpoint = (
                        load_checkpoint(self.folder / name, self.device) if builtin else self.loader(name, self.device)
                    )
                except CheckpointError as error:
                    with self._guard:
                        self._failed[name] = (time.monotonic(), str(error))
                        self._failed.move_to_end(name)
                        while len(self._failed) > FAILURES_KEPT:
                            self._failed.popitem(last=False)
                        self._locks.pop(name, None)  # a name that failed keeps nothing but its message
                    raise ExplorerError(str(error)) from None
                checkpoint.model.requires_grad_(False)
                self._loaded[name] = checkpoint
                self._failed.pop(name, None)
            return self._loaded[name]

    def default(self, language: str = "en") -> tuple[str, str]:
        """The model a page in `language` opens on, and a note when the preferred one could not be used.

        The best model, opus-mt-en-de (`HUB_DEFAULT`; opus-mt-zh-en for a page in Chinese, whose readers type
        Chinese), when it is in the local cache (a Space downloads it at build time: `preload_from_hub` in the
        README's front matter) and loads; else the built-in en-de (zh-en), with no wait and no network. A cached
        copy that fails to load falls back too, and the note says why."""
        hub, builtin = DEFAULTS.get(language, DEFAULTS["en"])
        fallback = builtin if builtin in self.builtin else self.builtin[0]
        if not in_hub_cache(hub, self.hub_cache):
            return fallback, ""
        try:
            self.get(hub)
        except ExplorerError as error:
            note = _("{hub} is in the local cache but could not be loaded ({error}): here is {fallback}.")
            return fallback, note.format(hub=hub, error=error, fallback=fallback)
        return hub, ""

    def describe(self, name: str) -> ModelDescription:
        """What the model picker says about a model, in the user's language: its source, its size and its measured
        quality (`assets/models.json`, whose texts the catalogs hold; a Hub model not listed there gets a general
        description)."""
        listed = model_descriptions().get(name)
        if listed is not None:
            return ModelDescription(*(_(text) if text else text for text in dataclasses.astuple(listed)))
        return ModelDescription(
            label=name,
            source=_(
                "From the Hugging Face Hub: {name}, an opus-mt (Marian) model loaded into this project's own code."
            ).format(name=name),
            size=_("As its config on the Hub says; the layer and head controls show its layers and heads once loaded."),
            quality=_("Not measured by this project: its authors' scores are on its model card on the Hub."),
        )

    def picker_label(self, name: str) -> str:
        """The model's line in the picker: its label, and for a Hub model that is neither loaded nor in the local
        cache, that choosing it downloads it."""
        label = self.describe(name).label
        if name in self.builtin or name in self._loaded or in_hub_cache(name, self.hub_cache):
            return label
        return _("{label} · downloads it: needs the internet").format(label=label)

    def examples(self, name: str) -> tuple[tuple[str, str], ...]:
        """(sentence, label) pairs of a model's example sentences: an untrained twin shares its model's, a Hub
        model gets those of the built-in model that reads its language (`examples_of`). A built-in model's
        `examples.json` lists sentences it translates correctly and a few instructive failures (`"works": false`
        with a `"why"`), which are labelled as such."""
        return model_examples(self.folder, name, current())


@dataclass(frozen=True)
class ModelDescription:
    """A model as the picker presents it: a one-line label, then where it comes from, its size, its quality."""

    label: str
    source: str
    size: str
    quality: str

    def markdown(self) -> str:
        return _("**Source.** {source}\n\n**Size.** {size}\n\n**Quality.** {quality}").format(
            source=self.source, size=self.size, quality=self.quality
        )


@functools.cache
def model_descriptions() -> dict[str, ModelDescription]:
    """`assets/models.json`, by model name."""
    entries = json.loads((ASSETS / "models.json").read_text(encoding="utf-8"))
    return {name: ModelDescription(**entry) for name, entry in entries.items() if not name.startswith("_")}


# What a Hub model reads first: the built-in model whose examples it shows, and a code its sentences start with
# (opus-mt-en-zh writes several Chinese scripts and needs one: >>cmn_Hans<< for Simplified Chinese).
HUB_READS = {"zh": ("zh-en", ""), "en-zh": ("en-de", ">>cmn_Hans<< ")}


def examples_of(folder: Path, name: str, fallbacks: dict) -> tuple[str, str]:
    """(the built-in model whose examples `name` shows, the code its sentences start with): its own, its trained
    twin's, or by the language a Hub model reads (opus-mt-zh-en reads Chinese: zh-en's), else en-de's."""
    name = name.removesuffix("-untrained")
    if name in fallbacks or (folder / name / "examples.json").is_file():
        return name, ""
    pair = re.search(r"opus-mt-([a-z]+)-([a-z]+)$", name)
    for key in (f"{pair.group(1)}-{pair.group(2)}", pair.group(1)) if pair else ():
        if key in HUB_READS and (HUB_READS[key][0] in fallbacks or (folder / HUB_READS[key][0]).is_dir()):
            return HUB_READS[key]
    return "en-de", ""


@functools.cache
def model_examples(folder: Path, name: str, language: str = "en") -> tuple[tuple[str, str], ...]:
    """See `ModelRegistry.examples`; cached, as the page asks for them after every change of model, in each
    `language` (the current user's: the labels of the failures are translated)."""
    with speaking(language):
        return _model_examples(folder, name)


def _model_examples(folder: Path, name: str) -> tuple[tuple[str, str], ...]:
    fallbacks = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
    name, code = examples_of(folder, name, fallbacks)
    path = folder / name / "examples.json"
    if not path.is_file():
        return tuple((code + sentence, code + sentence) for sentence in fallbacks[name])
    entries = json.loads(path.read_text(encoding="utf-8"))["examples"]
    if code:  # another model's sentences: its failures are not this model's
        return tuple((code + e["sentence"], code + e["sentence"]) for e in entries if e["works"])
    return tuple((e["sentence"], e["sentence"] if e["works"] else _failure_label(e)) for e in entries)


def _failure_label(example: dict) -> str:
    """The label of an instructive failure: the sentence, and why it fails (`examples.json`, which the catalogs
    hold)."""
    why = example["why"]
    return _("✗ {sentence} — a failure to study: {why}").format(sentence=example["sentence"], why=_(why))


@dataclass(frozen=True)
class OwnModel:
    """A model of one user's (`PersonalRegistry`): the model, what the picker says of it, and sentences to try."""

    checkpoint: Checkpoint
    description: ModelDescription
    examples: tuple[tuple[str, str], ...]


class PersonalRegistry:
    """One user's models: those they trained in the Train tab or loaded from a file, theirs alone and first in
    their picker, then everything of the shared `ModelRegistry`. The user's explorer holds it (`Explorer.registry`),
    so every view reads a trained model as it reads a built-in one. At most `MAX_OWN`: the oldest goes first."""

    MAX_OWN = 8

    def __init__(self, shared: ModelRegistry):
        self.shared = shared
        self.own: dict[str, OwnModel] = {}

    @staticmethod
    def of(registry: ModelRegistry | PersonalRegistry) -> PersonalRegistry:
        """`registry` if it is a user's already, else a new user's view of the shared one."""
        return registry if isinstance(registry, PersonalRegistry) else PersonalRegistry(registry)

    def add(self, model: OwnModel) -> str:
        """Add `model` under its label, and return the name it has: the same model again (its description the
        same) replaces the earlier and becomes the newest; another model whose label is taken is numbered, "… (2)"."""
        label, number = model.description.label, 1
        name = label
        while name in self.own and dataclasses.replace(self.own[name].description, label=label) != model.description:
            number += 1
            name = f"{label} ({number})"
        if name != label:
            model = dataclasses.replace(model, description=dataclasses.replace(model.description, label=name))
        self.own.pop(name, None)
        self.own[name] = model
        while len(self.own) > self.MAX_OWN:
            del self.own[next(iter(self.own))]
        return name

    @property
    def builtin(self) -> list[str]:
        return self.shared.builtin

    @property
    def folder(self) -> Path:
        return self.shared.folder

    def get(self, name: str) -> Checkpoint:
        return self.own[name].checkpoint if name in self.own else self.shared.get(name)

    def default(self, language: str = "en") -> tuple[str, str]:
        return self.shared.default(language)

    def describe(self, name: str) -> ModelDescription:
        return self.own[name].description if name in self.own else self.shared.describe(name)

    def picker_label(self, name: str) -> str:
        return name if name in self.own else self.shared.picker_label(name)

    def examples(self, name: str) -> tuple[tuple[str, str], ...]:
        return self.own[name].examples if name in self.own else self.shared.examples(name)
