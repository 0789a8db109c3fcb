"""A user's own models (explorer.registry.PersonalRegistry, explorer.training_view): a snapshot of a run trained in
the Train tab becomes a model of that user's alone, which every view of the page reads as it reads a built-in one;
and what the Train tab shows of a run (its numbers in words, its snapshots, the probe's replay) is read from the
worker's messages."""

from __future__ import annotations

import dataclasses
import gettext

import numpy as np
import pytest
import torch

from explorer import Explorer, ExplorerError, ExplorerState, i18n, inside, render, training, training_view, walkthrough
from explorer.registry import TRAINED_NAME, ModelDescription, OwnModel, PersonalRegistry
from explorer.training import FAILED, FINISHED, PAUSED, QUEUED, STOPPED, TrainingRun
from transformer.decoding import generate_batch
from transformer.model import Transformer
from transformer.training.live import LiveRun, LiveSetup, Snapshot, from_bytes, probe_example, to_bytes
from transformer.training.model_file import TrainedModel
from transformer.training.toy_tasks import TOY_TASKS

TINY = LiveSetup(task="reverse", layers=1, heads=2, d_model=32, batch_size=16, seed=3)
SNAPSHOTS = (0, 2, 4)  # the steps the worker sends a snapshot at
LAST = 5  # the step of the last look at the probe, later than the last snapshot
BUILTIN = "numbers-de"


def seconds_at(step: int) -> float:
    return 2.6 * step


@pytest.fixture(scope="module")
def messages() -> list[tuple[str, dict]]:
    """What a worker sends about a tiny run, shaped as `explorer.training.train` sends it: a training record every
    step, a held-out record and a snapshot at each of `SNAPSHOTS`, and a last look at the probe."""
    live, sent = LiveRun(TINY), []

    def send(message: str, **payload) -> None:
        sent.append((message, {"step": live.step, "seconds": seconds_at(live.step), **payload}))

    while True:
        if live.step in SNAPSHOTS:
            metrics = {"held_out_loss": 3.0 - live.step / 4, "held_out_exact": live.step / 8}
            send("record", kind="held_out", **metrics)
            taken = live.snapshot(seconds_at(live.step), metrics)
            send("snapshot", weights=to_bytes(taken.weights), probe=taken.probe, metrics=taken.metrics)
        if live.step == LAST:
            send("probe", probe=live.probe())
            return sent
        record = live.train_step()
        numbers = {key: record[key] for key in ("loss", "exact", "lr")}
        send("record", kind="train", **numbers, tokens_per_s=1000.0 * live.step + 234)


def filled(messages: list[tuple[str, dict]], status: str = PAUSED, message: str = "") -> TrainingRun:
    """A run as the server holds it once the worker's messages came in and the run ended with `status`."""
    run = TrainingRun(TINY, budget_s=180.0)
    for kind, payload in messages:
        run.receive(kind, payload)
    run.receive("ended", {"status": status, "message": message, "state": None})
    return run


def sent(messages: list[tuple[str, dict]], kind: str, record_kind: str | None = None) -> list[dict]:
    return [p for k, p in messages if k == kind and (record_kind is None or p["kind"] == record_kind)]


@pytest.fixture(scope="module")
def own(messages) -> OwnModel:
    """The latest snapshot as a model of the user's own."""
    return training_view.own_model(*training_view.chosen_model(filled(messages), None))


# ---- the user's registry ------------------------------------------------------------------------------------


def test_a_user_s_registry_gives_their_models_and_the_shared_one_s_for_every_other_name(registry, own, monkeypatch):
    personal = PersonalRegistry.of(registry)
    assert isinstance(personal, PersonalRegistry) and personal.shared is registry
    assert PersonalRegistry.of(personal) is personal  # a user's registry is never wrapped twice
    name = personal.add(own)
    assert name == own.description.label and personal.add(own) == name  # the same model again: the same name
    assert personal.get(name) is own.checkpoint and personal.describe(name) is own.description
    assert personal.picker_label(name) == name and personal.examples(name) == own.examples
    assert BUILTIN in registry.builtin
    assert personal.get(BUILTIN) is registry.get(BUILTIN)
    assert personal.describe(BUILTIN) == registry.describe(BUILTIN)
    assert personal.describe(BUILTIN).label.startswith("numbers-de · built-in")
    assert personal.picker_label(BUILTIN) == registry.picker_label(BUILTIN)
    assert personal.examples(BUILTIN) == registry.examples(BUILTIN) and personal.examples(BUILTIN)
    assert personal.builtin == registry.builtin and personal.folder == registry.folder
    monkeypatch.setattr(registry, "default", lambda language="en": ("en-de", "a note"))
    assert personal.default() == ("en-de", "a note")


