"""Our checkpoint format and our own sentencepiece tokenizers."""

from __future__ import annotations

import json

import pytest
import torch

from tests.conftest import ENGLISH, GERMAN, tiny_model
from transformer.checkpoint import CheckpointError, load_checkpoint, save_checkpoint, untrained_model
from transformer.decoding import translate
from transformer.hub import load_pretrained
from transformer.marian import load_marian
from transformer.tokenizer import Tokenizer


@pytest.fixture
def own_tokenizer(own_spm):
    return Tokenizer.from_files(own_spm)


def own_model(tokenizer, **overrides):
    size = tokenizer.source.size
    return tiny_model(
        src_vocab_size=size,
        tgt_vocab_size=size,
        pad_id=tokenizer.pad_id,
        eos_id=tokenizer.eos_id,
        decoder_start_id=tokenizer.bos_id,
        **overrides,
    )


def logits(checkpoint, text="The weather is nice today."):
    src = torch.tensor([checkpoint.tokenizer.encode_source(text)])
    tgt = torch.tensor([[checkpoint.model.config.decoder_start_id, 10, 11, 12]])
    with torch.no_grad():
        return checkpoint.model(src, tgt).logits


# ---- our sentencepiece tokenizer ----------------------------------------------------------------------------


def test_own_tokenizer_uses_sentencepiece_ids_and_appends_eos(own_tokenizer, own_spm):
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(own_spm))
    for text in ENGLISH + GERMAN:
        assert own_tokenizer.encode_source(text) == processor.encode(text) + [processor.eos_id()]
        assert own_tokenizer.decode_target(own_tokenizer.encode_target(text)) == text
    assert (own_tokenizer.pad_id, own_tokenizer.unk_id, own_tokenizer.bos_id, own_tokenizer.eos_id) == (0, 1, 2, 3)
    assert own_tokenizer.shared_vocabulary


def test_typed_special_tokens_stay_text(own_tokenizer):
    ids = own_tokenizer.encode_source("a </s> b <pad>")
    assert ids.count(own_tokenizer.eos_id) == 1 and ids[-1] == own_tokenizer.eos_id
    assert own_tokenizer.pad_id not in ids


def test_a_file_that_is_not_a_sentencepiece_model_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.spm"
    bad.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a valid sentencepiece model"):
        Tokenizer.from_files(bad)


# ---- save and load ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides", [dict(share_embeddings=True), dict(tie_output=False, final_logits_bias=True)])
def test_save_then_load_gives_identical_outputs(own_tokenizer, tmp_path, overrides):
    model = own_model(own_tokenizer, **overrides)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)  # not the initial values
    folder = save_checkpoint(model=model, tokenizer=own_tokenizer, folder=tmp_path / "ckpt", card="# Tiny\n")
    assert {p.name for p in folder.iterdir()} >= {"config.json", "model.safetensors", "source.spm", "MODEL_CARD.md"}
    loaded = load_checkpoint(folder)
    assert loaded.model.config == model.config
    assert loaded.card == "# Tiny\n"
    original = type(loaded)(model, own_tokenizer, "original")
    torch.testing.assert_close(logits(loaded), logits(original), atol=0, rtol=0)
    assert translate(loaded, "Where is the train station?", max_new_tokens=8) == translate(
        original, "Where is the train station?", max_new_tokens=8
    )
    if model.config.share_embeddings:
        assert loaded.model.src_embed.tokens.weight is loaded.model.tgt_embed.tokens.weight


def test_float16_storage_halves_the_file_and_loads_as_float32(own_tokenizer, tmp_path):
    model = own_model(own_tokenizer)
    full = save_checkpoint(model=model, tokenizer=own_tokenizer, folder=tmp_path / "fp32")
    half = save_checkpoint(model=model, tokenizer=own_tokenizer, folder=tmp_path / "fp16", dtype=torch.float16)
    assert (half / "model.safetensors").stat().st_size < 0.6 * (full / "model.safetensors").stat().st_size
    loaded = load_checkpoint(half)
    assert all(p.dtype == torch.float32 for p in loaded.model.parameters())
    torch.testing.assert_close(logits(loaded), logits(load_checkpoint(full)), atol=1e-2, rtol=1e-2)


