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
from transformer.training.recipe import Probe
from transformer.training.toy_tasks import draw

from . import figures
from .i18n import N_, _
from .recorded import RecordedRun
from .registry import ModelDescription, OwnModel
from .render import FAMILY_NAMES
from .training import FAILED, FINISHED, PAUSED, QUEUED, STOPPED, TRAINING, TrainingRun

EXAMPLES = 6  # sentences to try with a trained model: the probe, and more of the task's test pairs

# The words of the toy tasks (`transformer.training.toy_tasks`: their titles and what to look for) and of the shipped
# recordings (`replay.safetensors`), which the library writes without the page's catalogs: marked here, translated
# where they are shown (`_(run.title)`). A text missing here is shown in English.
TASK_TEXTS = (
    N_("Copy the digits"),
    N_("The cross-attention becomes a diagonal: each output digit reads the input digit at its own position."),
    N_("Reverse the digits"),
    N_("The cross-attention becomes an anti-diagonal: the first output digit reads the last input digit."),
    N_("Sort the digits"),
    N_(
        "Each output digit reads the input positions that hold it, the smallest digits first: equal digits share the "
        "attention of their row."
    ),
    N_("Count each digit"),
    N_(
        "Each digit becomes how often it occurs. One look at one position cannot tell: the encoder's self-attention "
        "links every digit to its equals, and the cross-attention reads the gathered count."
    ),
    N_("Number words, English → German"),
    N_(
        "German says the units before the tens: writing “ein·und·zwanzig” for “twenty-one”, the cross-attention "
        "looks at “one” before “twenty”."
    ),
    N_("Dates, English → German"),
    N_("The day comes first in German: writing “8. Juli”, the cross-attention jumps past “July” to the day."),
    N_("numbers-de: number words, English → German"),
    N_(
        "German says the units before the tens: writing “drei·und·zwanzig” for “twenty-three”, the cross-attention "
        "looks at “three” before “twenty”."
    ),
)
# The choices of a `LiveSetup`'s positions and layer norm, as the page names them.
POSITIONAL_NAMES = {
    "sinusoidal_interleaved": N_("sinusoidal interleaved"),
    "sinusoidal_concat": N_("sinusoidal concat"),
    "learned": N_("learned"),
}
NORM_NAMES = {"post": N_("post"), "pre": N_("pre")}
TRAINED_HERE, LOADED = N_("trained in the Train tab"), N_("loaded from a file")


def records(run: TrainingRun) -> tuple[list[dict], list[dict]]:
    """The run's training records and held-out records so far."""
    with run.lock:
        kept = list(run.records)
    return [r for r in kept if r["kind"] == "train"], [r for r in kept if r["kind"] == "held_out"]


def numbers_text(run: TrainingRun, place: int = 0) -> str:
    """Where the run is, in words (for everyone, and for a screen reader, which reads it as it changes)."""
    train, held_out = records(run)
    with run.lock:
        status, step, seconds = run.status, run.step, run.seconds
    if isinstance(run, RecordedRun):
        parts = [_("step {step:,}").format(step=step), _("{seconds:.0f} s of training").format(seconds=seconds)]
    else:
        spent = _("{seconds:.0f} s of {budget:.0f} s").format(seconds=seconds, budget=run.budget_s)
        parts = [_("step {step:,}").format(step=step), spent]
    if train:
        last = train[-1]
        parts += [
            _("training loss {loss:.3f}").format(loss=last["loss"]),
            _("training exact match {exact:.1%}").format(exact=last["exact"]),
        ]
    if held_out:
        last = held_out[-1]
        parts += [
            _("held-out loss {loss:.3f}").format(loss=last["held_out_loss"]),
            _("held-out exact match {exact:.1%}").format(exact=last["held_out_exact"]),
        ]
    if train and "tokens_per_s" in train[-1]:
        parts.append(_("{speed:,.0f} tokens/s").format(speed=train[-1]["tokens_per_s"]))
    return (
        f'<div role="status" aria-live="polite" id="train-numbers-text">'
        f"<strong>{html.escape(status_text(run, status, place))}</strong> "
        f"{html.escape(' · '.join(parts))}</div>"
    )


def status_text(run: TrainingRun, status: str, place: int) -> str:
    """The run's status in a sentence: waiting (at `place` in the queue), training, or why it stopped."""
    if status == QUEUED:
        waiting = _("Waiting for a free trainer: number {place} in the queue.")
        return waiting.format(place=place) if place else _("Starting…")
    if status == FINISHED and isinstance(run, RecordedRun):
        return _(
            "The training of {model}, replayed: its last step is the model shipped, and the steps under “The model "
            "at” can be explored."
        ).format(model=run.model)
    why = run.said()
    if status == TRAINING:
        return _("Training.")
    if status == PAUSED:
        return _("Paused: scrub the replay, explore the model, or resume.")
    if status == FINISHED:
        return _("Finished: {why}.").format(why=why)
    if status == STOPPED:
        return _("Stopped: {why}.").format(why=why) if why else _("Stopped.")
    if status == FAILED:
        return _("Failed: {why}.").format(why=why)
    return ""


