"""Training: a tiny run lowers the loss, resuming equals not stopping, two torchrun processes equal one, and a few
steps on each device present (conftest.py's `device`) start from the seed's weights and follow the CPU's."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import ENGLISH, GERMAN
from transformer.checkpoint import load_checkpoint
from transformer.training.batches import batches_from, load_data
from transformer.training.distributed import cpu_threads
from transformer.training.recipe import learning_rate
from transformer.training.run_folder import open_run
from transformer.training.settings import TrainSettings, command_line, parse_args
from transformer.training.train import Trainer, train

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """A tiny corpus folder as transformer.training.corpus writes it: {train,dev,test}.tsv.gz, en<TAB>de lines."""
    folder = tmp_path_factory.mktemp("corpus")
    pairs = list(zip(ENGLISH, GERMAN, strict=True))
    for split, rows in {"train": pairs * 4, "dev": pairs[:4], "test": pairs[4:]}.items():
        with gzip.open(folder / f"{split}.tsv.gz", "wt", encoding="utf-8") as f:
            f.writelines(f"{en}\t{de}\n" for en, de in rows)
    return folder


def settings(corpus: Path, out: Path, **overrides) -> TrainSettings:
    values = dict(
        out=str(out),
        corpus=str(corpus),
        vocab_size=90,
        d_model=16,
        n_heads=2,
        n_encoder_layers=1,
        n_decoder_layers=1,
        d_ff=32,
        batch_tokens=200,
        steps=8,
        warmup=4,
        eval_every=1000,
        dev_size=4,
        log_every=2,
    )
    values.update(overrides)
    return TrainSettings.from_dict(values)


def parameters(model_or_state) -> dict[str, torch.Tensor]:
    state = model_or_state if isinstance(model_or_state, dict) else model_or_state.state_dict()
    return {k: v.detach().clone() for k, v in state.items()}


def test_learning_rate_follows_the_paper():
    d, warmup = 512, 4000
    assert learning_rate(1, d, warmup) == pytest.approx(d**-0.5 * warmup**-1.5)
    peak = learning_rate(warmup, d, warmup)
    assert peak == pytest.approx(d**-0.5 * warmup**-0.5)
    assert learning_rate(warmup // 2, d, warmup) < peak > learning_rate(4 * warmup, d, warmup)
    assert learning_rate(4 * warmup, d, warmup) == pytest.approx(peak / 2)


def test_a_short_run_lowers_the_loss_and_exports_a_loadable_checkpoint(corpus, tmp_path):
    run = settings(corpus, tmp_path / "run", steps=60, eval_every=30, export=str(tmp_path / "export"), warmup=20)
    train(run, quiet=True)
    log = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in log if r["kind"] == "train"]
    assert losses[-1] < 0.6 * losses[0]
    assert [r["step"] for r in log if r["kind"] == "dev"] == [30, 60]
    assert (tmp_path / "run" / "training.png").stat().st_size > 1000
    exported = load_checkpoint(tmp_path / "export")
    assert exported.model.config.d_model == 16 and exported.tokenizer.source.size <= 90


def test_resuming_gives_the_same_model_as_never_stopping(corpus, tmp_path):
    straight = train(settings(corpus, tmp_path / "straight", dropout=0.1), quiet=True)
    interrupted = settings(corpus, tmp_path / "resumed", dropout=0.1)
    first = train(interrupted, stop_after=3, quiet=True)
    assert first["step"] == 3
    resumed = train(interrupted, quiet=True)  # a new call: everything comes back from the run folder
    assert resumed["step"] == straight["step"] == 8
    for name, value in parameters(straight["model"]).items():
        torch.testing.assert_close(parameters(resumed["model"])[name], value, atol=0, rtol=0)


def test_a_few_steps_on_the_device_start_from_the_seeds_weights_and_follow_the_cpu(corpus, tmp_path, device):
    """The first weights are drawn on the CPU from the seed, whichever device trains them (`Transformer.on_cpu`);
    the batches go to the model's device, and the losses there are the CPU's (up to CUDA's bfloat16 autocast)."""
    run = settings(corpus, tmp_path / "run", dropout=0.0)
    folder = open_run(run)
    data = load_data(run, folder, None)
    on_cpu, on_device = (Trainer(run, data, folder, torch.device(d)) for d in ("cpu", device))
    assert next(on_device.model.parameters()).device.type == device
    start = parameters(on_device.model)
    for name, value in parameters(on_cpu.model).items():
        torch.testing.assert_close(start[name].cpu(), value, atol=0, rtol=0)
    batches = batches_from(data.examples, run, 0, 0, data.resample)
    for _ in range(3):
        batch = next(batches)[2]
        (loss, n_tokens), (expected, _) = on_device.step(batch), on_cpu.step(batch)
        assert n_tokens > 0 and float(loss) == pytest.approx(float(expected), rel=0.05)
    assert not torch.equal(parameters(on_device.model)["src_embed.tokens.weight"], start["src_embed.tokens.weight"])


def test_a_run_folder_refuses_other_settings(corpus, tmp_path):
    train(settings(corpus, tmp_path / "run", steps=1), quiet=True)
    with pytest.raises(ValueError, match="other settings"):
        train(settings(corpus, tmp_path / "run", steps=1, d_model=32), quiet=True)


@pytest.mark.slow
def test_activation_dropout_reaches_the_model_and_an_older_run_folder_still_resumes(corpus, tmp_path):
    settings = parse_args(["--out", str(tmp_path), "--corpus", str(corpus), "--activation-dropout", "0.1"])
    assert settings.model.activation_dropout == 0.1
    assert "--activation-dropout 0.1" in command_line(settings)
    assert TrainSettings(out="").model.activation_dropout == 0.0  # the default: as before
    older = TrainSettings(out=str(tmp_path / "run"), corpus=str(corpus), steps=2, eval_every=2).to_dict()
    del older["activation_dropout"]  # a settings.json written before the option existed
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "settings.json").write_text(json.dumps(older))
    train(TrainSettings.from_dict(older), quiet=True)  # same settings: no "other settings" error


