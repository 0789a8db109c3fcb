"""The basics test set (`data/basics`, issue 37) on trained checkpoints: `python -m benchmarks.basics CHECKPOINT
[CHECKPOINT ...] --set data/basics/zh-en.tsv [--beam 4 --length-penalty 2.0] [--json OUT]`.

Scored as `data/basics/README.md` ("How it is scored") asks: every source is translated greedily and with beam
search (the project's own `translate_sentences` and `beam_translations` from `transformer.training.evaluate`), and
sacrebleu's chrF is taken against all references of a sentence (reference streams padded with `None`) on three
subsets: the whole set, the core (`core == 1`) and the sentences that do not collide with the training data (those
`data/basics/check_overlap.py` does not print). Prints a Markdown table of the scores and, for the core sentences,
each source with every model's greedy and beam output side by side, for judging them by hand.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

from transformer.checkpoint import load_checkpoint
from transformer.decoding import BeamSearch
from transformer.training.basics import Judgements, Sentence, judgements_for, measure, read_set, subsets
from transformer.training.evaluate import basics_outputs

ROOT = Path(__file__).resolve().parent.parent
OVERLAP_SCRIPT = ROOT / "data" / "basics" / "check_overlap.py"
OVERLAP_THRESHOLD = 0.9  # check_overlap.py's default: a difflib ratio of at least this is a near collision
SUBSETS = ("whole", "core", "non-colliding")


def colliding_ids(sentences: list[Sentence], pair: str) -> set[str]:
    """The ids of the `sentences` that `data/basics/check_overlap.py` would print for the language `pair`: equal or
    nearly equal to a training source, found by that script's own functions."""
    spec = importlib.util.spec_from_file_location("check_overlap", OVERLAP_SCRIPT)
    overlap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(overlap)
    index, _files = overlap.load_training(pair)  # reports its files on stderr, no training text
    by_length: dict[int, list[str]] = {}
    for key in index:
        by_length.setdefault(len(key), []).append(key)
    return {
        s.id
        for s in sentences
        if overlap.best_match(overlap.normalise(s.source), by_length, index, OVERLAP_THRESHOLD)[1] is not None
    }


def score_table(results: dict[str, dict], sizes: dict[str, int]) -> str:
    """The Markdown table of chrF per model, decoding and subset."""
    header = " | ".join(f"{name} ({sizes[name]})" for name in SUBSETS)
    lines = [f"| model | decoding | {header} |", "|---|---|" + "---:|" * len(SUBSETS)]
    for model, result in results.items():
        for decoding, subset_scores in result["chrf"].items():
            cells = " | ".join("–" if subset_scores[n] is None else f"{subset_scores[n]:.2f}" for n in SUBSETS)
            lines.append(f"| `{model}` | {decoding} | {cells} |")
    return "\n".join(lines)


def core_table(sentences: list[Sentence], results: dict[str, dict]) -> str:
    """The core sentences, each with its references and every model's outputs side by side."""
    columns = [(model, decoding) for model, result in results.items() for decoding in result["outputs"]]
    header = " | ".join(f"`{model}` {decoding}" for model, decoding in columns)
    lines = [f"| id | source | references | {header} |", "|---|---|---|" + "---|" * len(columns)]
    for i, s in enumerate(sentences):
        if s.core:
            outputs = " | ".join(results[model]["outputs"][decoding][i] for model, decoding in columns)
            lines.append(f"| {s.id} | {s.source} | {' / '.join(s.references)} | {outputs} |")
    return "\n".join(lines)


def run(checkpoints: list[str], path: str | Path, beam: BeamSearch | None) -> dict:
    """Outputs, chrF and the core's hand count of every checkpoint on the basics test file `path`."""
    sentences = read_set(path)
    colliding = colliding_ids(sentences, Path(path).stem)  # en-de.tsv, zh-en.tsv
    judgements = Judgements.read(judgements_for(path))
    results = {}
    for folder in checkpoints:
        outputs = basics_outputs(load_checkpoint(folder), [s.source for s in sentences], beam)
        results[folder] = measure(sentences, outputs, judgements, colliding)
    return {
        "set": str(path),
        "beam": {"width": beam.width, "length_penalty": beam.length_penalty} if beam else None,
        "sizes": {name: len(indices) for name, indices in subsets(sentences, colliding).items()},
        "colliding": sorted(colliding),
        "ids": [s.id for s in sentences],
        "models": results,
    }


def judged_lines(results: dict[str, dict]) -> list[str]:
    """The core judged right per model and decoding, the sentences beam search breaks, and what is not judged yet."""
    lines = []
    for model, result in results.items():
        counts = ", ".join(f"{decoding} {c['right']}/{c['of']}" for decoding, c in result["judged"].items())
        broke = (
            f"; beam breaks what greedy gets right: {', '.join(result['beam_broke'])}" if result["beam_broke"] else ""
        )
        lines.append(f"- `{model}`: {counts}{broke}")
        for decoding, c in result["judged"].items():
            lines += [f"  - not judged ({decoding}): {id_}\t{output}" for id_, output in c["unjudged"]]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.basics", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+", help="checkpoint folders")
    parser.add_argument("--set", dest="path", type=Path, default=ROOT / "data" / "basics" / "zh-en.tsv")
    parser.add_argument("--beam", type=int, default=4, help="beam width (0: greedy only; default 4)")
    parser.add_argument("--length-penalty", type=float, default=2.0, help="the beam's length penalty (default 2.0)")
    parser.add_argument("--json", type=Path, help="also write outputs and scores to this JSON file")
    args = parser.parse_args(argv)
    beam = BeamSearch(args.beam, args.length_penalty) if args.beam else None
    report = run(args.checkpoints, args.path, beam)
    sentences = read_set(args.path)
    decodings = "greedy" + (f" and beam {beam.width}, length penalty {beam.length_penalty}" if beam else "")
    print(f"# {args.path}: chrF, {decodings}\n")
    print(score_table(report["models"], report["sizes"]))
    print(f"\nColliding with training data ({len(report['colliding'])}): {', '.join(report['colliding'])}\n")
    print("## Core sentences\n")
    print(core_table(sentences, report["models"]))
    print(f"\n## The core judged right by hand ({judgements_for(args.path)})\n")
    print("\n".join(judged_lines(report["models"])))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
