"""Training settings: flat on disk and on the command line, with the model embedded as its config; the command that
reproduces a run parses back into its settings."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from transformer.training.settings import DEFAULT_MODEL, TrainSettings, command_line, parse_args

ROOT = Path(__file__).resolve().parent.parent


def test_command_line_parses_into_settings(tmp_path):
    corpus = tmp_path / "corpus"
    parsed = parse_args(["--out", str(tmp_path), "--corpus", str(corpus), "--steps", "5", "--no-shared-vocab"])
    separate = dataclasses.replace(DEFAULT_MODEL, share_embeddings=False)
    assert parsed == TrainSettings(out=str(tmp_path), corpus=str(corpus), steps=5, model=separate)


def test_the_settings_are_flat_on_disk_with_the_model_embedded_as_its_config(tmp_path):
    settings = TrainSettings.from_dict({"out": str(tmp_path), "task": "numbers-de", "vocab_size": 400, "d_model": 128})
    assert settings.model == dataclasses.replace(DEFAULT_MODEL, src_vocab_size=400, tgt_vocab_size=400, d_model=128)
    flat = settings.to_dict()
    assert list(flat)[5:9] == ["init_from", "vocab_size", "shared_vocab", "d_model"]  # the model's where it stands
    assert "model" not in flat and TrainSettings.from_dict(flat) == settings
    with pytest.raises(ValueError, match="unknown training setting"):
        TrainSettings.from_dict({**flat, "d_modle": 64})


def test_the_settings_shipped_with_en_de_are_read_as_they_were_written():
    """Each training stage's settings.json (older ones lack options added since) reads back to the same values."""
    for path in sorted((ROOT / "checkpoints" / "en-de").glob("*settings.json")):
        stored = json.loads(path.read_text())
        flat = TrainSettings.from_dict(stored).to_dict()
        assert {name: flat[name] for name in stored} == stored, path.name
        assert flat["d_model"] == 256 and flat["shared_vocab"] is True


def test_command_line_reproduces_the_settings(tmp_path):
    tiny = dict(vocab_size=90, d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=32)
    schedule = dict(batch_tokens=200, steps=8, warmup=4, eval_every=1000, dev_size=4, log_every=2, lr_scale=0.5)
    run = dict(out=str(tmp_path / "run"), corpus=str(tmp_path / "corpus"), shared_vocab=False)
    original = TrainSettings.from_dict(run | tiny | schedule)
    command = command_line(original)
    assert command.startswith("python -m transformer.training.train --out ")
    assert "--no-shared-vocab" in command and "--lr-scale 0.5" in command and "--seed" not in command
    assert parse_args(command.split()[3:]) == original