def test_marian_import_can_be_saved_in_our_format(marian, tmp_path):
    folder, _ = marian
    imported = load_marian(folder)
    saved = load_checkpoint(save_checkpoint(imported, tmp_path / "converted"))
    torch.testing.assert_close(logits(saved, ENGLISH[1]), logits(imported, ENGLISH[1]), atol=0, rtol=0)
    assert saved.tokenizer.encode_source(ENGLISH[1]) == imported.tokenizer.encode_source(ENGLISH[1])
    assert load_pretrained(tmp_path / "converted").model.config == imported.model.config


@pytest.mark.parametrize("name", ["en-de", "en-de-untrained", "numbers-de", "numbers-de-untrained"])
def test_load_pretrained_loads_every_shipped_folder_as_load_checkpoint_does(name):
    """An untrained twin has twin.json, not config.json: it was read as a Marian folder, and failed."""
    from tests.conftest import CHECKPOINTS

    loaded, expected = load_pretrained(CHECKPOINTS / name), load_checkpoint(CHECKPOINTS / name)
    assert loaded.model.config == expected.model.config
    torch.testing.assert_close(loaded.model.state_dict(), expected.model.state_dict(), rtol=0, atol=0)


@pytest.fixture
def saved(own_tokenizer, tmp_path):
    return save_checkpoint(model=own_model(own_tokenizer), tokenizer=own_tokenizer, folder=tmp_path / "ckpt")


def test_truncated_weights_are_a_clear_error(saved):
    weights = saved / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="corrupted or truncated"):
        load_checkpoint(saved)


def test_corrupted_header_is_a_clear_error(saved):
    weights = saved / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[8:24] = b"\xff" * 16
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupted or truncated"):
        load_checkpoint(saved)


def test_nan_weights_are_a_clear_error(saved):
    from safetensors.torch import load_file, save_file

    state = load_file(saved / "model.safetensors")
    name = next(iter(state))
    state[name][0] = float("nan")
    save_file(state, saved / "model.safetensors")
    with pytest.raises(CheckpointError, match="NaN"):
        load_checkpoint(saved)


def test_weights_that_do_not_fit_the_config_are_a_clear_error(saved):
    config = json.loads((saved / "config.json").read_text())
    config["model"]["d_ff"] = 64
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="has shape"):
        load_checkpoint(saved)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c["model"].update(d_model=-4), "positive"),
        (lambda c: c["model"].update(rotary=True), "unknown key"),
        (lambda c: c.update(format="other"), "not a transformer-explorer checkpoint"),
        (lambda c: c["tokenizer"].update(source_model="../../etc/passwd"), "plain file name"),
    ],
)
def test_bad_config_is_a_clear_error(saved, edit, message):
    config = json.loads((saved / "config.json").read_text())
    edit(config)
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(saved)


def test_missing_folder_or_files_are_clear_errors(saved, tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint folder"):
        load_checkpoint(tmp_path / "nowhere")
    (saved / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="missing weights file"):
        load_checkpoint(saved)


def test_hub_download_fetches_only_marian_files_and_prefers_safetensors(marian, tmp_path, monkeypatch):
    """The Hub is out of reach in tests: stand in for it with the local tiny model and check what is asked for."""
    folder, _ = marian
    asked = {"files": []}
    stand_in_for_the_hub(monkeypatch, folder, asked)
    checkpoint = load_pretrained("Helsinki-NLP/opus-mt-tiny")
    assert checkpoint.name == "Helsinki-NLP/opus-mt-tiny"
    assert asked["files"] == ["config.json", "snapshot"]  # the config first, to check the model's size
    assert "model.safetensors" in asked["patterns"] and "pytorch_model.bin" not in asked["patterns"]
    assert not any("*" in p for p in asked["patterns"])


def stand_in_for_the_hub(monkeypatch, folder, asked: dict) -> None:
    """The Hub's two download functions, answering with `folder`'s files and noting what was asked for."""
    import huggingface_hub

    def fake_hf_hub_download(repo_id, filename, *, revision=None, cache_dir=None):
        asked["files"].append(filename)
        return str(folder / filename)

    def fake_snapshot_download(repo_id, *, revision=None, cache_dir=None, allow_patterns=None):
        asked["files"].append("snapshot")
        asked["patterns"] = allow_patterns
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_hf_hub_download)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)


