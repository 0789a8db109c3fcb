"""Evaluate a checkpoint and write its model card: `python -m transformer.training.evaluate --help`.

    python -m transformer.training.evaluate checkpoints/en-de --corpus data/en-de --run runs/en-de --write-card
    python -m transformer.training.evaluate checkpoints/numbers-de --task numbers-de --run runs/numbers-de --write-card

Measures BLEU and chrF (sacrebleu) and exact match on the held-out test split with greedy decoding, translates
the demo sentences, and — with `--write-card` — writes `MODEL_CARD.md` from these numbers, the model's config and
the training run's log (steps, time, hardware). Every number in a model card comes from this command; the card is
the template `model_card.md.j2` next to this module, filled from one dict of those numbers (`card_numbers`).

`translate_sentences` and `score` also measure the dev sets while a model trains (`transformer.training.train`).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import jinja2
import torch

from ..checkpoint import CARD, Checkpoint, load_checkpoint
from ..decoding import BeamSearch, generate, generate_batch
from ..model import Transformer, TransformerConfig
from ..tokenizer import Tokenizer
from . import basics
from .replay import read_replay
from .settings import TrainSettings, command_line

# The model card is `model_card.md.j2`, filled from one dict of numbers (`card_numbers`). Block tags on lines of
# their own leave no trace, so the template reads as the Markdown it writes.
CARDS = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent),
    undefined=jinja2.StrictUndefined,  # a number the template names and the dict lacks is an error, not a blank
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,  # Markdown, not HTML
)
CARDS.filters["thousands"] = "{:,}".format

DEMO_SENTENCES = {
    "en-de": [
        "The weather is nice today.",
        "Where is the train station?",
        "I would like a cup of coffee, please.",
        "My brother lives in a small town near the sea.",
        "Can you help me?",
        "We are going to the cinema tomorrow evening.",
        "The children are playing in the garden.",
        "Better late than never.",
    ],
    "zh-en": [
        "今天天气真好。",
        "火车站在哪儿？",
        "我想要一杯咖啡。",
        "我哥哥住在海边的一个小城里。",
        "你能帮我一下吗？",
        "我们明天晚上去看电影。",
        "孩子们在花园里玩。",
        "我昨天把作业写完了。",
    ],
}


def output_limit(source_ids: list[int], config: TransformerConfig, max_new_tokens: int = 100) -> int:
    """The most tokens a translation of `source_ids` may have: a translation is rarely more than twice as long as
    its source (a runaway output stops early), and the decoder's positions bound it."""
    return min(max_new_tokens, 2 * len(source_ids) + 10, config.max_positions - 1)


def translate_sentences(
    model: Transformer, tokenizer: Tokenizer, sources: list[str], max_new_tokens: int = 100, batch_size: int = 32
) -> list[str]:
    """Greedy translations of `sources`, decoded in batches of sentences of similar length."""
    encoded = [tokenizer.encode_source(text)[: model.config.max_positions] for text in sources]
    limits = [output_limit(ids, model.config, max_new_tokens) for ids in encoded]
    order = sorted(range(len(sources)), key=lambda i: len(encoded[i]))
    outputs = [""] * len(sources)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        ids = generate_batch(model, [encoded[i] for i in chunk], max_new_tokens=[limits[i] for i in chunk])
        for i, output in zip(chunk, ids, strict=True):
            outputs[i] = tokenizer.decode_target(output)
    return outputs


def score(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    """BLEU and chrF (sacrebleu, default settings) and exact match, in percent."""
    import sacrebleu

    exact = sum(h.strip() == r.strip() for h, r in zip(hypotheses, references, strict=True))
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
        "exact_match": round(100.0 * exact / max(len(references), 1), 2),
    }


def test_pairs(corpus: str | None, task: str | None, split: str, limit: int | None) -> list[tuple[str, str]]:
    if corpus:
        from .corpus.tsv import load_corpus

        pairs = load_corpus(corpus)[split]
    else:
        from .synthetic import make_split

        pairs = make_split(task, split, limit)
    return pairs[:limit] if limit else pairs


def demo_sentences(corpus: str | None, task: str | None) -> list[str]:
    if task:
        from .synthetic import examples

        return examples(task)
    return DEMO_SENTENCES.get(Path(corpus).name if corpus else "", DEMO_SENTENCES["en-de"])  # by the pair's folder


