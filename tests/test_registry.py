"""The model registry as the app uses it: one load per model however many users ask, and bad models rejected with
a message while the app goes on with the models it has (issue 6)."""

from __future__ import annotations

import json
import pickle
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from explorer import Explorer, ExplorerError, ExplorerState, ModelRegistry
from explorer.i18n import speaking
from tests.conftest import CHECKPOINTS, ROOT, build_marian
from tests.test_marian import Payload
from transformer.checkpoint import CheckpointError
from transformer.marian import load_marian


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """A tiny random Marian model in the Hugging Face layout, standing in for a Hub download."""
    folder = tmp_path_factory.mktemp("tiny-marian")
    build_marian(folder, shared=True)
    return folder


def test_many_users_asking_for_the_same_model_cause_one_load(tiny):
    calls, started = [], threading.Event()

    def slow_loader(name, device):
        calls.append(name)
        started.set()
        time.sleep(0.3)  # everyone else arrives while the first load runs
        return load_marian(tiny, device)

    registry = ModelRegistry(CHECKPOINTS, loader=slow_loader)
    with ThreadPoolExecutor(8) as pool:
        models = list(pool.map(lambda _: registry.get("Helsinki-NLP/opus-mt-tiny"), range(8)))
    assert calls == ["Helsinki-NLP/opus-mt-tiny"]
    assert all(m is models[0] for m in models)


def test_a_failed_load_is_remembered_for_a_while_then_tried_again(tiny):
    """A hostile model cost seconds of CPU and gigabytes on every click: a failure is remembered (`failed_load_s`,
    `EXPLORER_FAILED_LOAD_S`), its message given at once, and the model tried again only after that."""
    attempts = []

    def flaky_loader(name, device):
        attempts.append(name)
        if len(attempts) == 1:
            raise CheckpointError(f"{name}: download failed (ConnectionError: reset by peer)")
        return load_marian(tiny, device)

    registry = ModelRegistry(CHECKPOINTS, loader=flaky_loader)
    for _ in range(3):
        with pytest.raises(ExplorerError, match="download failed"):
            registry.get("owner/model")
    assert len(attempts) == 1
    registry.failed_load_s = 0.0  # its while has passed
    assert registry.get("owner/model").model is not None
    assert len(attempts) == 2


@pytest.fixture(scope="module")
def bad_models(tmp_path_factory, tiny):
    """Marian folders that must be refused: a pickle payload, truncated weights, impossible sizes, not Marian."""
    root = tmp_path_factory.mktemp("bad")
    folders = {}

    def copy_of(name):
        folder = root / name
        folder.mkdir()
        for file in tiny.iterdir():
            (folder / file.name).write_bytes(file.read_bytes())
        folders[f"evil/{name}"] = folder
        return folder

    pickled = copy_of("pickle")
    (pickled / "model.safetensors").unlink()
    with open(pickled / "pytorch_model.bin", "wb") as f:
        pickle.dump({"model.shared.weight": Payload()}, f)
    truncated = copy_of("truncated")
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    sizes = copy_of("sizes")
    config = json.loads((sizes / "config.json").read_text())
    (sizes / "config.json").write_text(json.dumps({**config, "d_model": 15}))  # 15 is not divisible by 2 heads
    bert = copy_of("bert")
    (bert / "config.json").write_text(json.dumps({**config, "model_type": "bert"}))
    # sizes that would cost gigabytes before a weight is checked (issue 36 §4)
    positions = copy_of("positions")
    (positions / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 10**7}))
    vocabulary = copy_of("vocabulary")
    (vocabulary / "config.json").write_text(json.dumps({**config, "vocab_size": 2**31}))
    deep = copy_of("deep")
    (deep / "config.json").write_text("[" * 5000 + "]" * 5000)
    return folders


