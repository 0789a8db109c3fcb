"""Benchmarks, side by side with what a user would pick instead: `python -m benchmarks.bench`.

Every comparison runs in the same process on the same weights with the same number of threads, warmed up, and is
the median of several repeats, taking turns (`benchmarks.timing`); ratios are ours / theirs (below 1: ours is
faster). The full run writes BENCHMARKS.md (`benchmarks.report`); `--quick` runs every section at tiny sizes
(`benchmarks.plan`; CI runs it so that the benchmark never rots). The sections, one module each:

1. `decode_step`: one decoding step with every attention map captured, for an opus-mt-sized model (6+6 layers,
   d_model 512, 8 heads, vocabulary 58,101, random weights: `model_pair`): our `Decoding.step` against
   `transformers`' MarianMTModel (eager attention, `output_attentions=True`, with its cache), at output lengths 16,
   64 and 128; and without capture.
2. `greedy`: greedy translation of a batch of sentences (sentences/s): ours (`generate_batch`) against `generate`,
   on the same random weights and on the shipped English→German model (exported with `transformer.marian.to_marian`).
3. `cache`: incremental decoding with the key/value cache against recomputing the whole prefix at every step.
4. `beam`: beam search (width 4): ours against `generate(num_beams=4)`.
5. `training`: training throughput (target tokens/s) for the shipped model's configuration: ours against
   `torch.nn.Transformer`.
6, 7. `app_bench`: the app's start-up time, Step and Run in headless Chromium, memory.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

import torch

from benchmarks import report
from benchmarks.beam import bench_beam
from benchmarks.cache import bench_cache
from benchmarks.decode_step import bench_decode_step
from benchmarks.environment import environment
from benchmarks.greedy import bench_greedy, bench_shipped_greedy
from benchmarks.model_pair import model_pair, random_sources
from benchmarks.plan import FULL, QUICK, Plan
from benchmarks.training import bench_training, training_config

ROOT = Path(__file__).resolve().parent.parent


def run(plan: Plan, *, threads: int = 2, app: bool = True, shipped: Path | None = None, log=print) -> dict:
    """Every section, on `threads` threads (set back as they were after); returns the numbers, one dict that is the
    results JSON and fills the report."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _sections(plan, threads=threads, app=app, shipped=shipped, log=log)
    finally:
        torch.set_num_threads(before)


def _sections(plan: Plan, *, threads: int, app: bool, shipped: Path | None, log) -> dict:
    shipped = shipped if shipped is not None else ROOT / "checkpoints" / "en-de"
    results: dict = {"plan": asdict(plan), "environment": environment(threads)}
    hf, ours = model_pair(plan)
    log("1. decoding step")
    results["decode_step"] = bench_decode_step(plan, hf, ours)
    log("2. greedy batch")
    sources = random_sources(ours.config, plan.batch_sentences, seed=3)
    results["greedy"] = bench_greedy(plan, hf, ours, sources, plan.batch_new_tokens)
    results["greedy_shipped"] = bench_shipped_greedy(plan, shipped)
    log("3. cache")
    results["cache"] = bench_cache(plan, ours)
    log("4. beam search")
    results["beam"] = bench_beam(plan, hf, ours, random_sources(ours.config, plan.beam_sentences, seed=4))
    del hf, ours
    log("5. training")
    results["training"] = bench_training(plan, training_config(plan, shipped))
    if app:
        from benchmarks.app_bench import measure_app  # needs playwright and Chromium

        log("6, 7. the app")
        results["app"] = measure_app(quick=plan.name == "quick")
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (what CI runs)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-app", action="store_true", help="skip sections 6 and 7 (they need Chromium)")
    parser.add_argument("--out", type=Path, default=None, help="markdown file (default: BENCHMARKS.md, full run)")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw numbers here")
    parser.add_argument("--notes", type=Path, default=None, help="notes to append (full run: docs/benchmark-notes.md)")
    parser.add_argument("--from-json", type=Path, default=None, help="only rewrite the markdown from saved numbers")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        results = run(plan, threads=args.threads, app=not args.no_app)
    results.update(documents(args.notes, quick=args.quick))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    out = args.out or (None if args.quick else ROOT / "BENCHMARKS.md")
    if out is not None:
        report.write(results, out)
        print(f"wrote {out}")
    else:
        print(json.dumps(results, indent=2))


def documents(notes: Path | None, *, quick: bool) -> dict[str, str]:
    """The texts a report carries besides the numbers: the notes (`notes`; a full run's are docs/benchmark-notes.md)
    and, in a full run, the classroom's section (docs/classroom.md, measured apart by `benchmarks.classroom`) and the
    Why? tab's (docs/why.md, by `benchmarks.why`)."""
    found = {}
    notes = notes or (None if quick else ROOT / "docs" / "benchmark-notes.md")
    if notes and notes.exists():
        found["notes"] = notes.read_text(encoding="utf-8")
    for key, name in (("classroom", "classroom.md"), ("why", "why.md")):  # measured apart: benchmarks.why too
        path = ROOT / "docs" / name
        if not quick and path.exists():
            found[key] = path.read_text(encoding="utf-8")
    return found


if __name__ == "__main__":
    main()