def test_a_user_keeps_at_most_max_own_models_dropping_the_oldest_and_a_model_added_again_is_the_newest(registry, own):
    personal = PersonalRegistry(registry)
    limit = PersonalRegistry.MAX_OWN
    models = [
        OwnModel(own.checkpoint, ModelDescription(f"reverse · 1 layer · step {i} · trained {i} s", "", "", ""), ())
        for i in range(limit + 1)
    ]
    names = [personal.add(model) for model in models[:limit]]
    assert names == [model.description.label for model in models[:limit]]
    personal.add(models[0])  # the same model again: now the newest
    assert list(personal.own) == [*names[1:limit], names[0]]
    names.append(personal.add(models[limit]))  # one too many: the oldest goes
    assert list(personal.own) == [*names[2:limit], names[0], names[limit]] and len(personal.own) == limit
    with pytest.raises(ExplorerError, match="trained in another page"):
        personal.get(names[1])
    assert personal.get(names[0]) is own.checkpoint


def test_another_model_with_the_same_words_is_numbered_and_never_replaces_the_first(registry, own):
    """The name says the task, the layers, the step and the seconds: two runs that differ in heads or seed, or a
    file loaded, can share it. The second is "… (2)", and both stay in the picker."""
    personal = PersonalRegistry(registry)
    other = OwnModel(own.checkpoint, ModelDescription(own.description.label, "another seed", "", ""), ())
    first, second = personal.add(own), personal.add(other)
    assert first == own.description.label and second == f"{first} (2)"
    assert personal.describe(second).label == second and personal.describe(first) is own.description
    assert TRAINED_NAME.fullmatch(second) and personal.add(other) == second and len(personal.own) == 2


def test_two_users_never_see_each_other_s_models_and_the_shared_registry_never_lists_them(registry, own):
    first, second = PersonalRegistry.of(registry), PersonalRegistry.of(registry)
    name = first.add(own)
    assert first is not second and name in first.own and name not in second.own
    with pytest.raises(ExplorerError, match="trained in another page"):
        second.get(name)
    assert name not in registry.builtin and name not in first.builtin
    with pytest.raises(ExplorerError, match="trained in another page"):
        registry.get(name)


def test_a_shared_link_to_a_trained_model_says_it_was_trained_in_another_page(registry, messages):
    name = training_view.model_name(training_view.chosen_model(filled(messages), 2)[0])
    assert TRAINED_NAME.fullmatch(name) and name == "reverse · 1 layer · step 2 · trained 5 s"
    expected = f"“{name}” was trained in another page and lives only there: train it again in the Train tab"
    with pytest.raises(ExplorerError) as error:
        registry.get(name)
    assert str(error.value).startswith(expected) and "load its downloaded file there" in str(error.value)
    with pytest.raises(ExplorerError, match="was trained in another page"):  # what opening the link does
        Explorer(registry, ExplorerState(model=name, source="123"))


# ---- a trained model as one of the user's own ---------------------------------------------------------------


def test_a_snapshot_as_an_own_model_is_named_described_and_comes_with_the_probe_first(messages, own):
    model, exact = training_view.chosen_model(filled(messages), None)
    assert own.description.label == training_view.model_name(model) == "reverse · 1 layer · step 4 · trained 10 s"
    assert TRAINED_NAME.fullmatch(own.description.label) and own.checkpoint.name == own.description.label
    two_layers = TrainedModel(LiveSetup(task="sort", layers=2), {}, 7, 0.4)
    assert training_view.model_name(two_layers) == "sort · 2 layers · step 7 · trained 0 s"
    probe_source, probe_target = probe_example(TINY.toy_task, TINY.seed)
    assert own.examples[0] == (probe_source, f"{probe_source} → {probe_target}")
    assert len(own.examples) == training_view.EXAMPLES and len({s for s, _ in own.examples}) == len(own.examples)
    parameters = sum(p.numel() for p in Transformer(TINY.config()).parameters())
    assert f"{parameters:,} parameters" in own.description.size and parameters > 10_000
    assert own.description.size.startswith("1 encoder and 1 decoder layers, 2 heads, d_model 32, pre-norm")
    assert exact == 0.5 and own.description.quality.startswith("Held-out exact match 50.0% at this step")
    assert "seed 3" in own.description.source and "Only you see it" in own.description.source
    unmeasured = training_view.own_model(model, None, origin="loaded from a file")
    assert unmeasured.description.quality.startswith("Not measured here")
    assert unmeasured.description.source.startswith("Yours, loaded from a file")