def curves_figure(run: TrainingRun) -> figures.Figure:
    train, held_out = records(run)
    return figures.training_curves(train, held_out, title=_("{task}: learning").format(task=_(run.title)))


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
    family_name = _(FAMILY_NAMES[family])
    if head is None:
        title = _("The probe's {family}, layer {layer}, average of the heads").format(family=family_name, layer=layer)
    else:
        title = _("The probe's {family}, layer {layer}, head {head}").format(family=family_name, layer=layer, head=head)
    return figures.probe_replay(replay, queries, keys, family=family, title=title)


def probe_caption(run: TrainingRun) -> str:
    """The probe in words: what it is and what the right answer is."""
    frames = probe_frames(run)
    if not frames:
        return ""
    probe = frames[-1][1]
    return _(
        "The probe: “{source}” → “{expected}”, a held-out example the model never trains on. {look_for} Drag the "
        "slider, press Play, or click the curves to see any step."
    ).format(
        source=html.escape(text_of(probe.source[:-1])),
        expected=html.escape(text_of(probe.expected[:-1])),
        look_for=html.escape(_(run.look_for)) if run.look_for else "",
    )


def text_of(pieces: tuple[str, ...]) -> str:
    """Pieces as the model reads them, as text: sentencepiece's (“▁” starts a word) joined back into words, a toy
    task's digits side by side ("31415": a space between them is a piece the model does not know)."""
    return "".join(pieces).replace("▁", " ").strip()


def snapshot_choices(run: TrainingRun) -> list[tuple[str, int]]:
    """The snapshots a user can explore or download, the latest first: (label, step)."""
    with run.lock:
        snapshots = list(run.snapshots)
    return [(snapshot_label(s), s.step) for s in reversed(snapshots) if s.weights]  # a recording's: a few


def snapshot_label(snapshot: Snapshot) -> str:
    exact = snapshot.metrics.get("held_out_exact")
    if exact is None:
        return _("step {step} · {seconds:.0f} s").format(step=snapshot.step, seconds=snapshot.seconds)
    return _("step {step} · {seconds:.0f} s · held-out exact match {exact:.0%}").format(
        step=snapshot.step, seconds=snapshot.seconds, exact=exact
    )


def chosen_model(run: TrainingRun, step: int | None) -> tuple[TrainedModel, float | None]:
    """The model of the snapshot at `step` (the latest when None), and its held-out exact match; a ValueError when
    there is none."""
    with run.lock:
        snapshots = list(run.snapshots)
    chosen = [s for s in snapshots if (step is None or s.step == step) and s.weights]  # some keep the probe alone
    if not chosen:
        untrained = _("this run has no snapshot yet: train it a little first")
        raise ValueError(untrained if not snapshots else _("no such step"))
    snapshot = chosen[-1]
    model = TrainedModel(run.setup, snapshot.weights, snapshot.step, snapshot.seconds)
    return model, snapshot.metrics.get("held_out_exact")


def model_name(model: TrainedModel) -> str:
    """What the picker calls it: "reverse · 2 layers · step 450 · trained 45 s" (`registry.TRAINED_NAME`)."""
    layers = f"{model.setup.layers} layer{'s' if model.setup.layers > 1 else ''}"
    return f"{model.setup.task} · {layers} · step {model.step} · trained {model.seconds:.0f} s"


def own_model(model: TrainedModel, held_out_exact: float | None = None, origin: str = TRAINED_HERE) -> OwnModel:
    """The model as one of the user's own: its checkpoint, its description (in the user's language; `origin`, marked
    for the catalogs, says where it comes from), and sentences to try (the probe first)."""
    setup, task = model.setup, model.setup.toy_task
    checkpoint = model.checkpoint(model_name(model))
    parameters = sum(p.numel() for p in checkpoint.model.parameters())
    quality = (
        _("Held-out exact match {exact:.1%} at this step (greedy, on 200 sequences it never trained on).").format(
            exact=held_out_exact
        )
        if held_out_exact is not None
        else _("Not measured here: try its examples, which it never trained on.")
    )
    recipe = {"origin": _(origin), "task": _(task.title), "seed": setup.seed, "batch": setup.batch_size}
    recipe |= {"warmup": setup.warmup, "factor": setup.lr_factor, "smoothing": setup.label_smoothing}
    source_text = _(
        "Yours, {origin}: the task “{task}”, seed {seed}, batches of {batch}, warm-up {warmup}, factor {factor:g}, "
        "label smoothing {smoothing:g}; step {step}, after {seconds:.0f} s of training. Only you see it."
    ).format(**recipe, step=model.step, seconds=model.seconds)
    shape = {"layers": setup.layers, "heads": setup.heads, "d_model": setup.d_model}
    shape |= {"norm": _(NORM_NAMES[setup.norm_position]), "positional": _(POSITIONAL_NAMES[setup.positional_encoding])}
    size_text = _(
        "{layers} encoder and {layers} decoder layers, {heads} heads, d_model {d_model}, {norm}-norm, {positional} "
        "positions: {parameters:,} parameters, {pieces} pieces."
    ).format(**shape, parameters=parameters, pieces=task.vocab_size)
    description = ModelDescription(label=model_name(model), source=source_text, size=size_text, quality=quality)
    pairs = draw(task, "test", 20, seed=setup.seed, unique=True)
    pairs = sorted(pairs, key=lambda pair: -len(pair[0]))[:EXAMPLES]  # the probe (the longest) first
    examples = tuple((source, f"{source} → {target}") for source, target in pairs)
    return OwnModel(checkpoint, description, examples)