def test_a_hub_model_over_the_size_budget_is_refused_before_its_weights_are_downloaded(marian, tmp_path, monkeypatch):
    import json
    import shutil

    folder = tmp_path / "huge"
    shutil.copytree(marian[0], folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"vocab_size": 2**31}))
    asked = {"files": []}
    stand_in_for_the_hub(monkeypatch, folder, asked)
    with pytest.raises(CheckpointError, match="larger than this server takes"):
        load_pretrained("someone/huge")
    assert asked["files"] == ["config.json"]  # no weights asked for


def test_big_weights_are_sharded_and_load_back_identically(own_tokenizer, tmp_path):
    model = own_model(own_tokenizer, tie_output=False)
    folder = save_checkpoint(model=model, tokenizer=own_tokenizer, folder=tmp_path / "sharded", max_file_bytes=4000)
    shards = sorted(folder.glob("model-*.safetensors"))
    assert len(shards) > 3 and not (folder / "model.safetensors").exists()
    assert all(f.stat().st_size < 4000 + 2000 for f in shards)  # tensor bytes plus a small header
    loaded = load_checkpoint(folder)
    original = type(loaded)(model, own_tokenizer, "original")
    torch.testing.assert_close(logits(loaded), logits(original), atol=0, rtol=0)
    shards[0].unlink()
    with pytest.raises(CheckpointError, match="missing weights file"):
        load_checkpoint(folder)


def test_untrained_twin_has_the_same_shape_and_tokenizer_but_new_weights(saved, tmp_path):
    from transformer.convert import main as convert_cli

    convert_cli(["twin", str(saved), str(tmp_path / "twin"), "--seed", "5"])
    original, twin = load_checkpoint(saved), load_checkpoint(tmp_path / "twin")
    assert twin.model.config == original.model.config
    assert twin.tokenizer.encode_source(ENGLISH[0]) == original.tokenizer.encode_source(ENGLISH[0])
    assert not torch.equal(twin.model.src_embed.tokens.weight, original.model.src_embed.tokens.weight)
    assert "randomly initialised" in twin.card


def test_a_twin_folder_holds_no_weights_and_draws_the_same_weights_at_every_load(saved, tmp_path):
    from transformer.convert import main as convert_cli

    convert_cli(["twin", str(saved), str(tmp_path / "twin"), "--seed", "3"])
    assert sorted(f.name for f in (tmp_path / "twin").iterdir()) == ["MODEL_CARD.md", "twin.json"]
    first, second = load_checkpoint(tmp_path / "twin"), load_checkpoint(tmp_path / "twin")
    before = torch.get_rng_state()
    untrained_model(first.model.config, seed=3)
    assert torch.equal(torch.get_rng_state(), before)  # drawing a twin leaves the global random state alone
    for (name, a), b in zip(first.model.state_dict().items(), second.model.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    model = first.model
    d = model.config.d_model
    assert model.src_embed.tokens.weight.std().item() == pytest.approx(d**-0.5, rel=0.1)  # the model's own rules
    assert all(torch.all(p == 1) for n, p in model.named_parameters() if "norm" in n and n.endswith("weight"))
    assert all(torch.all(p == 0) for n, p in model.named_parameters() if n.endswith("bias"))
    convert_cli(["twin", str(saved), str(tmp_path / "other"), "--seed", "4"])
    other = load_checkpoint(tmp_path / "other").model
    assert not torch.equal(other.src_embed.tokens.weight, model.src_embed.tokens.weight)


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"twin_of": "../elsewhere", "seed": 0}, "must name a checkpoint folder"),
        ({"twin_of": "ckpt", "seed": "0"}, "integer seed"),
        ({"twin_of": "missing", "seed": 0}, "no such checkpoint folder"),
        ({"twin_of": "twin", "seed": 0}, "is itself a twin"),
    ],
)
def test_a_bad_twin_json_is_a_clear_error(saved, tmp_path, spec, message):
    folder = tmp_path / "twin"
    folder.mkdir()
    (folder / "twin.json").write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(folder)


def test_a_twin_lives_next_to_its_checkpoint(saved, tmp_path):
    from transformer.checkpoint import write_twin

    with pytest.raises(ValueError, match="next to its checkpoint"):
        write_twin(saved, tmp_path / "sub" / "twin")
