"""A run's folder (`--out`): the settings it was started with, the state it resumes from, the snapshots kept for
averaging, the JSON-lines log and its plot.

    settings.json      the flat settings (`TrainSettings.to_dict`); a run with other settings is refused
    source.spm, target.spm   the run's sentencepiece models (`batches.prepare_tokenizer`)
    state.pt           model, optimizer, schedule, random state and data position, written atomically
    snapshots/         the weights at the last few evaluations (`step-NNNNNN.safetensors`)
    replay/            with --replay, the weights at steps spaced logarithmically (`replay.snapshot_steps`)
    train_log.jsonl    one line per log interval ("train") and per evaluation ("dev")
    training.png       the log as a plot
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import torch

from ..checkpoint import unique_state_dict
from ..model import Transformer
from .distributed import is_main_process
from .settings import TrainSettings


def open_run(settings: TrainSettings) -> Path:
    """The run folder, with the settings it was started with; one that holds a run with other settings is refused."""
    run = Path(settings.out)
    run.mkdir(parents=True, exist_ok=True)
    path = run / "settings.json"
    if path.exists():
        stored = TrainSettings.from_dict(json.loads(path.read_text())).to_dict()
        diff = {name: (stored[name], value) for name, value in settings.to_dict().items() if stored[name] != value}
        if diff:
            raise ValueError(f"{run} holds a run with other settings: {diff}; use another --out")
    elif is_main_process():
        path.write_text(json.dumps(settings.to_dict(), indent=2) + "\n")
    return run


def save_state(path: Path, state: dict) -> None:
    """Write atomically: an interruption while saving leaves the previous state intact."""
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as f:
        torch.save(state, f)
    os.replace(f.name, path)


def save_snapshot(run: Path, model: Transformer, step: int, keep: int | None, folder: str = "snapshots") -> None:
    """The model's weights at this step as `<folder>/step-NNNNNN.safetensors`; only the newest `keep` stay (all of
    them when None: the replay's, `--replay`).

    The paper's base models average the last five checkpoints (§6.1); `python -m transformer.convert average`
    does that with these files.
    """
    from safetensors.torch import save_file

    folder = run / folder
    folder.mkdir(exist_ok=True)
    weights = {name: t.detach().float().cpu().contiguous() for name, t in unique_state_dict(model).items()}
    target = folder / f"step-{step:06d}.safetensors"
    save_file(weights, str(target.with_suffix(".tmp")))
    os.replace(target.with_suffix(".tmp"), target)
    if keep is not None:
        for old in sorted(folder.glob("step-*.safetensors"))[:-keep]:
            old.unlink()


def append_log(run: Path, record: dict) -> None:
    with open(run / "train_log.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def plot_log(run: Path) -> None:
    """training.png: training loss and dev loss over steps, and the dev metrics."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines() if line]
    train = [r for r in records if r["kind"] == "train"]
    dev = [r for r in records if r["kind"] == "dev"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot([r["step"] for r in train], [r["loss"] for r in train], label="train loss (label-smoothed)")
    left.plot([r["step"] for r in dev], [r["dev_loss"] for r in dev], "o-", label="dev loss")
    left.set_xlabel("step")
    left.set_ylabel("cross-entropy per token")
    left.legend()
    for key in ("bleu", "chrf", "exact_match"):
        right.plot([r["step"] for r in dev], [r[key] for r in dev], "o-", label=key)
    right.set_xlabel("step")
    right.set_ylabel("dev score (%)")
    right.legend()
    fig.tight_layout()
    fig.savefig(run / "training.png", dpi=90)
    plt.close(fig)