def test_every_view_of_the_explorer_reads_an_own_model(registry, own):
    personal = PersonalRegistry.of(registry)
    name, source = personal.add(own), own.examples[0][0]
    explorer = Explorer(personal, ExplorerState(model=name, source=source))
    for _ in explorer.run():
        pass
    tokenizer, model = own.checkpoint.tokenizer, own.checkpoint.model
    (expected,) = generate_batch(model, [tokenizer.encode_source(source)])
    assert explorer.decoding.output_ids == expected and explorer.at_end
    snapshot = explorer.snapshot()
    assert snapshot.source_tokens == [*source, "</s>"]
    assert snapshot.output_text == tokenizer.decode_target(expected)
    assert snapshot.encoder.shape == (1, 2, len(source) + 1, len(source) + 1)
    assert snapshot.cross.shape[:2] == (1, 2) and snapshot.cross.shape[3] == len(source) + 1
    worked = inside.worked_step(explorer)
    assert len(worked.encoder) == len(worked.decoder) == 1
    tour = walkthrough.tour(explorer)
    assert [section.kind for section in tour] == list(walkthrough.SECTIONS)
    assert all(section.text.startswith("## ") for section in tour)
    assert render.attention_figure(snapshot, explorer.state).data[0]["type"] == "heatmap"
    assert render.twin_name(explorer) is None  # a trained model has no untrained twin
    explorer.update(silenced=frozenset({("encoder", 0, 1)}))
    assert render.comparison(explorer)[1].startswith("**All heads:**")


# ---- the Train tab's view of a run --------------------------------------------------------------------------


def test_the_numbers_say_the_step_the_losses_and_the_status_in_words(messages):
    text = training_view.numbers_text(filled(messages))
    train, held_out = sent(messages, "record", "train")[-1], sent(messages, "record", "held_out")[-1]
    assert text.startswith('<div role="status" aria-live="polite" id="train-numbers-text">')
    assert "<strong>Paused: scrub the replay, explore the model, or resume.</strong>" in text
    assert f"step {LAST} · 13 s of 180 s" in text
    assert f"training loss {train['loss']:.3f}" in text and f"training exact match {train['exact']:.1%}" in text
    assert held_out["step"] == 4 and "held-out loss 2.000 · held-out exact match 50.0%" in text
    assert "5,234 tokens/s" in text
    before = training_view.numbers_text(TrainingRun(TINY, budget_s=180.0))
    assert "step 0 · 0 s of 180 s" in before and "loss" not in before


@pytest.mark.parametrize(
    "status, message, place, words",
    [
        (QUEUED, "", 3, "Waiting for a free trainer: number 3 in the queue."),
        (QUEUED, "", 0, "Starting…"),
        (FINISHED, "the time budget of 180 s is spent", 0, "Finished: the time budget of 180 s is spent."),
        (STOPPED, "the page was closed", 0, "Stopped: the page was closed."),
        (STOPPED, "", 0, "Stopped."),
        (FAILED, "training failed: <img src=x onerror=alert(1)> & co", 0, "Failed: training failed: &lt;img src=x"),
    ],
)
def test_the_status_is_said_in_words_and_escaped(messages, status, message, place, words):
    text = training_view.numbers_text(filled(messages, status, message), place)
    assert words in text
    assert "<img" not in text and text.count("<") == 4  # the div and the strong, opened and closed


def test_why_a_run_stopped_is_said_in_the_language_of_its_reader(messages, monkeypatch):
    """The worker speaks no language: it sends a template and its values, which the page words for each reader."""
    chinese = {training.BUDGET_SPENT: "{seconds:.0f} 秒的时间预算已用完", "Finished: {why}.": "已完成：{why}。"}

    class Chinese(gettext.NullTranslations):
        def gettext(self, message):
            return chinese.get(message, message)

    def translations(language):
        return Chinese() if language == "zh" else gettext.NullTranslations()

    monkeypatch.setattr(i18n, "translations", translations)
    run = filled(messages)
    why = (training.BUDGET_SPENT, {"seconds": 180.0})
    run.receive("ended", {"status": FINISHED, "message": training.worded(why), "reason": why, "state": None})
    assert run.message == "the time budget of 180 s is spent"
    assert "<strong>Finished: the time budget of 180 s is spent.</strong>" in training_view.numbers_text(run)
    with i18n.speaking("zh"):
        assert "<strong>已完成：180 秒的时间预算已用完。</strong>" in training_view.numbers_text(run)


def test_the_toy_tasks_words_are_marked_for_the_catalogs():
    """The library's tasks mark nothing (it is read without the page): `training_view.TASK_TEXTS` marks their words."""
    for task in TOY_TASKS.values():
        assert {task.title, task.look_for} <= set(training_view.TASK_TEXTS), task.name


