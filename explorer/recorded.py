"""How a shipped model learned, replayed in the Train tab as if it had been trained there.

A built-in model whose folder holds `replay.safetensors` (written by `python -m transformer.training.replay` from
the run that trained it) can be replayed: its curves, the probe's attention and translation at steps spaced
logarithmically, and a few of its snapshots to explore with every view of the page. A `RecordedRun` is a finished
`TrainingRun` that no worker trains; the Train tab draws it as it draws a user's own run.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from transformer.checkpoint import Checkpoint, fill_model
from transformer.model import Transformer
from transformer.training.live import Snapshot
from transformer.training.replay import Replay, read_replay

from .i18n import _
from .registry import ModelDescription, ModelRegistry, OwnModel, PersonalRegistry
from .training import FINISHED, TrainingRun

REPLAY_FILE = "replay.safetensors"
HELD_OUT_KEYS = ("held_out_loss", "held_out_exact")


@dataclass(eq=False)
class RecordedRun(TrainingRun):
    """The training of the built-in model `model`, replayed from its recording: finished, never trained here. Its
    snapshots hold weights only at the few steps the recording kept (the others, the probe alone)."""

    model: str = ""
    replay: Replay | None = None
    layers_heads: tuple[int, int] = (1, 1)
    downloadable = False  # a shipped model: its files are in checkpoints/

    @property
    def title(self) -> str:
        return self.replay.title or self.model

    @property
    def look_for(self) -> str:
        return self.replay.look_for

    @property
    def shape(self) -> tuple[int, int]:
        return self.layers_heads

    @property
    def shipped_step(self) -> int:
        """The step whose weights were shipped: the last of the recording."""
        return self.replay.steps[-1]


def replays(registry: ModelRegistry | PersonalRegistry) -> list[str]:
    """The built-in models whose training can be replayed."""
    return [name for name in registry.builtin if (registry.folder / name / REPLAY_FILE).is_file()]


@functools.cache
def _read(path: Path) -> Replay:
    return read_replay(path)  # once a server: every user's replay reads the same (it never changes)


def recorded_run(registry: ModelRegistry | PersonalRegistry, name: str) -> RecordedRun:
    """The replay of the built-in model `name`'s training."""
    replay = _read(registry.folder / name / REPLAY_FILE)
    config = registry.get(name).model.config
    records = []
    for record in replay.records:
        common = {"step": record["step"], "seconds": record["seconds"]}
        records.append({"kind": "train", **common, **{key: record[key] for key in ("loss", "exact", "lr")}})
        records.append({"kind": "held_out", **common, **{key: record[key] for key in HELD_OUT_KEYS}})
    snapshots = [
        Snapshot(probe.step, record["seconds"], replay.weights.get(probe.step, {}), probe,
                 metrics={"held_out_exact": record["held_out_exact"]})
        for probe, record in zip(replay.probes, replay.records, strict=True)
    ]  # fmt: skip
    last = replay.records[-1]
    return RecordedRun(
        setup=None,  # not a Train tab setup: `replay` says what it is
        budget_s=last["seconds"],
        status=FINISHED,
        step=last["step"],
        seconds=last["seconds"],
        records=records,
        snapshots=snapshots,
        message=f"the recorded training of {name}",
        model=name,
        replay=replay,
        layers_heads=(config.n_encoder_layers, config.n_heads),
    )


def snapshot_model(registry: ModelRegistry | PersonalRegistry, run: RecordedRun, step: int) -> OwnModel:
    """The built-in model as it was at `step` of its training, to explore as one of the user's models."""
    snapshot = next((s for s in run.snapshots if s.step == step and s.weights), None)
    if snapshot is None:
        raise ValueError(
            _("the recording of {model} kept no weights at step {step}").format(model=run.model, step=step)
        )
    base = registry.get(run.model)
    model = Transformer(base.model.config)
    fill_model(model, snapshot.weights, registry.folder / run.model / REPLAY_FILE)  # tied weights stored once
    model.eval().requires_grad_(False)
    name = f"{run.model} · step {step} · trained {snapshot.seconds:.0f} s"
    exact = snapshot.metrics["held_out_exact"]
    described = registry.describe(run.model)
    description = ModelDescription(
        label=name,
        source=_(
            "{model} at step {step:,} of the {steps:,} of its training, replayed from its recording: the same model, "
            "not yet fully trained."
        ).format(model=run.model, step=step, steps=run.shipped_step),
        size=described.size,
        quality=_("Exact match {exact:.1%} on 200 held-out pairs at this step (greedy).").format(exact=exact),
    )
    checkpoint = Checkpoint(model, base.tokenizer, name, dict(base.generation))
    return OwnModel(checkpoint, description, registry.examples(run.model))