def beam_translations(checkpoint: Checkpoint, sources: list[str], beam: BeamSearch) -> list[str]:
    """Beam-search translations, one sentence at a time (the app's beam mode, with the same limits as greedy)."""
    outputs = []
    for text in sources:
        ids = checkpoint.tokenizer.encode_source(text)[: checkpoint.model.config.max_positions]
        limit = output_limit(ids, checkpoint.model.config)
        outputs.append(checkpoint.tokenizer.decode_target(generate(checkpoint.model, ids, beam, max_new_tokens=limit)))
    return outputs


def basics_outputs(checkpoint: Checkpoint, sources: list[str], beam: BeamSearch | None) -> dict[str, list[str]]:
    """A checkpoint's greedy translations of `sources`, and its beam-search ones when `beam` is given."""
    outputs = {"greedy": translate_sentences(checkpoint.model, checkpoint.tokenizer, sources)}
    if beam is not None:
        outputs["beam"] = beam_translations(checkpoint, sources, beam)
    return outputs


def evaluate(
    checkpoint: Checkpoint, pairs: list[tuple[str, str]], demos: list[str], beam: BeamSearch | None = None
) -> dict:
    """Metrics on `pairs` (greedy decoding, and beam search when `beam` is given) and the demo translations."""
    start = time.perf_counter()
    hypotheses = translate_sentences(checkpoint.model, checkpoint.tokenizer, [s for s, _ in pairs])
    seconds = time.perf_counter() - start
    if beam is not None:
        beam_hypotheses = beam_translations(checkpoint, [s for s, _ in pairs], beam)
        beam_scores = {f"beam_{k}": v for k, v in score(beam_hypotheses, [t for _, t in pairs]).items()}
    return {
        "n": len(pairs),
        **score(hypotheses, [t for _, t in pairs]),
        **(beam_scores if beam is not None else {}),
        "sentences_per_s": round(len(pairs) / seconds, 1),
        "samples": [
            {"source": s, "reference": t, "output": h} for (s, t), h in list(zip(pairs, hypotheses, strict=True))[:5]
        ],
        "errors": [
            {"source": s, "reference": t, "output": h}
            for (s, t), h in zip(pairs, hypotheses, strict=True)
            if h.strip() != t.strip()
        ],
        "demos": dict(zip(demos, translate_sentences(checkpoint.model, checkpoint.tokenizer, demos), strict=True)),
    }


def read_run(run: Path | None) -> dict:
    """A training run folder's settings (as flat as settings.json and with the command that reproduces them), its
    last training log record and its best dev record, for the model card; {} without a run."""
    if run is None or not (run / "settings.json").exists():
        return {}
    settings = TrainSettings.from_dict(json.loads((run / "settings.json").read_text()))
    log = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines() if line]
    train = [r for r in log if r["kind"] == "train"]
    dev = [r for r in log if r["kind"] == "dev"]
    best = max(dev, key=settings.selection_score, default=None)
    return {
        "settings": settings.to_dict(),
        "command": command_line(settings),
        "last": train[-1] if train else {},
        "best_dev": best,
    }


def hardware() -> str:
    """The machine the card's numbers were measured on: CPU, threads, GPU, PyTorch."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = f", GPU {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""
    return f"{cpu} ({torch.get_num_threads()} threads){gpu}, PyTorch {torch.__version__}"


def source_rows(corpus: str | Path) -> list[dict]:
    """The training pairs per source, from the corpus's DATA_CARD.md ("Counts per source")."""
    card = Path(corpus) / "DATA_CARD.md"
    if not card.is_file():
        return []
    rows = []
    for line in card.read_text(encoding="utf-8").split("## Counts per source", 1)[-1].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 11 and cells[0] not in ("source", "---"):
            rows.append({"source": cells[0], "pairs": cells[7], "words": cells[10]})
    return rows


def record_ablation(path: Path, lever: str, checkpoint: Path, split: str, results: dict) -> dict:
    """Append one measurement ("lever: setting", the checkpoint, dev metrics) to a JSON-lines file."""
    name, _, setting = lever.partition(":")
    record = {"lever": name.strip(), "setting": setting.strip(), "checkpoint": str(checkpoint), "split": split}
    for prefix, r in (("", results), ("everyday_", results.get("everyday") or {})):
        for metric in ("bleu", "chrf", "beam_bleu", "beam_chrf"):
            if metric in r:
                record[prefix + metric] = r[metric]
    if "beam" in results:
        record["beam"] = results["beam"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(record, ensure_ascii=False) + "\n")
    return record


def read_ablations(path: Path | None) -> list[dict]:
    """The recorded measurements, in the order they were made (none without a file)."""
    if path is None or not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# What a model card calls the parts of each language pair's corpus (`transformer.training.corpus.sources`).
