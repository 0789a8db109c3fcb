"""Our model, loaded from Marian checkpoints, against transformers' MarianMTModel (eager attention); imported onto
each device present for the tests that take `device` (conftest.py), the Marian model staying on the CPU."""

from __future__ import annotations

import pickle

import pytest
import torch

from tests.conftest import ENGLISH, GERMAN, tiny_model
from transformer.checkpoint import CheckpointError
from transformer.decoding import BeamSearch, Decoding, Greedy, generate
from transformer.hub import load_pretrained
from transformer.marian import load_marian, to_marian

TOL = 1e-4


def batch(checkpoint, sentences):
    """Source ids padded with <pad>, and the attention mask transformers wants."""
    ids = [checkpoint.tokenizer.encode_source(s) for s in sentences]
    width = max(map(len, ids))
    pad = checkpoint.model.config.pad_id
    src = torch.tensor([x + [pad] * (width - len(x)) for x in ids])
    return src, (src != pad).long()


def test_logits_and_every_attention_map_match(marian, device):
    folder, hf = marian
    ours = load_marian(folder, device)
    assert next(ours.model.parameters()).device.type == device
    assert_same_outputs(hf, ours, ENGLISH[:3])


def assert_same_outputs(hf, ours, sentences: list[str]) -> None:
    """transformers' MarianMTModel and our import of it, on three `sentences` and fixed target prefixes: the same
    logits and every attention map, within TOL."""
    src, mask = batch(ours, sentences)
    pad = ours.model.config.pad_id
    tgt = torch.tensor([[pad, 5, 9, 7, 3], [pad, 4, 4, 8, 6], [pad, 11, 3, 5, 5]])
    device = next(ours.model.parameters()).device
    with torch.no_grad():
        theirs = hf(input_ids=src, attention_mask=mask, decoder_input_ids=tgt, output_attentions=True)
        mine = ours.model(src.to(device), tgt.to(device), return_attention=True)
    assert (theirs.logits - mine.logits.cpu()).abs().max() <= TOL
    for their_maps, my_maps in [
        (theirs.encoder_attentions, mine.attention.encoder),
        (theirs.decoder_attentions, mine.attention.decoder_self),
        (theirs.cross_attentions, mine.attention.cross),
    ]:
        assert len(their_maps) == len(my_maps) == 2
        for a, b in zip(their_maps, my_maps, strict=True):
            assert a.shape == b.shape
            assert (a - b.cpu()).abs().max() <= TOL


def test_greedy_output_matches_generate(marian, device):
    folder, hf = marian
    ours = load_marian(folder, device)
    for sentence in ENGLISH:
        src = ours.tokenizer.encode_source(sentence)
        expected = hf.generate(torch.tensor([src]), num_beams=1, do_sample=False, max_length=20)[0, 1:].tolist()
        decoding = Decoding(ours.model, src, Greedy(), max_new_tokens=19)
        decoding.run()
        assert decoding.output_ids == expected[: len(decoding.output_ids)]
        assert all(t == ours.model.config.pad_id for t in expected[len(decoding.output_ids) :])


@pytest.mark.slow
@pytest.mark.parametrize("width, length_penalty", [(2, 1.0), (4, 1.0), (3, 0.6)])
def test_beam_search_output_matches_generate(marian, width, length_penalty):
    folder, hf = marian
    ours = load_marian(folder)
    differs_from_greedy = 0
    for sentence in ENGLISH:
        src = ours.tokenizer.encode_source(sentence)
        expected = hf.generate(
            torch.tensor([src]), num_beams=width, length_penalty=length_penalty, do_sample=False, max_length=16
        )[0, 1:].tolist()
        decoding = Decoding(ours.model, src, BeamSearch(width, length_penalty), max_new_tokens=15)
        decoding.run()
        got = decoding.output_ids
        assert got == expected[: len(got)], sentence
        assert all(t == ours.model.config.pad_id for t in expected[len(got) :])
        greedy = Decoding(ours.model, src, Greedy(), max_new_tokens=15)
        greedy.run()
        differs_from_greedy += greedy.output_ids != got
    assert differs_from_greedy > 0, "the test models should be ones where beam search matters"