def test_threads_come_from_omp_num_threads_else_the_cores_shared_among_processes():
    cores = os.cpu_count() or 1
    assert cpu_threads({"OMP_NUM_THREADS": "1"}) == 1
    assert cpu_threads({"OMP_NUM_THREADS": "3", "WORLD_SIZE": "2"}) == 3
    assert cpu_threads({}) == cores
    assert cpu_threads({"WORLD_SIZE": "2"}) == max(1, cores // 2)
    assert cpu_threads({"OMP_NUM_THREADS": "", "WORLD_SIZE": "1"}) == cores  # set but empty: ignored
    assert cpu_threads({"OMP_NUM_THREADS": "0"}) == cores


@pytest.mark.slow
def test_two_torchrun_processes_equal_one_process_on_the_same_global_batches(corpus, tmp_path):
    config = settings(corpus, tmp_path / "ddp", dropout=0.0, steps=4)
    flags = {f"--{k.replace('_', '-')}": v for k, v in config.to_dict().items() if v is not None}
    args = [(f if v else "--no-" + f[2:]) if isinstance(v, bool) else f"{f}={v}" for f, v in flags.items()]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "transformer.training.train", *args],
        check=True, env=env, cwd=ROOT, capture_output=True, timeout=240,
    )  # fmt: skip
    single = train(dataclasses.replace(config, out=str(tmp_path / "single")), quiet=True)
    distributed = torch.load(tmp_path / "ddp" / "state.pt", weights_only=True)
    assert distributed["step"] == 4
    for name, value in parameters(single["model"]).items():
        if name.endswith("k_proj.bias"):
            # A bias on the keys adds the same q·b to every score of a row, which softmax ignores: its true
            # gradient is 0, and Adam (eps 1e-9) turns the ~1e-9 rounding noise into full-size steps.
            continue
        torch.testing.assert_close(distributed["model"][name], value, atol=1e-5, rtol=1e-4)


def test_init_from_continues_from_a_checkpoints_weights_and_tokenizer(corpus, tmp_path):
    first = settings(corpus, tmp_path / "first", steps=10, export=str(tmp_path / "export"), eval_every=10)
    train(first, quiet=True)
    config = json.loads((tmp_path / "export" / "config.json").read_text())
    config["generation"]["length_penalty"] = 2.0  # as the shipped zh-en decodes
    (tmp_path / "export" / "config.json").write_text(json.dumps(config))
    exported = load_checkpoint(tmp_path / "export")
    regularised = dict(dropout=0.3, attention_dropout=0.1)  # more dropout is still the same architecture
    more = settings(
        corpus,
        tmp_path / "more",
        steps=1,
        init_from=str(tmp_path / "export"),
        lr_scale=1e-9,
        export=str(tmp_path / "more-export"),
        eval_every=1,
        **regularised,
    )
    model = train(more, quiet=True)["model"]  # one step with a vanishing learning rate: still the same weights
    assert load_checkpoint(tmp_path / "more-export").generation["length_penalty"] == 2.0  # decoded as it was
    assert model.config.dropout == 0.3 and model.config.attention_dropout == 0.1
    for name, value in exported.model.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], value, atol=1e-3, rtol=1e-3)
    assert (tmp_path / "more" / "source.spm").read_bytes() == (tmp_path / "export" / "source.spm").read_bytes()
    with pytest.raises(ValueError, match="another architecture"):
        train(settings(corpus, tmp_path / "other", d_model=32, init_from=str(tmp_path / "export")), quiet=True)


@pytest.mark.slow
def test_snapshots_are_kept_and_averaged(corpus, tmp_path):
    from safetensors.torch import load_file

    from transformer.checkpoint import average_snapshots

    run = settings(corpus, tmp_path / "run", steps=16, eval_every=4, keep_snapshots=3, export=str(tmp_path / "best"))
    train(run, quiet=True)
    snapshots = sorted((tmp_path / "run" / "snapshots").glob("*.safetensors"))
    assert [p.stem for p in snapshots] == ["step-000008", "step-000012", "step-000016"]
    base = load_checkpoint(tmp_path / "best")
    one = parameters(average_snapshots(base, snapshots[-1:]).model)
    assert all(torch.equal(one[name], t) for name, t in load_file(str(snapshots[-1])).items())
    mean = parameters(average_snapshots(base, snapshots[-2:]).model)
    first, second = load_file(str(snapshots[-2])), load_file(str(snapshots[-1]))
    for name in first:
        torch.testing.assert_close(mean[name], (first[name] + second[name]) / 2)


@pytest.mark.slow
def test_resuming_with_subword_regularisation_gives_the_same_model(corpus, tmp_path):
    straight = train(settings(corpus, tmp_path / "straight", subword_alpha=0.2), quiet=True)
    interrupted = settings(corpus, tmp_path / "resumed", subword_alpha=0.2)
    train(interrupted, stop_after=3, quiet=True)
    resumed = train(interrupted, quiet=True)
    for name, value in parameters(straight["model"]).items():
        torch.testing.assert_close(parameters(resumed["model"])[name], value, atol=0, rtol=0)