PAIR_WORDS = {
    "en-de": {"sides": "en / de", "held_out": "Ding", "everyday": "data/everyday"},
    "zh-en": {"sides": "zh / en", "held_out": "authored", "everyday": "data/everyday-zh-en"},
}


def card_numbers(
    checkpoint: Checkpoint,
    results: dict,
    *,
    name: str,
    data: str,
    split: str,
    synthetic: bool,
    runs: list[dict] = (),
    selection: str | None = None,
    sources: list[dict] = (),
    ablations: list[dict] = (),
    replay: Path | None = None,
    pair: str = "en-de",
    trained_on: str | None = None,
    basics_set: Path | None = None,
) -> dict:
    """Everything a model card shows, in one dict: the model, the data, the training runs that made the weights
    (`read_run`, in order), the evaluation (`evaluate`), the sources of the corpus and the recorded ablations."""
    runs = [{**run, "hours": run["last"].get("elapsed_s", 0) / 3600} for run in runs]
    return {
        "name": name,
        "model": {**checkpoint.model.config.to_dict(), "parameters": checkpoint.model.num_parameters()},
        "data": data,
        "sources": list(sources),
        "runs": runs,
        "hours": sum(run["hours"] for run in runs),
        "hardware": (trained_on or hardware()) if runs else None,
        "selection": selection if runs else None,
        "ablations": list(ablations),
        "split": split,
        "synthetic": synthetic,
        "results": {"everyday": None, "beam": None, "basics": None, "before": None, **results},
        "basics_set": {"path": str(basics_set), **basics_sizes(basics_set)} if basics_set else None,
        "replay": replay_summary(replay) if replay is not None else None,
        "pair": PAIR_WORDS[pair],
    }


def basics_sizes(path: Path) -> dict:
    """How many sentences a basics file has, and how many of them are its core."""
    sentences = basics.read_set(path)
    return {"whole": len(sentences), "core": sum(s.core for s in sentences)}


def replay_summary(path: Path) -> dict:
    """What the model card says of a recorded training (`replay`)."""
    replay = read_replay(path)
    return {
        "file": path.name,
        "mb": path.stat().st_size / 1e6,
        "steps": replay.steps,
        "weights": sorted(replay.weights),
        "probe": replay.probe_text,
    }


def model_card(numbers: dict) -> str:
    """The model card (MODEL_CARD.md) from `card_numbers`."""
    return CARDS.get_template("model_card.md.j2").render(numbers)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m transformer.training.evaluate", description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", type=Path)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", help="corpus folder (train/dev/test.tsv.xz)")
    source.add_argument("--task", help="synthetic task name")
    parser.add_argument("--split", default="test", choices=["dev", "test"])
    parser.add_argument("--beam", type=int, default=0, help="also measure beam search of this width (0: greedy only)")
    parser.add_argument("--length-penalty", type=float, default=1.0, help="the beam's length penalty (default 1.0)")
    parser.add_argument("--limit", type=int, default=None, help="evaluate on the first N pairs only")
    parser.add_argument(
        "--run",
        type=Path,
        action="append",
        default=[],
        help="a training run folder, for the model card; repeat it for a model trained in stages (in order)",
    )
    parser.add_argument("--data-description", default=None, help="the Data section of the model card")
    parser.add_argument("--write-card", action="store_true", help=f"write {CARD} into the checkpoint folder")
    parser.add_argument("--selection", default=None, help="which weights are shipped, if not the best dev checkpoint")
    parser.add_argument("--trained-on", default=None, help="the machine the runs trained on, if not this one")
    parser.add_argument(
        "--ablations",
        type=Path,
        help="a JSON-lines file of measurements: with --lever, this evaluation is appended; with --write-card, the "
        "card shows them as a table",
    )
    parser.add_argument(
        "--basics",
        type=Path,
        help="also translate this basics test file (data/basics/PAIR.tsv) and count its core judged right by hand "
        "(data/basics/judged/PAIR.tsv); the card shows both",
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="the weights this checkpoint continues (the ones shipped before): measured the same way, and the card "
        "shows both side by side",
    )
    parser.add_argument(
        "--before-name",
        help="how the card names the weights before (default: their folder), e.g. the stage they were shipped as",
    )
    parser.add_argument("--lever", help='what this evaluation measures, "lever: setting" (e.g. "beam width: 8")')
    args = parser.parse_args(argv)
    if args.lever and not args.ablations:
        parser.error("--lever needs --ablations FILE")
    return args


