"""How a model learned, recorded and replayed: `--replay` keeps the weights at steps spaced logarithmically without
changing the run, `python -m transformer.training.replay` turns them into one file, and the Train tab replays a
built-in model's recording (its curves, the probe at every step, a few snapshots to explore)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from explorer import Explorer, ExplorerState, training_view
from explorer.recorded import REPLAY_FILE, recorded_run, replays, snapshot_model
from explorer.registry import ModelRegistry, PersonalRegistry
from explorer.training import FINISHED
from transformer.checkpoint import load_checkpoint
from transformer.decoding import generate_batch
from transformer.model import ATTENTION_FAMILIES
from transformer.training.evaluate import card_numbers, evaluate, model_card
from transformer.training.recipe import look, steps_until
from transformer.training.replay import main, read_replay
from transformer.training.settings import TrainSettings
from transformer.training.train import train

PROBE = "three hundred and eleven"  # a test item of numbers-de
STEPS = 12


def settings(out: Path, **overrides) -> TrainSettings:
    values = dict(out=str(out), task="numbers-de", task_train_size=300, export=str(out / "best"), vocab_size=120,
                  d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=2, d_ff=32, max_positions=24,
                  batch_tokens=200, steps=STEPS, warmup=4, eval_every=10, dev_size=10, log_every=2)  # fmt: skip
    return TrainSettings.from_dict(values | overrides)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A tiny run of numbers-de trained with --replay (its best weights exported at step 10), and its recording
    (the weights kept at steps 4 and 8)."""
    out = tmp_path_factory.mktemp("replayed") / "run"
    train(settings(out, replay=True), quiet=True)
    main([str(out), "--probe", PROBE, "--weights-at", "4", "8", "--title", "numbers → German", "--look-for", "Look.",
          "--out", str(out / REPLAY_FILE)])  # fmt: skip
    return out


def test_the_steps_kept_are_spaced_logarithmically_and_end_at_the_last():
    assert steps_until(12) == [0, 1, 2, 3, 4, 6, 8, 11, 12]
    assert steps_until(16) == [0, 1, 2, 3, 4, 6, 8, 11, 16]


def test_a_run_keeps_its_weights_at_those_steps_and_trains_exactly_as_without(run, tmp_path):
    kept = sorted(int(p.stem.removeprefix("step-")) for p in (run / "replay").glob("step-*.safetensors"))
    assert kept == steps_until(STEPS)
    train(settings(tmp_path / "plain"), quiet=True)
    with_replay = torch.load(run / "state.pt", weights_only=True)["model"]
    without = torch.load(tmp_path / "plain" / "state.pt", weights_only=True)["model"]
    assert with_replay.keys() == without.keys()
    assert all(torch.equal(with_replay[name], without[name]) for name in without)


def test_the_recording_holds_the_probe_and_the_numbers_at_every_step_until_the_exported_weights(run):
    replay = read_replay(run / REPLAY_FILE)
    best = 10  # eval_every 10: the evaluations at 10 and 12, the first the best or as good
    assert replay.steps == [step for step in steps_until(STEPS) if step < best] + [best]
    assert (replay.title, replay.look_for) == ("numbers → German", "Look.")
    first, last = replay.probes[0], replay.probes[-1]
    assert "".join(last.expected).replace("▁", "") == "dreihundertelf</s>"
    assert last.decoder_input[0] == "<s>" and last.decoder_input[1:] == last.expected[:-1]
    rows, columns = len(last.decoder_input), len(last.source)
    assert {family: maps.shape for family, maps in first.attention.items()} == {
        "encoder": (1, 2, columns, columns), "decoder_self": (2, 2, rows, rows), "cross": (2, 2, rows, columns)
    }  # fmt: skip
    for probe in replay.probes:  # every map a distribution over what it reads (float16 on disk)
        for family in ATTENTION_FAMILIES:
            sums = torch.from_numpy(probe.attention[family]).sum(-1)
            assert torch.allclose(sums, torch.ones_like(sums), atol=2e-3)
    assert [r["step"] for r in replay.records] == replay.steps
    assert all(0 <= r["exact"] <= 1 and 0 <= r["held_out_exact"] <= 1 and r["loss"] > 0 for r in replay.records)
    assert replay.records[0]["loss"] > replay.records[-1]["loss"]  # it learned something


def test_the_recording_keeps_the_weights_asked_for_and_its_last_look_is_the_exported_model(run):
    replay = read_replay(run / REPLAY_FILE)
    assert sorted(replay.weights) == [4, 8]
    stored = load_file(str(run / "replay" / "step-000008.safetensors"))
    assert replay.weights[8].keys() == stored.keys()
    for name, tensor in replay.weights[8].items():
        exact = stored[name].float()
        if exact.dim() == 2:  # 8-bit integers and a float16 scale a row on disk: within half a step (and the scale's
            step = exact.abs().amax(dim=1, keepdim=True) / 127  # rounding) of what was trained
            assert ((tensor - exact).abs() <= 0.6 * step + 1e-7).all(), name
        else:
            assert torch.allclose(tensor, exact, rtol=1e-3, atol=1e-4)  # float16 on disk
    exported = load_checkpoint(run / "best")
    again = look(exported.model, exported.tokenizer, PROBE, "dreihundertelf", step=10, max_new_tokens=23)
    assert again.prediction == replay.probes[-1].prediction
    for family in ATTENTION_FAMILIES:
        assert np.allclose(again.attention[family], replay.probes[-1].attention[family], atol=1e-3)