@pytest.mark.parametrize(
    "name, message",
    [
        ("evil/pickle", "refused to load"),
        ("evil/truncated", "corrupted or truncated"),
        ("evil/sizes", "impossible model sizes"),
        ("evil/bert", "not a Marian model"),
        ("evil/positions", "10,000,000 positions is more than this server takes"),
        ("evil/vocabulary", "parameters is larger than this server takes"),
        ("evil/deep", "not valid JSON"),
    ],
)
def test_bad_models_are_refused_with_a_message_and_the_app_goes_on(bad_models, name, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the payload would write its file
    registry = ModelRegistry(CHECKPOINTS, loader=lambda repo, device: load_marian(bad_models[repo], device))
    with pytest.raises(ExplorerError, match=message):
        Explorer(registry, ExplorerState(model=name, source="twenty-one"))
    assert not (tmp_path / "PWNED").exists()
    working = Explorer(registry, ExplorerState(model="numbers-de", source="twenty-one"))
    list(working.run())
    assert working.snapshot().output_text == "einundzwanzig"


def hub_cache_with(tmp_path: Path, repo_id: str, source: Path) -> Path:
    """A Hugging Face cache holding `source`'s files as the main revision of `repo_id` (the layout the hub uses)."""
    cache = tmp_path / "hub-cache"
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    for file in source.iterdir():
        (snapshot / file.name).write_bytes(file.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    return cache


def cached_registry(cache: Path) -> ModelRegistry:
    from functools import partial

    from transformer.hub import load_hub_model

    return ModelRegistry(CHECKPOINTS, loader=partial(load_hub_model, cache_dir=cache), hub_cache=cache)


def test_the_page_opens_on_opus_mt_when_it_is_in_the_local_cache(tmp_path, monkeypatch):
    from explorer.registry import HUB_DEFAULT

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    build_marian(tmp_path / "tiny", shared=True)
    registry = cached_registry(hub_cache_with(tmp_path, HUB_DEFAULT, tmp_path / "tiny"))
    assert registry.default() == (HUB_DEFAULT, "")
    assert registry.get(HUB_DEFAULT).name == HUB_DEFAULT  # loaded into our own code, from the cache, offline


def test_a_corrupt_cached_copy_falls_back_to_the_built_in_model_with_a_note(tmp_path, monkeypatch):
    from explorer.registry import HUB_DEFAULT

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    build_marian(tmp_path / "tiny", shared=True)
    cache = hub_cache_with(tmp_path, HUB_DEFAULT, tmp_path / "tiny")
    for weights in cache.rglob("model.safetensors"):
        weights.write_bytes(b"not a safetensors file")
    name, note = cached_registry(cache).default()
    assert name == "en-de" and "could not be loaded" in note and HUB_DEFAULT in note
    with speaking("zh"):  # the note of a page in Chinese (a page works it out once a language: Page.default_for)
        name, note = cached_registry(cache).default()
    assert name == "en-de" and "无法加载" in note and HUB_DEFAULT in note


def test_with_an_empty_cache_the_page_opens_on_the_built_in_model_at_once(tmp_path):
    assert cached_registry(tmp_path / "empty").default() == ("en-de", "")


@pytest.mark.slow
def test_the_app_opens_on_the_cached_opus_mt_offline(tmp_path):
    """The whole app, in its own process, with a temporary Hugging Face cache (HF_HUB_CACHE, HF_HUB_OFFLINE=1): on
    opus-mt-en-de where the cache holds it, on the built-in en-de where it is empty."""
    import os
    import subprocess
    import sys

    from explorer.registry import HUB_DEFAULT

    build_marian(tmp_path / "tiny", shared=True)
    cache = hub_cache_with(tmp_path, HUB_DEFAULT, tmp_path / "tiny")
    show = (
        "import app; print(next(b.value for b in app.demo.blocks.values() if getattr(b, 'elem_id', '') == "
        "'model-select'))"
    )
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    opened = subprocess.run([sys.executable, "-c", show], cwd=ROOT, env=env, capture_output=True, text=True)
    assert opened.stdout.strip().splitlines()[-1] == HUB_DEFAULT, opened.stderr[-2000:]
    env["HF_HUB_CACHE"] = str(tmp_path / "empty")
    opened = subprocess.run([sys.executable, "-c", show], cwd=ROOT, env=env, capture_output=True, text=True)
    assert opened.stdout.strip().splitlines()[-1] == "en-de", opened.stderr[-2000:]


def test_the_model_picker_describes_every_built_in_model_with_the_figures_of_its_card(registry):
    """Issue 13: source, size and measured quality; the numbers are those of the model card."""
    for name in registry.builtin:
        about = registry.describe(name)
        assert about.label.startswith(f"{name} · ") and about.source and about.size and about.quality
        card = (CHECKPOINTS / name / "MODEL_CARD.md").read_text(encoding="utf-8")
        twin_of = name.removesuffix("-untrained")
        card += (CHECKPOINTS / twin_of / "MODEL_CARD.md").read_text(encoding="utf-8")
        for number in re.findall(r"\d[\d,]*\.\d+|\d{1,3}(?:,\d{3})+", about.size + about.quality):
            assert number in card, f"{name}: {number} is not in its model card"
    unknown = registry.describe("Helsinki-NLP/opus-mt-en-it")
    assert "Helsinki-NLP/opus-mt-en-it" in unknown.source and "**Quality.**" in unknown.markdown()


def test_a_hub_model_shows_the_examples_of_the_built_in_model_that_reads_its_language(registry):
    en_de = registry.examples("en-de")
    assert registry.examples("Helsinki-NLP/opus-mt-en-de") == en_de
    assert registry.examples("en-de-untrained") == en_de
    en_zh = registry.examples("Helsinki-NLP/opus-mt-en-zh")  # needs a code for the Chinese it writes
    assert en_zh and all(sentence.startswith(">>cmn_Hans<< ") for sentence, _ in en_zh)
    assert [s.removeprefix(">>cmn_Hans<< ") for s, _ in en_zh] == [s for s, label in en_de if s == label]
    if "zh-en" in registry.builtin:  # opus-mt-zh-en reads Chinese: the built-in zh-en's sentences
        assert registry.examples("Helsinki-NLP/opus-mt-zh-en") == registry.examples("zh-en")


def test_a_page_in_chinese_opens_on_zh_en_or_on_a_cached_opus_mt_zh_en(tmp_path, tiny):
    registry = ModelRegistry(CHECKPOINTS, loader=lambda name, device: load_marian(tiny, device), hub_cache=tmp_path)
    assert registry.default("zh") == ("zh-en", "")
    snapshot = tmp_path / "models--Helsinki-NLP--opus-mt-zh-en" / "snapshots" / "0"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "models--Helsinki-NLP--opus-mt-zh-en" / "refs").mkdir()
    (tmp_path / "models--Helsinki-NLP--opus-mt-zh-en" / "refs" / "main").write_text("0")
    assert registry.default("zh") == ("Helsinki-NLP/opus-mt-zh-en", "")
    assert registry.default("en")[0] == "en-de"  # opus-mt-en-de is not in this cache


def test_a_model_whose_weights_are_over_the_budget_is_refused_before_it_is_built(tiny, monkeypatch):
    from transformer import marian

    def never(config):
        raise AssertionError("the model was built")

    monkeypatch.setattr(marian, "MAX_PARAMETERS", marian.parameter_count(load_marian(tiny).model.config) - 1)
    monkeypatch.setattr(marian.Transformer, "on_cpu", staticmethod(never))
    with pytest.raises(CheckpointError, match="larger than this server takes"):
        load_marian(tiny)


def test_the_parameter_count_of_a_config_is_the_models_own(tiny):
    from transformer.marian import parameter_count

    model = load_marian(tiny).model
    held = sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in model.buffers())  # each tie once
    assert parameter_count(model.config) == held


def test_a_hub_models_message_shows_no_path_of_the_server(tmp_path, tiny):
    cache = hub_cache_with(tmp_path, "owner/broken", tiny)
    weights = next(cache.rglob("model.safetensors"))
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(ExplorerError) as refused:
        cached_registry(cache).get("owner/broken")
    message = str(refused.value)
    assert "corrupted or truncated" in message and "owner/broken/model.safetensors" in message
    assert str(tmp_path) not in message and "snapshots" not in message
