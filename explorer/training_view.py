"""What the Train tab shows of a run (`explorer.training.TrainingRun`): its numbers in words, its curves, the probe's
attention replayed across the snapshots, and a snapshot as a model of the user's own (`PersonalRegistry`), to
explore with every view of the page or to download.

Everything here reads a run that a worker's messages are changing: it copies what it needs under the run's lock.
"""

from __future__ import annotations

import html

import numpy as np

from transformer.training.live import Snapshot
from transformer.training.model_file import TrainedModel
from transformer.training.replay import Probe
from transformer.training.toy_tasks import draw

from . import figures
from .recorded import RecordedRun
from .registry import ModelDescription, OwnModel
from .render import FAMILY_NAMES
from .training import FAILED, FINISHED, PAUSED, QUEUED, STOPPED, TRAINING, TrainingRun

EXAMPLES = 6  # sentences to try with a trained model: the probe, and more of the task's test pairs


def records(run: TrainingRun) -> tuple[list[dict], list[dict]]:
    """The run's training records and held-out records so far."""
    with run.lock:
        kept = list(run.records)
    return [r for r in kept if r["kind"] == "train"], [r for r in kept if r["kind"] == "held_out"]


def numbers_text(run: TrainingRun, place: int = 0) -> str:
    """Where the run is, in words (for everyone, and for a screen reader, which reads it as it changes)."""
    train, held_out = records(run)
    with run.lock:
        status, message, step, seconds = run.status, run.message, run.step, run.seconds
    states = {
        QUEUED: f"Waiting for a free trainer: number {place} in the queue." if place else "Starting…",
        TRAINING: "Training.",
        PAUSED: "Paused: scrub the replay, explore the model, or resume.",
        FINISHED: f"Finished: {message}.",
        STOPPED: f"Stopped{': ' + message.removeprefix('stopped: ') if message else ''}.",
        FAILED: f"Failed: {message}.",
    }
    if isinstance(run, RecordedRun):
        states[FINISHED] = (
            f"The training of {run.model}, replayed: its last step is the model shipped, and the steps under “The "
            "model at” can be explored."
        )
    budget = "of training" if isinstance(run, RecordedRun) else f"of {run.budget_s:.0f} s"
    parts = [f"step {step:,}", f"{seconds:.0f} s {budget}"]
    if train:
        last = train[-1]
        parts += [f"training loss {last['loss']:.3f}", f"training exact match {last['exact']:.1%}"]
    if held_out:
        last = held_out[-1]
        parts += [f"held-out loss {last['held_out_loss']:.3f}", f"held-out exact match {last['held_out_exact']:.1%}"]
    if train and "tokens_per_s" in train[-1]:
        parts.append(f"{train[-1]['tokens_per_s']:,.0f} tokens/s")
    status = html.escape(states.get(status, ""))
    return (
        f'<div role="status" aria-live="polite" id="train-numbers-text"><strong>{status}</strong> '
        f"{html.escape(' · '.join(parts))}</div>"
    )


def curves_figure(run: TrainingRun) -> figures.Figure:
    train, held_out = records(run)
    return figures.training_curves(train, held_out, title=f"{run.title}: learning")


def probe_frames(run: TrainingRun) -> list[tuple[int, Probe]]:
    """The probe at every snapshot, and as it is now when that is later than the last snapshot."""
    with run.lock:
        snapshots, latest = list(run.snapshots), run.probe
    frames = [(s.step, s.probe) for s in snapshots]
    if latest is not None and (not frames or latest.step > frames[-1][0]):
        frames.append((latest.step, latest))
    return frames


def probe_weights(probe: Probe, family: str, layer: int, head: int | None) -> np.ndarray:
    """One map of the probe: a family, layer and head (or the average of the heads)."""
    maps = probe.attention[family][layer]  # (heads, rows, columns)
    return maps.mean(axis=0) if head is None else maps[head]


def replay_figure(run: TrainingRun, family: str, layer: int, head: int | None) -> figures.Figure | None:
    """The probe's attention (one family, layer and head) across training, with its prediction at each step; None
    before the first look at the probe."""
    frames = probe_frames(run)
    if not frames:
        return None
    probe = frames[-1][1]
    layers, heads = run.shape
    layer = min(max(layer, 0), layers - 1)
    head = None if head is None else min(max(head, 0), heads - 1)
    replay = [
        figures.ReplayFrame(step, probe_weights(p, family, layer, head), p.prediction, p.wrong()) for step, p in frames
    ]
    queries = probe.source if family == "encoder" else probe.decoder_input
    keys = probe.decoder_input if family == "decoder_self" else probe.source
    shown = "average of the heads" if head is None else f"head {head}"
    title = f"The probe's {FAMILY_NAMES[family]}, layer {layer}, {shown}"
    return figures.probe_replay(replay, queries, keys, family=family, title=title)