def test_tokenizer_matches_marian_tokenizer(marian):
    from transformers import MarianTokenizer

    folder, _ = marian
    separate = (folder / "target_vocab.json").exists()
    theirs = MarianTokenizer(
        str(folder / "source.spm"),
        str(folder / "target.spm"),
        str(folder / "vocab.json"),
        target_vocab_file=str(folder / "target_vocab.json") if separate else None,
        separate_vocabs=separate,
    )
    ours = load_marian(folder).tokenizer
    samples = ENGLISH + ["Unseen words: Quixotic zebras!", "ÄÖÜ ß 東京", "  spaces   around  ", "x"]
    for text in samples:
        assert ours.encode_source(text) == theirs(text)["input_ids"], text
    for text in GERMAN:
        target_ids = theirs(text_target=text)["input_ids"]
        assert ours.encode_target(text) == target_ids, text
        assert ours.decode_target(target_ids) == theirs.decode(target_ids, skip_special_tokens=True), text


def test_unknown_pieces_become_unk_and_eos_is_appended(marian):
    folder, _ = marian
    tokenizer = load_marian(folder).tokenizer
    ids = tokenizer.encode_source("東京")
    assert ids[-1] == tokenizer.source_eos_id == 0
    assert tokenizer.unk_id in ids


def test_pytorch_model_bin_is_loaded_with_weights_only(marian, tmp_path):
    folder, hf = marian
    copy = tmp_path / "bin-only"
    copy.mkdir()
    for f in folder.iterdir():
        if f.name != "model.safetensors":
            (copy / f.name).write_bytes(f.read_bytes())
    torch.save(hf.state_dict(), copy / "pytorch_model.bin")
    from_bin = load_marian(copy)
    from_safetensors = load_marian(folder)
    src = torch.tensor([from_bin.tokenizer.encode_source(ENGLISH[0])])
    tgt = torch.tensor([[from_bin.model.config.pad_id, 4, 5]])
    with torch.no_grad():
        assert torch.equal(from_bin.model(src, tgt).logits, from_safetensors.model(src, tgt).logits)


class Payload:
    """A pickle that would run code when unpickled without weights_only."""

    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('PWNED').write_text('ran')",))


def test_pickle_payload_in_pytorch_model_bin_is_refused(marian, tmp_path, monkeypatch):
    folder, _ = marian
    copy = tmp_path / "evil"
    copy.mkdir()
    for name in ("config.json", "source.spm", "target.spm", "vocab.json", "target_vocab.json"):
        if (folder / name).exists():
            (copy / name).write_bytes((folder / name).read_bytes())
    with open(copy / "pytorch_model.bin", "wb") as f:
        pickle.dump({"model.shared.weight": Payload()}, f)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError, match="refused to load"):
        load_marian(copy)
    assert not (tmp_path / "PWNED").exists()


def test_not_a_marian_model_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(CheckpointError, match="not a Marian model"):
        load_marian(tmp_path)


def test_unknown_or_offline_repo_gives_a_clear_error():
    with pytest.raises(CheckpointError, match=r"Helsinki-NLP/opus-mt-xx-yy.*(not in the local cache|no such model)"):
        load_pretrained("Helsinki-NLP/opus-mt-xx-yy")
    with pytest.raises(CheckpointError, match="not a valid Hub repo id"):
        load_pretrained("../../etc/passwd")


