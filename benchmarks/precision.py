"""Reduced precision against float32 on the shipped models: `python -m benchmarks.precision [--dtype bfloat16]
[--device cpu]`. The figures of docs/deployment.md's "Reduced precision" (tests/test_precision.py holds the bounds).

Over every example sentence of each trained built-in model: whether the greedy translation is the same, the largest
change of the first step's candidate probabilities, and the largest change of any attention weight over the
teacher-forced pass of the float32 translation; then the time of one en-de translation in each precision.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from explorer import Explorer, ExplorerState, ModelRegistry
from transformer.decoding import translate

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
TIMED = "I would like a cup of tea, please."


def compared(
    registry: ModelRegistry, name: str, device_type: str, dtype: torch.dtype, most: int | None = None
) -> tuple[int, int, float, float]:
    """(same translations, sentences, largest probability change, largest attention change) for the model `name`,
    over its example sentences (the first `most` of them)."""
    same, probability, attention = 0, 0.0, 0.0
    sentences = [sentence for sentence, _label in registry.examples(name)][:most]
    for sentence in sentences:
        exact = Explorer(registry, ExplorerState(model=name, source=sentence))
        with torch.autocast(device_type, dtype=dtype):
            reduced = Explorer(registry, ExplorerState(model=name, source=sentence))
            rounded = [c.prob for c in reduced.decoding.upcoming()]
            for _step in reduced.run():
                pass
        probability = max(
            probability, *(abs(c.prob - p) for c, p in zip(exact.decoding.upcoming(), rounded, strict=True))
        )
        for _step in exact.run():
            pass
        same += reduced.decoding.output_ids == exact.decoding.output_ids
        source = exact.source_ids()
        target = [exact.checkpoint.model.config.decoder_start_id, *exact.decoding.output_ids[:-1]]
        forward = exact._forward(source, target)  # not `snapshot()`: its shared cache would answer the float32 pass
        with torch.autocast(device_type, dtype=dtype):
            rounded_forward = exact._forward(source, target)
        for family in ("encoder", "decoder_self", "cross"):
            change = (getattr(forward, family) - getattr(rounded_forward, family)).abs().max()
            attention = max(attention, float(change))
    return same, len(sentences), probability, attention


def seconds_per_translation(registry: ModelRegistry, device_type: str, dtype: torch.dtype | None, n: int = 10) -> float:
    """One en-de greedy translation of `TIMED`, in float32 (`dtype` None) or under autocast to `dtype`."""
    checkpoint = registry.get("en-de")
    with torch.autocast(device_type, dtype=dtype or torch.float32, enabled=dtype is not None):
        translate(checkpoint, TIMED)
        started = time.perf_counter()
        for _ in range(n):
            translate(checkpoint, TIMED)
    return (time.perf_counter() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)  # as the app runs
    dtype, device_type = getattr(torch, args.dtype), torch.device(args.device).type
    registry = ModelRegistry(CHECKPOINTS, device=args.device)
    print(f"{args.dtype} against float32 on {args.device}")
    for name in (name for name in registry.builtin if not name.endswith("-untrained")):
        same, n, probability, attention = compared(registry, name, device_type, dtype)
        print(f"{name}: {same}/{n} same greedy translations; probabilities within {probability:.4f}; "
              f"attention within {attention:.4f}")  # fmt: skip
    for label, timed in (("float32", None), (args.dtype, dtype)):
        milliseconds = seconds_per_translation(registry, device_type, timed) * 1000
        print(f"en-de, one translation in {label}: {milliseconds:.0f} ms")


if __name__ == "__main__":
    main()