def measure(args: argparse.Namespace, checkpoint: Checkpoint, beam: BeamSearch | None, demos: bool = True) -> dict:
    """One checkpoint's numbers on the test split (and the everyday one beside it, where the corpus has one), with
    `--basics`, on the basics test set too."""
    from .corpus.tsv import split_file

    pairs = test_pairs(args.corpus, args.task, args.split, args.limit)
    results = evaluate(checkpoint, pairs, demo_sentences(args.corpus, args.task) if demos else [], beam)
    everyday = f"everyday-{args.split}"
    if args.corpus and split_file(args.corpus, everyday) is not None:
        results["everyday"] = evaluate(checkpoint, test_pairs(args.corpus, None, everyday, args.limit), [], beam)
    if beam is not None:
        results["beam"] = {"width": beam.width, "length_penalty": beam.length_penalty}
    if args.basics:
        sentences = basics.read_set(args.basics)
        outputs = basics_outputs(checkpoint, [s.source for s in sentences], beam)
        judgements = basics.Judgements.read(basics.judgements_for(args.basics))
        results["basics"] = basics.measure(sentences, outputs, judgements)
    return results


def print_results(label: str, results: dict) -> None:
    """The numbers of `measure`, one line per test set (the samples and errors counted, not listed)."""
    for name, r in [("test", results), ("everyday", results.get("everyday"))]:
        if r:
            summary = {k: v for k, v in r.items() if k not in ("samples", "errors", "everyday", "demos", "basics")}
            print(label + name, json.dumps({**summary, "errors": len(r["errors"])}, ensure_ascii=False))
    if "basics" in results:
        judged = {decoding: str(basics.Count(**c)) for decoding, c in results["basics"]["judged"].items()}
        print(label + "basics", json.dumps({"chrf": results["basics"]["chrf"], "core judged right": judged}))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    checkpoint = load_checkpoint(args.checkpoint)
    beam = BeamSearch(args.beam, args.length_penalty) if args.beam else None
    results = measure(args, checkpoint, beam)
    print_results("", results)
    print(json.dumps(results["demos"], ensure_ascii=False, indent=2))
    if args.before:
        before = load_checkpoint(args.before)  # measured as it was shipped: with its own length penalty
        penalty = float(before.generation.get("length_penalty", args.length_penalty))
        before_beam = BeamSearch(args.beam, penalty) if args.beam else None
        name = args.before_name or str(args.before)
        results["before"] = {"name": name, **measure(args, before, before_beam, demos=False)}
        print_results("before: ", results["before"])
    if args.lever:
        print("recorded", json.dumps(record_ablation(args.ablations, args.lever, args.checkpoint, args.split, results)))
    if args.write_card:
        write_card(args, checkpoint, results)


def write_card(args: argparse.Namespace, checkpoint: Checkpoint, results: dict) -> None:
    """Write the model card into the checkpoint folder from the measured `results` (`--write-card`)."""
    unjudged = [
        (id_, output)
        for numbers in (results.get("basics"), results.get("before", {}).get("basics"))
        if numbers
        for count in numbers["judged"].values()
        for id_, output in count["unjudged"]
    ]
    if unjudged:
        lines = "\n".join(f"  {id_}\t{output}" for id_, output in dict.fromkeys(unjudged))
        raise SystemExit(f"judge these core outputs in {basics.judgements_for(args.basics)} first:\n{lines}")
    data = args.data_description or (
        f"Synthetic task `{args.task}` (`transformer.training.synthetic`): held-out items never seen in training."
        if args.task
        else f"`{args.corpus}` (see its DATA_CARD.md); test pairs are held-out everyday sentences."
    )
    numbers = card_numbers(
        checkpoint,
        results,
        name=args.checkpoint.name,
        data=data,
        split=args.split,
        synthetic=bool(args.task),
        runs=[run for run in map(read_run, args.run) if run],
        selection=args.selection,
        sources=source_rows(args.corpus) if args.corpus else [],
        ablations=read_ablations(args.ablations),
        replay=next(iter(args.checkpoint.glob("replay.safetensors")), None),
        pair=Path(args.corpus).name if args.corpus and Path(args.corpus).name in PAIR_WORDS else "en-de",
        trained_on=args.trained_on,
        basics_set=args.basics,
    )
    (args.checkpoint / CARD).write_text(model_card(numbers), encoding="utf-8")
    print(f"wrote {args.checkpoint / CARD}")


if __name__ == "__main__":
    main()