def test_a_recording_of_version_1_with_its_weights_in_float16_is_still_read(run, tmp_path):
    from safetensors import safe_open

    with safe_open(str(run / REPLAY_FILE), framework="pt") as file:
        metadata = file.metadata() | {"version": "1"}
        tensors = {name: file.get_tensor(name) for name in file.keys() if not name.startswith("scales/")}  # noqa: SIM118
    now = read_replay(run / REPLAY_FILE)
    tensors |= {f"weights/8/{name}": tensor.half() for name, tensor in now.weights[8].items()}
    tensors |= {f"weights/4/{name}": tensor.half() for name, tensor in now.weights[4].items()}
    save_file(tensors, str(tmp_path / "v1.safetensors"), metadata=metadata)
    old = read_replay(tmp_path / "v1.safetensors")
    assert old.steps == now.steps and sorted(old.weights) == [4, 8]
    for name, tensor in now.weights[8].items():
        assert torch.allclose(old.weights[8][name], tensor, rtol=1e-3, atol=1e-4)


def test_a_file_that_is_not_a_recording_is_refused_saying_so(tmp_path):
    path = tmp_path / "other.safetensors"
    save_file({"x": torch.zeros(2)}, str(path), metadata={"format": "something else"})
    with pytest.raises(ValueError, match="not a replay file"):
        read_replay(path)


def test_a_run_trained_without_replay_cannot_be_recorded(tmp_path):
    train(settings(tmp_path / "plain", steps=2, eval_every=2), quiet=True)
    with pytest.raises(ValueError, match="train it with --replay"):
        main([str(tmp_path / "plain"), "--probe", PROBE, "--out", str(tmp_path / "r.safetensors")])


# ---- the page's side --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped(run, tmp_path_factory) -> ModelRegistry:
    """A registry whose built-in model "tiny-numbers" is the run's exported model, with its recording."""
    folder = tmp_path_factory.mktemp("checkpoints")
    shutil.copytree(run / "best", folder / "tiny-numbers")
    shutil.copyfile(run / REPLAY_FILE, folder / "tiny-numbers" / REPLAY_FILE)
    shutil.copytree(run / "best", folder / "no-recording")
    return ModelRegistry(folder)


def test_the_models_with_a_recording_can_be_replayed_as_a_finished_run(shipped):
    assert replays(shipped) == ["tiny-numbers"]
    recorded = recorded_run(shipped, "tiny-numbers")
    assert recorded.status == FINISHED and not recorded.active and recorded.state is None
    assert recorded.shape == (1, 2) and recorded.title == "numbers → German"
    assert [s.step for s in recorded.snapshots] == read_replay(shipped.folder / "tiny-numbers" / REPLAY_FILE).steps
    text = training_view.numbers_text(recorded)
    assert "The training of tiny-numbers, replayed" in text and "step 10" in text and "of training" in text
    assert "tokens/s" not in text  # not measured by the recording
    assert training_view.probe_caption(recorded).startswith(f"The probe: “{PROBE}” → “dreihundertelf”")
    assert [step for _, step in training_view.snapshot_choices(recorded)] == [8, 4]  # those with weights
    replay = training_view.replay_figure(recorded, "cross", 1, None)
    assert len(replay.layout.sliders[0].steps) == len(recorded.snapshots)
    curves = training_view.curves_figure(recorded)
    assert [len(t.x) for t in curves.data] == [len(recorded.snapshots)] * 5


def test_a_recorded_snapshot_is_explored_as_a_model_of_the_user_s_own(shipped, run):
    recorded = recorded_run(shipped, "tiny-numbers")
    own = snapshot_model(shipped, recorded, 8)
    assert own.description.label.startswith("tiny-numbers · step 8 · trained ")
    weights = read_replay(run / REPLAY_FILE).weights[8]
    state = own.checkpoint.model.state_dict()
    assert all(torch.equal(state[name], tensor) for name, tensor in weights.items())
    registry = PersonalRegistry(shipped)
    name = registry.add(own)
    explorer = Explorer(registry, ExplorerState(model=name, source=PROBE))
    for _ in explorer.run():
        pass
    (expected,) = generate_batch(own.checkpoint.model, [own.checkpoint.tokenizer.encode_source(PROBE)])
    assert explorer.decoding.output_ids == expected and explorer.at_end
    with pytest.raises(ValueError, match="kept no weights at step 6"):
        snapshot_model(shipped, recorded, 6)


def test_the_model_card_says_what_the_recording_holds_and_how_it_was_made(run):
    checkpoint = load_checkpoint(run / "best")
    results = evaluate(checkpoint, [(PROBE, "dreihundertelf")], [], None)
    numbers = card_numbers(checkpoint, results, name="tiny", data="", split="test", synthetic=True,
                           replay=run / REPLAY_FILE)  # fmt: skip
    card = model_card(numbers)
    assert "## Training, replayed" in card
    assert "at 8 steps spaced logarithmically (0, 1, 2, 3, 4, 6, 8, 10; the last is the weights shipped)" in card
    assert f'--probe "{PROBE}" --weights-at 4 8`' in card and "the weights at steps 4, 8 (float16)" in card
    assert "## Training, replayed" not in model_card(card_numbers(checkpoint, results, name="tiny", data="",
                                                                  split="test", synthetic=True))  # fmt: skip