@pytest.mark.parametrize(
    "overrides",
    [
        {"positional_encoding": "sinusoidal_interleaved", "share_embeddings": True},
        {"positional_encoding": "sinusoidal_concat", "tgt_vocab_size": 24, "final_logits_bias": True},
        {"activation": "gelu", "tie_output": False, "share_embeddings": True},
    ],
)
def test_our_models_exported_to_marian_compute_the_same(overrides):
    """`to_marian` (the way back) keeps the function, paper-style interleaved positions included."""
    model = tiny_model(seed=5, **overrides)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)  # non-zero biases and LayerNorms too
    hf = to_marian(model)
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 4, 2, 0, 0]])
    tgt = torch.tensor([[1, 5, 6, 7], [1, 8, 3, 3]])
    with torch.no_grad():
        ours = model(src, tgt, return_attention=True)
        theirs = hf(input_ids=src, attention_mask=(src != 0).long(), decoder_input_ids=tgt, output_attentions=True)
    assert (ours.logits - theirs.logits).abs().max() <= TOL
    for a, b in zip(ours.attention.cross, theirs.cross_attentions, strict=True):
        assert (a - b).abs().max() <= TOL
    for sentence in src:
        ids = [int(t) for t in sentence if t != 0]
        expected = hf.generate(torch.tensor([ids]), num_beams=1, do_sample=False, max_new_tokens=10)[0, 1:].tolist()
        got = generate(model, ids, max_new_tokens=10)
        assert got == expected[: len(got)]


def test_export_to_marian_refuses_what_marian_cannot_express():
    with pytest.raises(ValueError, match="post-norm"):
        to_marian(tiny_model(norm_position="pre"))
    with pytest.raises(ValueError, match="post-norm"):
        to_marian(tiny_model(positional_encoding="learned"))


# ---- the two tables that both directions read ---------------------------------------------------------------


def test_every_field_of_our_config_is_in_the_marian_table_or_fixed():
    import dataclasses

    from transformer.marian import CONFIG, FIXED
    from transformer.model import TransformerConfig

    training_only = {"init", "init_std"}  # how fresh weights are drawn: nothing a trained model keeps
    covered = [field.ours for field in CONFIG] + list(FIXED)
    assert len(covered) == len(set(covered))
    assert set(covered) | training_only == {f.name for f in dataclasses.fields(TransformerConfig)}


@pytest.mark.parametrize(
    "overrides",
    [
        {"positional_encoding": "sinusoidal_concat", "final_logits_bias": True, "share_embeddings": True},
        {"positional_encoding": "sinusoidal_concat", "final_logits_bias": True, "tgt_vocab_size": 24},
        {"positional_encoding": "sinusoidal_concat", "final_logits_bias": True, "activation": "silu", "dropout": 0.2},
    ],
)
def test_a_config_exported_to_marian_imports_as_itself(overrides, tmp_path):
    from transformer.marian import config_from_marian, config_to_marian

    config = tiny_model(**overrides).config
    exported = config_to_marian(config)
    assert config_from_marian({"model_type": "marian", **exported}, tmp_path) == config
    assert exported["activation_function"] == {"relu": "relu", "silu": "swish"}[config.activation]


def test_an_opus_mt_config_is_what_the_import_of_an_opus_mt_model_gives(marian):
    from transformer.marian import opus_mt_config

    folder, hf = marian
    imported = load_marian(folder).model.config
    sizes = dict(d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=2, d_ff=32, max_positions=64)
    shared = hf.config.share_encoder_decoder_embeddings
    target = dict(share_embeddings=shared, tgt_vocab_size=hf.config.decoder_vocab_size)
    assert opus_mt_config(hf.config.vocab_size, **sizes, **target) == imported


def test_every_marian_weight_has_one_name_of_ours_and_back(marian):
    """The one map of weight names reaches every weight of both models (Marian's positions are computed in ours)."""
    from transformer.marian import our_name, tied_away, weights_from_marian

    folder, hf = marian
    ours = load_marian(folder).model
    named = {name: our_name(name) for name in hf.state_dict() if "embed_positions" not in name}
    assert None not in named.values()
    assert set(ours.state_dict()) <= set(named.values())
    assert all(name in ours.state_dict() or tied_away(name, ours.config) for name in named.values())
    imported = weights_from_marian(hf.state_dict(), ours.config, folder)
    assert {name for name in ours.state_dict() if not tied_away(name, ours.config)} == set(imported)
