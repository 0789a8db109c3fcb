"""A model trained in the Train tab as one file (transformer.training.model_file): what Download writes is a real
safetensors file that reads back to the same model, and every file Load is given is untrusted input: a bad one is
refused with a message that says why, and nothing in it is ever unpickled."""

from __future__ import annotations

import io
import json
import pickle
import random
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from transformer.checkpoint import unique_state_dict
from transformer.model import Transformer
from transformer.training import model_file
from transformer.training.batches import collate
from transformer.training.live import LiveRun, LiveSetup
from transformer.training.model_file import (
    FILE_FORMAT,
    FILE_VERSION,
    MAX_FILE_BYTES,
    ModelFileError,
    TrainedModel,
    read_model_file,
)

TINY = LiveSetup(task="reverse", layers=1, heads=2, d_model=32, batch_size=16, seed=3)
STEPS = 3
SECONDS = 12.5  # the file keeps one decimal
WEIGHT = "encoder_layers.0.self_attn.q_proj.weight"  # any weight the file holds
METADATA_KEYS = {"format", "version", "setup", "config", "vocabulary", "step", "seconds"}


@pytest.fixture(scope="module")
def run() -> LiveRun:
    """The tiny run, trained a few steps; only read by the tests."""
    run = LiveRun(TINY)
    for _ in range(STEPS):
        run.train_step()
    return run


@pytest.fixture(scope="module")
def trained(run) -> TrainedModel:
    return TrainedModel(TINY, run.snapshot(SECONDS, {}).weights, run.step, SECONDS)


@pytest.fixture(scope="module")
def good(trained) -> bytes:
    return trained.to_bytes()


def parts(data: bytes) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """A file's weights and metadata, each a new dict to change."""
    header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
    return dict(load_safetensors(data)), dict(header["__metadata__"])


def refused(data: bytes) -> str:
    """The message a file is refused with."""
    with pytest.raises(ModelFileError) as error:
        read_model_file(data)
    return str(error.value)


def test_a_model_file_reads_back_to_the_same_setup_step_seconds_and_weights(run, trained, good):
    back = read_model_file(good)
    assert back.setup == TINY and back.step == STEPS and back.seconds == SECONDS
    expected = run.model.state_dict()
    assert back.weights.keys() == expected.keys()
    assert all(torch.equal(back.weights[name], expected[name]) for name in expected)
    assert all(back.weights[name].dtype == torch.float32 for name in expected)
    assert trained.file_name() == "reverse-1x2x32-step3.safetensors"
    later = read_model_file(TrainedModel(TINY, trained.weights, 7, 1.04).to_bytes())
    assert (later.step, later.seconds) == (7, 1.0)  # the seconds to a tenth


def test_a_model_read_back_computes_the_same_logits_as_the_run_it_came_from(run, good):
    checkpoint = read_model_file(good).checkpoint("mine")
    src, tgt_in, _ = collate(run.batch(1), "cpu")
    run.model.eval()
    with torch.no_grad():
        expected = run.model(src, tgt_in).logits
        logits = checkpoint.model(src, tgt_in).logits
    assert torch.equal(logits, expected)
    assert checkpoint.name == "mine" and not checkpoint.model.training
    assert checkpoint.tokenizer is TINY.toy_task.tokenizer
    assert checkpoint.generation == {"max_length": TINY.toy_task.positions - 1}
    assert not any(p.requires_grad for p in checkpoint.model.parameters())