def probe_caption(run: TrainingRun) -> str:
    """The probe in words: what it is and what the right answer is."""
    frames = probe_frames(run)
    if not frames:
        return ""
    probe = frames[-1][1]
    return (
        f"The probe: “{html.escape(text_of(probe.source[:-1]))}” → “{html.escape(text_of(probe.expected[:-1]))}”, "
        f"a held-out example the model never trains on. {html.escape(run.look_for)} Drag the slider, "
        "press Play, or click the curves to see any step."
    )


def text_of(pieces: tuple[str, ...]) -> str:
    """Pieces as text: sentencepiece's (“▁” starts a word) joined back into words, a toy task's with spaces."""
    if any(piece.startswith("▁") for piece in pieces):
        return "".join(pieces).replace("▁", " ").strip()
    return " ".join(pieces)


def snapshot_choices(run: TrainingRun) -> list[tuple[str, int]]:
    """The snapshots a user can explore or download, the latest first: (label, step)."""
    with run.lock:
        snapshots = list(run.snapshots)
    return [(snapshot_label(s), s.step) for s in reversed(snapshots) if s.weights]  # a recording's: a few


def snapshot_label(snapshot: Snapshot) -> str:
    exact = snapshot.metrics.get("held_out_exact")
    quality = f" · held-out exact match {exact:.0%}" if exact is not None else ""
    return f"step {snapshot.step} · {snapshot.seconds:.0f} s{quality}"


def chosen_model(run: TrainingRun, step: int | None) -> tuple[TrainedModel, float | None]:
    """The model of the snapshot at `step` (the latest when None), and its held-out exact match; a ValueError when
    there is none."""
    with run.lock:
        snapshots = list(run.snapshots)
    chosen = [s for s in snapshots if (step is None or s.step == step) and s.weights]  # some keep the probe alone
    if not chosen:
        raise ValueError("this run has no snapshot yet: train it a little first" if not snapshots else "no such step")
    snapshot = chosen[-1]
    model = TrainedModel(run.setup, snapshot.weights, snapshot.step, snapshot.seconds)
    return model, snapshot.metrics.get("held_out_exact")


def model_name(model: TrainedModel) -> str:
    """What the picker calls it: "reverse · 2 layers · step 450 · trained 45 s" (`registry.TRAINED_NAME`)."""
    layers = f"{model.setup.layers} layer{'s' if model.setup.layers > 1 else ''}"
    return f"{model.setup.task} · {layers} · step {model.step} · trained {model.seconds:.0f} s"


def own_model(
    model: TrainedModel, held_out_exact: float | None = None, origin: str = "trained in the Train tab"
) -> OwnModel:
    """The model as one of the user's own: its checkpoint, its description, and sentences to try (the probe
    first)."""
    setup, task = model.setup, model.setup.toy_task
    checkpoint = model.checkpoint(model_name(model))
    parameters = sum(p.numel() for p in checkpoint.model.parameters())
    quality = (
        f"Held-out exact match {held_out_exact:.1%} at this step (greedy, on 200 sequences it never trained on)."
        if held_out_exact is not None
        else "Not measured here: try its examples, which it never trained on."
    )
    description = ModelDescription(
        label=model_name(model),
        source=(
            f"Yours, {origin}: the task “{task.title}”, seed {setup.seed}, batches of {setup.batch_size}, warm-up "
            f"{setup.warmup}, factor {setup.lr_factor:g}, label smoothing {setup.label_smoothing:g}; step "
            f"{model.step}, after {model.seconds:.0f} s of training. Only you see it."
        ),
        size=(
            f"{setup.layers} encoder and {setup.layers} decoder layers, {setup.heads} heads, d_model {setup.d_model}, "
            f"{setup.norm_position}-norm, {setup.positional_encoding.replace('_', ' ')} positions: {parameters:,} "
            f"parameters, {task.vocab_size} pieces."
        ),
        quality=quality,
    )
    pairs = draw(task, "test", 20, seed=setup.seed, unique=True)
    pairs = sorted(pairs, key=lambda pair: -len(pair[0]))[:EXAMPLES]  # the probe (the longest) first
    examples = tuple((source, f"{source} → {target}") for source, target in pairs)
    return OwnModel(checkpoint, description, examples)