def test_snapshots_are_offered_latest_first_and_each_is_the_model_of_its_step(messages):
    run = filled(messages)
    assert training_view.snapshot_choices(run) == [
        ("step 4 · 10 s · held-out exact match 50%", 4),
        ("step 2 · 5 s · held-out exact match 25%", 2),
        ("step 0 · 0 s · held-out exact match 0%", 0),
    ]
    weights = {p["step"]: from_bytes(p["weights"]) for p in sent(messages, "snapshot")}
    for step, expected_step, exact in ((None, 4, 0.5), (2, 2, 0.25), (0, 0, 0.0)):
        model, measured = training_view.chosen_model(run, step)
        assert model.step == expected_step and measured == exact and model.setup == TINY
        assert model.seconds == seconds_at(expected_step)
        assert weights[expected_step].keys() == model.weights.keys()
        assert all(torch.equal(model.weights[k], weights[expected_step][k]) for k in model.weights)
    assert not all(torch.equal(weights[2][k], weights[4][k]) for k in weights[2])
    with pytest.raises(ValueError, match="no such step"):
        training_view.chosen_model(run, 3)
    with pytest.raises(ValueError, match="no snapshot yet: train it a little first"):
        training_view.chosen_model(TrainingRun(TINY), None)


def test_a_run_keeps_every_snapshot_s_probe_but_the_weights_of_only_as_many_as_its_bytes_allow(messages, monkeypatch):
    first = sent(messages, "snapshot")[0]
    snapshot = Snapshot(0, 0.0, from_bytes(first["weights"]), first["probe"])
    size = sum(tensor.nbytes for tensor in snapshot.weights.values())
    monkeypatch.setattr(training, "WEIGHTS_BYTES", 3 * size)
    run = TrainingRun(TINY)
    for step in range(0, 100, 10):
        run.add_snapshot(dataclasses.replace(snapshot, step=step))
    assert [s.step for s in run.snapshots] == list(range(0, 100, 10))  # every probe, for the replay
    assert [s.step for s in run.snapshots if s.weights] == [0, 10, 90]  # spaced logarithmically, the last kept
    assert [step for _, step in training_view.snapshot_choices(run)] == [90, 10, 0]
    assert training_view.chosen_model(run, None)[0].step == 90
    with pytest.raises(ValueError, match="no such step"):
        training_view.chosen_model(run, 20)  # its weights were let go


def replayed_maps(figure) -> tuple[list[str], list[np.ndarray]]:
    steps = figure.layout.sliders[0].steps
    return [step.label for step in steps], [np.asarray(step.args[0]["z"][0]) for step in steps]


@pytest.mark.parametrize("family, head", [("cross", 1), ("encoder", None), ("decoder_self", 0)])
def test_the_replay_shows_the_probe_s_map_at_every_snapshot_and_the_latest_look(messages, family, head):
    probes = [p["probe"] for p in sent(messages, "snapshot")] + [p["probe"] for p in sent(messages, "probe")]
    labels, maps = replayed_maps(training_view.replay_figure(filled(messages), family, 0, head))
    assert labels == [str(step) for step in (*SNAPSHOTS, LAST)]
    for probe, shown in zip(probes, maps, strict=True):
        heads = torch.from_numpy(probe.attention[family][0])
        expected = heads.mean(dim=0) if head is None else heads[head]
        assert np.allclose(shown, expected.numpy(), rtol=0, atol=1e-7)
    assert not np.allclose(maps[0], maps[-1])  # the map changed as the model trained


def test_the_replay_adds_the_latest_look_only_when_later_and_brings_layer_and_head_into_range(messages):
    without_last_look = filled(messages[:-1])
    labels, _ = replayed_maps(training_view.replay_figure(without_last_look, "cross", 0, 1))
    assert labels == [str(step) for step in SNAPSHOTS]
    clamped = replayed_maps(training_view.replay_figure(filled(messages), "cross", 7, 9))[1]
    asked = replayed_maps(training_view.replay_figure(filled(messages), "cross", 0, 1))[1]
    assert all(np.array_equal(a, b) for a, b in zip(clamped, asked, strict=True))
    assert training_view.replay_figure(TrainingRun(TINY), "cross", 0, None) is None


def test_the_curves_plot_every_record_against_its_step(messages):
    figure = training_view.curves_figure(filled(messages))
    train, held_out = sent(messages, "record", "train"), sent(messages, "record", "held_out")
    losses, held_out_losses = figure.data[0], figure.data[1]
    assert list(losses["x"]) == [r["step"] for r in train] == list(range(1, LAST + 1))
    assert np.allclose(losses["y"], [r["loss"] for r in train])
    assert list(held_out_losses["x"]) == list(SNAPSHOTS)
    assert np.allclose(held_out_losses["y"], [r["held_out_loss"] for r in held_out])