def test_a_model_file_is_a_safetensors_file_with_everything_in_its_metadata(good, tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(good)
    with safe_open(str(path), framework="pt") as opened:
        metadata = opened.metadata()
        names = set(opened.keys())
    assert set(metadata) == METADATA_KEYS
    assert metadata["format"] == FILE_FORMAT and metadata["version"] == FILE_VERSION == "1"
    assert LiveSetup.from_json(metadata["setup"]) == TINY
    assert json.loads(metadata["config"]) == TINY.config().to_dict()
    assert json.loads(metadata["vocabulary"]) == list(TINY.toy_task.pieces)
    assert metadata["step"] == str(STEPS) and metadata["seconds"] == "12.5"
    model = Transformer(TINY.config())
    assert names == set(unique_state_dict(model)) and len(names) < len(model.state_dict())  # tied weights once
    weights = load_safetensors(good)
    assert all(tensor.dtype == torch.float32 for tensor in weights.values())


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(good, monkeypatch):
    assert "at most 16 MB" in refused(b"\0" * (MAX_FILE_BYTES + 1))
    assert "is not a safetensors file" in refused(b"\0" * MAX_FILE_BYTES)  # at the limit: read, then refused
    monkeypatch.setattr(model_file, "MAX_FILE_BYTES", len(good) - 1)
    assert refused(good).startswith("the file is 0.1 MB: a model trained in this page is at most")
    monkeypatch.setattr(model_file, "MAX_FILE_BYTES", len(good))
    assert read_model_file(good).step == STEPS


def test_an_empty_file_is_refused():
    assert refused(b"") == "the file is empty"


def test_a_pickle_is_refused_as_a_pickle_whichever_way_it_was_written(run):
    zipped, legacy = io.BytesIO(), io.BytesIO()
    torch.save(run.model.state_dict(), zipped)
    torch.save(run.model.state_dict(), legacy, _use_new_zipfile_serialization=False)
    raw = pickle.dumps({name: t.numpy() for name, t in run.model.state_dict().items()})
    for data in (zipped.getvalue(), legacy.getvalue(), raw):
        assert data[:2] == b"PK" or data[:1] == b"\x80"
        message = refused(data)
        assert message.startswith("this is a pickle file (torch.save, .pt or .bin): it could run code when read")
        assert ".safetensors" in message


@pytest.mark.parametrize(
    "data, message",
    [
        (random.Random(0).randbytes(5000), "this is not a safetensors file (.safetensors): its header cannot be read"),
        (b"short", "its header cannot be read"),
        ((10).to_bytes(8, "little") + b"not json!!", "not a safetensors file (.safetensors): its header is not JSON"),
        ((4).to_bytes(8, "little") + b"\xff\xfe{}", "its header is not JSON"),
        ((3).to_bytes(8, "little") + b"[1]", "is not a model trained in this page's Train tab"),
        ((2).to_bytes(8, "little") + b"{}", "its metadata does not say format=transformer-explorer/trained-model"),
        (pickle.dumps({"a": 1}, protocol=0), "this is a pickle file"),  # a pickle that does not start with \x80
    ],
    ids=["random", "short", "not-json", "not-utf8", "a-list", "no-metadata", "pickle-protocol-0"],
)
def test_bytes_that_are_not_a_safetensors_file_are_refused(data, message):
    assert message in refused(data)


def test_a_truncated_file_is_refused_as_damaged(good):
    header_end = 8 + int.from_bytes(good[:8], "little")
    assert "its header cannot be read" in refused(good[: header_end - 1])
    for cut in (header_end, header_end + 100, len(good) - 1):
        assert refused(good[:cut]).startswith("the weights cannot be read: the file is damaged")


def test_a_safetensors_file_saved_without_this_page_s_metadata_is_refused():
    weights = unique_state_dict(Transformer(TINY.config()))
    message = "this safetensors file is not a model trained in this page's Train tab"
    assert refused(save_safetensors(dict(weights))).startswith(message)
    assert message in refused(save_safetensors(dict(weights), metadata={"format": "pt"}))


def changed_metadata(**changes: str):
    return lambda weights, metadata: (weights, metadata | changes)


def other_setup_json(**changes) -> str:
    return json.dumps(json.loads(TINY.to_json()) | changes)


def without(name: str):
    return lambda weights, metadata: ({k: v for k, v in weights.items() if k != name}, metadata)


def with_weight(name: str, make):
    return lambda weights, metadata: (weights | {name: make(weights)}, metadata)


def nan_in(weights: dict) -> torch.Tensor:
    tensor = weights[WEIGHT].clone()
    tensor[0, 0] = float("nan")
    return tensor


DEEP = "[" * 5000 + "]" * 5000

BAD_FILES = {
    "another-format": (changed_metadata(format="safetensors"), "does not say format=transformer-explorer/trained"),
    "version-2": (changed_metadata(version="2"), "the file's version '2' is not one this page reads"),
    "setup-not-json": (changed_metadata(setup="{layers: 1"), "the file's training setup is not valid: the training"),
    "setup-unknown-setting": (changed_metadata(setup=other_setup_json(colour="red")), "holds unknown settings"),
    "setup-9-layers": (
        changed_metadata(setup=other_setup_json(layers=9)),
        "the file's training setup is not valid: layers must be an integer 1…3",
    ),
    "setup-unknown-task": (changed_metadata(setup=other_setup_json(task="rot13")), "unknown task 'rot13'"),
    "config-other-size": (
        changed_metadata(config=json.dumps(TINY.config().to_dict() | {"d_ff": 64})),
        "the file's model config does not match its training setup",
    ),
    "config-not-json": (changed_metadata(config="{"), "model config does not match its training setup"),
    "config-of-another-setup": (
        changed_metadata(setup=other_setup_json(d_model=64)),
        "the file's model config does not match its training setup",
    ),
    "vocabulary-of-another-task": (
        changed_metadata(vocabulary=json.dumps(list(LiveSetup(task="numbers-de").toy_task.pieces))),
        "the file's vocabulary is not the one of the reverse task",
    ),
    "vocabulary-reordered": (
        changed_metadata(vocabulary=json.dumps(list(reversed(TINY.toy_task.pieces)))),
        "vocabulary is not the one of the reverse task",
    ),
    # JSON nested 5,000 deep raised RecursionError, which nothing caught (issue 36 §4)
    "setup-nested-deep": (changed_metadata(setup=DEEP), "the file's training setup is not valid: the training"),
    "config-nested-deep": (changed_metadata(config=DEEP), "model config does not match its training setup"),
    "vocabulary-nested-deep": (changed_metadata(vocabulary=DEEP), "vocabulary is not the one of the reverse task"),
    "step-negative": (changed_metadata(step="-1"), "the file's step is not a valid number"),
    "step-not-a-number": (changed_metadata(step="three"), "the file's step is not a valid number"),
    "step-fraction": (changed_metadata(step="4.5"), "the file's step is not a valid number"),
    "step-huge": (changed_metadata(step=str(10**9)), "the file's step is not a valid number"),
    "seconds-nan": (changed_metadata(seconds="nan"), "the file's seconds is not a valid number"),
    "seconds-infinite": (changed_metadata(seconds="inf"), "the file's seconds is not a valid number"),
    "missing-weight": (without(WEIGHT), f"missing weights {WEIGHT}"),
    "unexpected-weight": (with_weight("extra.weight", lambda w: torch.zeros(2)), "unexpected weights extra.weight"),
    "wrong-shape": (
        with_weight(WEIGHT, lambda w: torch.zeros(32, 33)),
        f"weight {WEIGHT} has shape (32, 33), the config needs (32, 32)",
    ),
    "float16": (with_weight(WEIGHT, lambda w: w[WEIGHT].half()), f"the weight {WEIGHT} is not float32"),
    "integer": (with_weight(WEIGHT, lambda w: w[WEIGHT].long()), f"the weight {WEIGHT} is not float32"),
    "nan": (with_weight(WEIGHT, nan_in), f"weight {WEIGHT} contains NaN or infinite values"),
    "infinite": (with_weight(WEIGHT, lambda w: w[WEIGHT] / 0), f"weight {WEIGHT} contains NaN or infinite values"),
}


@pytest.mark.parametrize("change, message", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_model_file_with_one_thing_wrong_is_refused_saying_what(good, change, message):
    weights, metadata = change(*parts(good))
    data = save_safetensors(weights, metadata=metadata)
    assert message in refused(data)
    assert not refused(data).startswith("the file: ")  # the checkpoint's prefix is taken off


def test_the_bad_files_differ_from_a_good_one_in_that_one_thing_only(good):
    rebuilt = save_safetensors(*parts(good))
    assert read_model_file(rebuilt).step == STEPS  # so each refusal above is for the change it made


class Payload:
    """A pickle that, when unpickled, creates a file and sets a global: what a malicious model file would do."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return exec, (f"open({self.path!r}, 'w').close(); import sys; sys.PWNED = True",)


def test_reading_a_file_never_unpickles_it(tmp_path):
    created = tmp_path / "created-by-the-pickle"
    zipped = io.BytesIO()
    torch.save({"weights": Payload(str(created))}, zipped)
    for data in (pickle.dumps(Payload(str(created))), zipped.getvalue(), pickle.dumps(Payload(str(created)), 0)):
        with pytest.raises(ModelFileError, match=r"pickle file|not a safetensors file"):
            read_model_file(data)
        assert not created.exists() and not hasattr(sys, "PWNED")
    try:
        pickle.loads(pickle.dumps(Payload(str(created))))  # the payload is live: unpickled, it does both
        assert created.exists() and sys.PWNED is True
    finally:
        sys.__dict__.pop("PWNED", None)


def test_every_file_download_writes_reads_back_whatever_its_header_length():
    setup = LiveSetup(task="reverse", layers=2, heads=1, d_model=128)
    data = TrainedModel(setup, Transformer(setup.config()).state_dict(), 450, 45.0).to_bytes()
    assert data[:1] == b"\x80"  # the header's length, little-endian, is 128 more than a multiple of 256
    assert read_model_file(data).step == 450


@pytest.mark.parametrize("key, value", [("config", 5), ("vocabulary", {"a": 1}), ("step", [1])])
def test_metadata_that_is_not_text_is_refused_as_a_model_file_error(good, key, value):
    header = json.loads(good[8 : 8 + int.from_bytes(good[:8], "little")])
    header["__metadata__"][key] = value
    text = json.dumps(header).encode()
    with pytest.raises(ModelFileError):
        read_model_file(len(text).to_bytes(8, "little") + text)


def test_an_upload_too_large_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "big.safetensors"
    path.write_bytes(b"\0" * 2048)
    monkeypatch.setattr(model_file, "MAX_FILE_BYTES", 1024)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("read before its size was checked"))
    with pytest.raises(ModelFileError, match="at most 0 MB"):
        model_file.read_model_path(path)
    with pytest.raises(ModelFileError, match="cannot be read"):
        model_file.read_model_path(tmp_path / "missing.safetensors")


def test_a_header_nested_thousands_deep_is_refused_as_not_json():
    header = DEEP.encode()
    assert "its header is not JSON" in refused(len(header).to_bytes(8, "little") + header)
