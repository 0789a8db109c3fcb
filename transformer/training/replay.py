"""How a model learned, kept to be replayed: what it made of one example, the *probe*, at steps spaced
logarithmically (early training changes fastest), its numbers at those steps, and its weights at a few of them.

The page's Train tab records its own runs as they train (`live.LiveRun`). A model trained by the library's loop
is recorded in two passes:

1. `python -m transformer.training.train … --replay` keeps the weights at every step of `recipe.snapshot_steps` in
   the run folder (`replay/step-NNNNNN.safetensors`). Saving them takes no randomness, so the run trains exactly as
   it would without.
2. `python -m transformer.training.replay RUN --probe "…" --weights-at 128 512 --out FILE` reads them back and
   writes one file: at each step, the probe's attention (every family, layer and head) and greedy translation, the
   loss and exact match on training and held-out pairs, the learning rate; and the weights at the steps asked for.

That file is a safetensors file, read with `read_replay` (never a pickle): the maps in float16; the weights'
matrices in 8-bit integers, a float16 scale for each row (`quantized`: a snapshot is explored, never trained further,
and a quarter of float32's size keeps the repository small), their vectors in float16; the rest as JSON in its
metadata.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor

from ..checkpoint import fill_model, read_weights, unique_state_dict
from ..model import ATTENTION_FAMILIES, Transformer
from ..tokenizer import Tokenizer
from .recipe import Probe, learning_rate, look, measured

FORMAT, VERSION = "transformer-explorer-replay", 2
READABLE = ("1", "2")  # version 1 kept every weight in float16
FOLDER = "replay"  # in a run folder: the weights kept by `--replay`
MEASURED = 200  # training and held-out pairs measured at each step
SPLITS = ("train", "dev")


# --------------------------------------------------------------------------------------------------------
# A recorded run
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """A recorded run: the probe and the numbers at each step, and the weights at some of them."""

    probes: tuple[Probe, ...]  # in the order of their steps
    records: tuple[dict, ...]  # one a step: "step", "loss", "exact", "lr", "held_out_loss", "held_out_exact"
    weights: dict[int, dict[str, Tensor]]  # step -> weights (float32), for a few steps
    probe_text: str = ""  # the probe's source sentence
    title: str = ""  # what was learned, e.g. "numbers in words → German"
    look_for: str = ""  # a sentence on what to watch in the replay

    @property
    def steps(self) -> list[int]:
        return [probe.step for probe in self.probes]


def quantized(matrix: Tensor) -> tuple[Tensor, Tensor]:
    """A weight matrix as 8-bit integers and one float16 scale per row (the row's largest magnitude / 127): each
    weight within half a step, 0.4% of its row's largest, of what it was."""
    scale = (matrix.detach().float().abs().amax(dim=1, keepdim=True) / 127).clamp_min(1e-12).half()
    return (matrix.detach().float() / scale.float()).round().clamp(-127, 127).to(torch.int8), scale


def write_replay(replay: Replay, path: Path) -> None:
    """`replay` as one safetensors file: the maps in float16, the weights as `quantized` matrices and float16 vectors,
    the rest as JSON in its metadata."""
    tensors = {
        f"attention/{probe.step}/{family}": torch.from_numpy(maps).half()
        for probe in replay.probes
        for family, maps in probe.attention.items()
    }
    for step, weights in replay.weights.items():
        for name, tensor in weights.items():
            if tensor.dim() == 2:
                tensors[f"weights/{step}/{name}"], tensors[f"scales/{step}/{name}"] = quantized(tensor)
            else:
                tensors[f"weights/{step}/{name}"] = tensor.detach().half().contiguous()
    first = replay.probes[0]
    description = {
        "probe_text": replay.probe_text,
        "title": replay.title,
        "look_for": replay.look_for,
        "probe": {"source": first.source, "decoder_input": first.decoder_input, "expected": first.expected},
        "predictions": {str(probe.step): probe.prediction for probe in replay.probes},
        "records": replay.records,
    }
    metadata = {"format": FORMAT, "version": str(VERSION), "replay": json.dumps(description, ensure_ascii=False)}
    save_file(tensors, str(path), metadata=metadata)


def read_replay(path: Path) -> Replay:
    """`write_replay`'s file back; a ValueError when it is not one."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as file:
        metadata = file.metadata() or {}
        if metadata.get("format") != FORMAT or metadata.get("version") not in READABLE:
            raise ValueError(f"{path} is not a replay file of version {' or '.join(READABLE)}")
        tensors = {name: file.get_tensor(name).float() for name in file.keys()}  # noqa: SIM118 (not a dict)
    description = json.loads(metadata["replay"])
    probe = description["probe"]
    probes = tuple(
        Probe(
            step=int(step),
            source=tuple(probe["source"]),
            decoder_input=tuple(probe["decoder_input"]),
            expected=tuple(probe["expected"]),
            attention={family: tensors[f"attention/{step}/{family}"].numpy() for family in ATTENTION_FAMILIES},
            prediction=tuple(prediction),
        )
        for step, prediction in description["predictions"].items()
    )
    weights: dict[int, dict[str, Tensor]] = {}
    for name, tensor in tensors.items():
        kind, step, rest = name.split("/", 2)
        if kind == "weights":
            scale = tensors.get(f"scales/{step}/{rest}")  # a quantized matrix (version 2)
            weights.setdefault(int(step), {})[rest] = tensor if scale is None else tensor * scale
    return Replay(
        probes=tuple(sorted(probes, key=lambda p: p.step)),
        records=tuple(description["records"]),
        weights=weights,
        probe_text=description.get("probe_text", ""),
        title=description.get("title", ""),
        look_for=description.get("look_for", ""),
    )


# --------------------------------------------------------------------------------------------------------
# Recording a run of the library's training loop
# --------------------------------------------------------------------------------------------------------


def record_run(
    run: Path, source: str, weights_at: Sequence[int], reference: str | None = None, title: str = "", look_for: str = ""
) -> Replay:
    """The replay of the run in folder `run` (trained with `--replay`): the probe (`source`, and its `reference`,
    looked up in the dev and test splits when None) and the numbers at every step it kept, and its weights at the
    steps `weights_at`. The numbers are measured on `MEASURED` pairs of the training split and as many of the dev
    split, the same pairs at every step."""
    from .batches import load_pairs
    from .settings import TrainSettings

    settings = TrainSettings.from_dict(json.loads((run / "settings.json").read_text()))
    frames = {int(file.stem.removeprefix("step-")): file for file in (run / FOLDER).glob("step-*.safetensors")}
    if not frames:
        raise ValueError(f"{run} kept no replay weights: train it with --replay")
    log = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    best = [record["step"] for record in log if record["kind"] == "dev" and record["best"]]
    if settings.export and best:  # the replay ends on the weights the run exported (its best), at their step
        frames = {step: file for step, file in frames.items() if step < best[-1]} | {best[-1]: Path(settings.export)}
    logged_steps = [0] + [r["step"] for r in log if r["kind"] == "train"]
    logged_seconds = [0.0] + [r["elapsed_s"] for r in log if r["kind"] == "train"]
    tokenizer = Tokenizer.from_files(run / "source.spm", run / "target.spm")
    splits = load_pairs(settings)
    if reference is None:
        held_out = dict(splits["dev"] + splits["test"])
        if source not in held_out:
            raise ValueError(f"the probe {source!r} is in neither the dev nor the test split: give --reference")
        reference = held_out[source]
    examples = {
        split: [(tokenizer.encode_source(s), tokenizer.encode_target(t))
                for s, t in random.Random(0).sample(splits[split], min(MEASURED, len(splits[split])))]
        for split in ("train", "dev")
    }  # fmt: skip
    model = Transformer.on_cpu(settings.model_for(tokenizer)).eval()
    probes, records, kept = [], [], {}
    for step, file in sorted(frames.items()):
        fill_model(model, read_weights(file) if file.is_dir() else load_file(str(file)), file)
        probes.append(look(model, tokenizer, source, reference, step, max_new_tokens=model.config.max_positions - 1))
        train, held_out = measured(model, examples["train"], settings.label_smoothing), measured(model, examples["dev"])
        records.append({
            "step": step,
            "seconds": round(float(np.interp(step, logged_steps, logged_seconds)), 1),  # as the log measured it
            "loss": round(train["loss"], 4),
            "exact": train["exact"],
            "lr": learning_rate(max(step, 1), model.config.d_model, settings.warmup, settings.lr_scale),
            "held_out_loss": round(held_out["loss"], 4),
            "held_out_exact": held_out["exact"],
        })  # fmt: skip
        if step in weights_at:
            kept[step] = {name: tensor.clone() for name, tensor in unique_state_dict(model).items()}
    missing = sorted(set(weights_at) - set(kept))
    if missing:
        raise ValueError(f"{run} kept no weights at step(s) {', '.join(map(str, missing))}")
    return Replay(tuple(probes), tuple(records), kept, probe_text=source, title=title, look_for=look_for)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m transformer.training.replay",
        description="Record a run trained with --replay as one file, to replay in the page.",
    )
    parser.add_argument("run", type=Path, help="the run folder (--out of the training)")
    parser.add_argument("--probe", required=True, help="the probe's source sentence (a held-out one)")
    parser.add_argument("--reference", help="its correct translation (default: looked up in the dev and test splits)")
    parser.add_argument("--weights-at", type=int, nargs="*", default=[], help="the steps whose weights to keep")
    parser.add_argument("--title", default="", help="what the model learns")
    parser.add_argument("--look-for", default="", help="what to watch in the replay")
    parser.add_argument("--out", type=Path, required=True, help="the replay file to write")
    args = parser.parse_args(argv)
    replay = record_run(args.run, args.probe, args.weights_at, args.reference, args.title, args.look_for)
    write_replay(replay, args.out)
    last = replay.records[-1]
    print(f"{args.out}: {len(replay.probes)} steps, weights at {sorted(replay.weights)}; at step {last['step']}: "
          f"held-out exact match {last['held_out_exact']:.1%}, {args.out.stat().st_size / 1e6:.2f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
