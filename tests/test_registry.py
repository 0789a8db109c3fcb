"""The model registry as the app uses it: one load per model however many users ask, and bad models rejected with
a message while the app goes on with the models it has (issue 6)."""

from __future__ import annotations

import json
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from explorer import Explorer, ExplorerError, ExplorerState, ModelRegistry
from tests.conftest import build_marian
from tests.test_marian import Payload
from transformer.checkpoint import CheckpointError, load_marian

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


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


def test_a_failed_load_is_not_remembered_and_the_next_attempt_loads_again(tiny):
    attempts = []

    def flaky_loader(name, device):
        attempts.append(name)
        if len(attempts) == 1:
            raise CheckpointError(f"{name}: download failed (ConnectionError: reset by peer)")
        return load_marian(tiny, device)

    registry = ModelRegistry(CHECKPOINTS, loader=flaky_loader)
    with pytest.raises(ExplorerError, match="download failed"):
        registry.get("owner/model")
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
    return folders


@pytest.mark.parametrize(
    "name, message",
    [
        ("evil/pickle", "refused to load"),
        ("evil/truncated", "corrupted or truncated"),
        ("evil/sizes", "impossible model sizes"),
        ("evil/bert", "not a Marian model"),
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
    assert working.views().output_text == "einundzwanzig"
