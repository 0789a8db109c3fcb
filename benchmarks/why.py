"""What the Why? tab costs the server: `python -m benchmarks.why` (`--quick`: one repeat, short sentences).

For each model the page explores (en-de, zh-en, numbers-de, a model trained in the Train tab, and an opus-mt-sized
model: 6+6 layers, d_model 512, 8 heads, a vocabulary of 58,101, random weights, as `benchmarks.model_pair` builds
it), at three steps (`STEPS`) of the translation of a sentence of about 20 pieces: the server's CPU time (this
process's, with the app's one PyTorch thread) of each view computed afresh, not from the shared cache, the median of
the repeats:

- contributions: integrated gradients, with the gradients computed and the completeness gap reached;
- the census of the heads: one run per head;
- the DecoderLens: the decoder over every encoder layer, in one batch.

The numbers go to docs/why/why-speed.json; docs/why.md's table is written from them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from benchmarks.environment import environment
from benchmarks.model_pair import model_pair
from benchmarks.plan import FULL
from transformer.checkpoint import load_checkpoint
from transformer.explain import contributions, decoder_lens, head_census
from transformer.model import Transformer

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = {  # about 20 pieces each, for the models that read words
    "en-de": "The children are playing in the park behind the old school while their parents talk about the weather.",
    "zh-en": "我们明天早上八点在火车站见面，然后一起坐车去看望住在乡下的奶奶。",
    "numbers-de": "nine hundred and ninety-nine thousand nine hundred and ninety-nine",
}
STEPS = (1, 4, 8)  # the steps explained: the pieces written before each


def cpu_ms(run) -> float:
    start = time.process_time()
    run()
    return 1000 * (time.process_time() - start)


def prefix(model: Transformer, source: list[int], n: int) -> list[int]:
    """The decoder's input after `n` greedy steps."""
    target = [model.config.decoder_start_id]
    with torch.inference_mode():
        encoded = model.encode(torch.tensor([source]))
        for _ in range(n):
            logits = model.decode(torch.tensor([target]), encoded, last_only=True).logits[0, -1]
            target.append(int(logits.argmax()))
    return target


def measured(name: str, model: Transformer, source: list[int], repeats: int) -> dict:
    """The views' CPU at each of `STEPS`: the medians over the steps of the medians of the repeats."""
    model.eval().requires_grad_(False)
    row: dict = {"model": name, "source_pieces": len(source)}
    found: dict[str, list] = {"contributions_ms": [], "gradients": [], "gap": [], "census_ms": [], "lens_ms": []}
    for step in STEPS:
        target = prefix(model, source, step)
        with torch.inference_mode():
            token = int(model(torch.tensor([source]), torch.tensor([target])).logits[0, -1].argmax())
        explained = contributions(model, source, target, token)  # (warm: Captum imported, the kernels loaded)
        times = [cpu_ms(lambda: contributions(model, source, target, token)) for _ in range(repeats)]  # noqa: B023
        found["contributions_ms"].append(statistics.median(times))
        found["gradients"].append(explained.steps)
        found["gap"].append(explained.gap)
        times = [cpu_ms(lambda: head_census(model, source, target, token=token)) for _ in range(repeats)]  # noqa: B023
        found["census_ms"].append(statistics.median(times))
        times = [cpu_ms(lambda: decoder_lens(model, source, target, token=token)) for _ in range(repeats)]  # noqa: B023
        found["lens_ms"].append(statistics.median(times))
    row["heads"] = len(head_census(model, source, prefix(model, source, 1)).heads)
    for key, values in found.items():
        row[key] = [round(v, 4 if key == "gap" else 1) for v in values]
    return row


def trained_toy() -> tuple[Transformer, list[int]]:
    """A model of the Train tab's reverse task, trained 300 steps, and a probe sequence of its."""
    from transformer.training.live import LiveRun, LiveSetup, probe_example

    setup = LiveSetup(task="reverse", layers=2, heads=4, d_model=64, batch_size=64, warmup=100, lr_factor=1.0)
    run = LiveRun(setup)
    for _ in range(300):
        run.train_step()
    source, _target = probe_example(setup.toy_task, 7)
    return run.model, run.tokenizer.encode_source(source)


def run(*, quick: bool, threads: int = 1) -> dict:
    torch.set_num_threads(threads)
    repeats = 1 if quick else 5
    rows = []
    for name, sentence in SENTENCES.items():
        checkpoint = load_checkpoint(ROOT / "checkpoints" / name)
        source = checkpoint.tokenizer.encode_source(sentence if not quick else sentence[:40])
        rows.append(measured(name, checkpoint.model, source, repeats))
    model, source = trained_toy()
    rows.append(measured("a Train tab model (reverse, 2+2 layers, d_model 64)", model, source, repeats))
    _hf, opus = model_pair(FULL)
    with torch.no_grad():  # (model_pair forbids </s>, for its own comparison; a real translation may end)
        opus.logits_bias.zero_()
    generator = torch.Generator().manual_seed(5)
    source = [*torch.randint(10, FULL.vocab, (19,), generator=generator).tolist(), opus.config.eos_id]
    rows.append(measured("opus-mt-sized (6+6 layers, d_model 512, random weights)", opus, source, repeats))
    return {"environment": environment(threads), "steps": STEPS, "repeats": repeats, "rows": rows}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.why", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=1, help="PyTorch's threads (the app's default: 1)")
    parser.add_argument("--out", type=Path, default=None, help="default: docs/why/why-speed.json (full run)")
    args = parser.parse_args(argv)
    results = run(quick=args.quick, threads=args.threads)
    text = json.dumps(results, indent=2, ensure_ascii=False)
    out = args.out or (None if args.quick else ROOT / "docs" / "why" / "why-speed.json")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
