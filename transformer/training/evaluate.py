"""Evaluate a checkpoint and write its model card: `python -m transformer.training.evaluate --help`.

    python -m transformer.training.evaluate checkpoints/en-de --corpus data/en-de --run runs/en-de --write-card
    python -m transformer.training.evaluate checkpoints/numbers-de --task numbers-de --run runs/numbers-de --write-card

Measures BLEU and chrF (sacrebleu) and exact match on the held-out test split with greedy decoding, translates
the demo sentences, and — with `--write-card` — writes `MODEL_CARD.md` from these numbers, the model's config and
the training run's log (steps, time, hardware). Every number in a model card comes from this command.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from ..checkpoint import CARD, Checkpoint, load_checkpoint
from ..decoding import BeamSearch, generate
from .train import command_line, score, translate_sentences

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
    ]
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
    return DEMO_SENTENCES["en-de"]


def beam_translations(checkpoint: Checkpoint, sources: list[str], beam: BeamSearch) -> list[str]:
    """Beam-search translations, one sentence at a time (the app's beam mode, with the same limits as greedy)."""
    outputs = []
    for text in sources:
        ids = checkpoint.tokenizer.encode_source(text)[: checkpoint.model.config.max_positions]
        limit = min(100, 2 * len(ids) + 10, checkpoint.model.config.max_positions - 1)
        outputs.append(checkpoint.tokenizer.decode_target(generate(checkpoint.model, ids, beam, max_new_tokens=limit)))
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
    """Settings and the last log records of a training run folder (if given)."""
    if run is None or not (run / "settings.json").exists():
        return {}
    settings = json.loads((run / "settings.json").read_text())
    log = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines() if line]
    train = [r for r in log if r["kind"] == "train"]
    dev = [r for r in log if r["kind"] == "dev"]
    best = max(
        dev,
        key=lambda r: r["exact_match"] if settings.get("task") else r.get("selection", r["chrf"]),
        default=None,
    )
    return {"settings": settings, "last": train[-1] if train else None, "best_dev": best}


def hardware() -> str:
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


def sources_table(corpus: str | Path) -> list[str]:
    """The training pairs per source, from the corpus's DATA_CARD.md ("Counts per source"), as Markdown lines."""
    card = Path(corpus) / "DATA_CARD.md"
    if not card.is_file():
        return []
    rows = []
    for line in card.read_text(encoding="utf-8").split("## Counts per source", 1)[-1].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 11 and cells[0] not in ("source", "---"):
            rows.append(f"| {cells[0]} | {cells[7]} | {cells[10]} |")
    if not rows:
        return []
    return ["| source | training pairs (distinct) | words en / de |", "|---|---|---|", *rows, ""]


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


def ablation_table(path: Path) -> list[str]:
    """The recorded measurements as a Markdown table, in the order they were made."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def metric(r: dict, prefix: str, name: str) -> str:
        beam = r.get(f"{prefix}beam_{name}")
        return f"{r.get(prefix + name, '–')}" + (f" (beam {beam})" if beam is not None else "")

    lines = [
        "| lever | setting | Ding dev chrF | everyday dev chrF | everyday dev BLEU | weights |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['lever']} | {r['setting']} | {metric(r, '', 'chrf')} | {metric(r, 'everyday_', 'chrf')} | "
            f"{metric(r, 'everyday_', 'bleu')} | `{r['checkpoint']}` |"
        )
    return [*lines, ""]


def model_card(
    name: str,
    checkpoint: Checkpoint,
    results: dict,
    data: str,
    runs: list[dict],
    split: str,
    synthetic: bool,
    extra: list[str] = (),
) -> str:
    """The model card; `runs`: the training runs that made the weights, in order (`read_run`), if known;
    `extra`: more Markdown lines for the Data section (the sources table)."""
    cfg = checkpoint.model.config
    params = checkpoint.model.num_parameters()
    lines = [
        f"# {name}",
        "",
        "An encoder–decoder Transformer trained from scratch with Transformer Explorer "
        "(`python -m transformer.training.train`). Numbers below come from `python -m transformer.training.evaluate`.",
        "",
        "## Model",
        "",
        "| | |",
        "|---|---|",
        f"| parameters | {params:,} |",
        f"| layers | {cfg.n_encoder_layers} encoder + {cfg.n_decoder_layers} decoder |",
        f"| d_model / heads / d_ff | {cfg.d_model} / {cfg.n_heads} / {cfg.d_ff} |",
        f"| norm / positions / activation | {cfg.norm_position} / {cfg.positional_encoding} / {cfg.activation} |",
        f"| vocabulary | {cfg.src_vocab_size} source, {cfg.tgt_vocab_size} target "
        f"({'shared' if cfg.share_embeddings else 'separate'}, sentencepiece unigram) |",
        "| weights | safetensors, float16 storage (loaded as float32) |",
        "",
        "## Data",
        "",
        data,
        "",
        *extra,
    ]
    if runs:
        lines += ["## Training", ""]
        for i, run in enumerate(runs, 1):
            s, last = run["settings"], run["last"] or {}
            stage = f"Stage {i} of {len(runs)}" if len(runs) > 1 else ""
            start = f"continued from the weights of `{s['init_from']}`; " if s.get("init_from") else ""
            attention_dropout = f", attention dropout {s['attention_dropout']}" if s.get("attention_dropout") else ""
            lines += [
                f"- {stage + ': ' if stage else ''}{start}{last.get('step', '?')} steps "
                f"({last.get('epoch', 0) + 1} epochs over the training split), "
                f"batches of about {s['batch_tokens']} tokens, Adam (0.9, 0.98), warm-up {s['warmup']} steps then "
                f"inverse square root (scale {s['lr_scale']}), label smoothing {s['label_smoothing']}, "
                f"dropout {s['dropout']}{attention_dropout}, gradient clipping {s['clip_norm']}, seed {s['seed']}; "
                f"{last.get('elapsed_s', 0) / 3600:.2f} hours, last measured throughput "
                f"{last.get('tokens_per_s', '?')} target tokens/s.",
                f"  Reproduce: `{command_line(s)}`.",
            ]
        hours = sum((run["last"] or {}).get("elapsed_s", 0) for run in runs) / 3600
        lines += [
            f"- Training time ({'all stages' if len(runs) > 1 else 'the whole run'}): {hours:.2f} hours.",
            f"- Hardware: {hardware()}.",
            "- Then this evaluation command with `--write-card`.",
        ]
        if runs[-1].get("selection"):
            lines.append(f"- The weights shipped: {runs[-1]['selection']}")
        elif runs[-1]["best_dev"]:
            b, s = runs[-1]["best_dev"], runs[-1]["settings"]
            lines.append(
                f"- Best dev checkpoint (the one shipped): step {b['step']}, BLEU {b['bleu']}, chrF {b['chrf']}, "
                f"exact match {b['exact_match']}% on the first {s['dev_size']} dev pairs."
            )
        lines.append("")
    r = results
    lines += ["## Evaluation", "", f"Held-out {split} split, {r['n']} pairs, greedy decoding, sacrebleu defaults:", ""]
    if not synthetic:
        lines[-2] = "Greedy decoding, sacrebleu defaults:"
    if synthetic:  # one-word German numbers make BLEU's 4-grams meaningless: exact match is the measure
        n_errors = len(r["errors"])
        lines += [
            "| exact match | chrF | errors |",
            "|---|---|---|",
            f"| {r['exact_match']}% | {r['chrf']} | {n_errors} of {r['n']} |",
            "",
        ]
        if n_errors:
            lines += [
                "Every error:" if n_errors <= 20 else "The first 20 errors:",
                "",
                "| source | reference | output |",
            ]
            lines += [
                "|---|---|---|",
                *[f"| {e['source']} | {e['reference']} | {e['output']} |" for e in r["errors"][:20]],
            ]
            lines.append("")
    else:
        sets = [(f"Ding {split} (held-out Ding sentences)", r)]
        if r.get("everyday"):
            sets.insert(0, (f"everyday {split} (`data/everyday`, written for the project)", r["everyday"]))
        beam = "beam" in r  # the beam width and length penalty used, if measured
        lines[-2] = (
            "Greedy decoding"
            + (
                f" and beam search (width {r['beam']['width']}, length penalty {r['beam']['length_penalty']})"
                if beam
                else ""
            )
            + ", sacrebleu defaults:"
        )
        lines += [
            "| test set | pairs | BLEU | chrF | exact match |" + (" beam BLEU | beam chrF |" if beam else ""),
            "|---|---|---|---|---|" + ("---|---|" if beam else ""),
            *[
                f"| {name} | {x['n']:,} | {x['bleu']} | {x['chrf']} | {x['exact_match']}% |"
                + (f" {x['beam_bleu']} | {x['beam_chrf']} |" if beam else "")
                for name, x in sets
            ],
            "",
        ]
    lines += [
        "## Demo translations",
        "",
        "| source | output |",
        "|---|---|",
        *[f"| {src} | {out} |" for src, out in r["demos"].items()],
        "",
        "## Samples from the test split" + ("s" if r.get("everyday") else ""),
        "",
        "| source | reference | output |",
        "|---|---|---|",
        *[f"| {x['source']} | {x['reference']} | {x['output']} |" for x in r.get("everyday", {}).get("samples", [])],
        *[f"| {x['source']} | {x['reference']} | {x['output']} |" for x in r["samples"]],
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m transformer.training.evaluate", description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", type=Path)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", help="corpus folder (train/dev/test.tsv.gz)")
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
    parser.add_argument(
        "--ablations",
        type=Path,
        help="a JSON-lines file of measurements: with --lever, this evaluation is appended; with --write-card, the "
        "card shows them as a table",
    )
    parser.add_argument("--lever", help='what this evaluation measures, "lever: setting" (e.g. "beam width: 8")')
    args = parser.parse_args(argv)

    checkpoint = load_checkpoint(args.checkpoint)
    pairs = test_pairs(args.corpus, args.task, args.split, args.limit)
    beam = BeamSearch(args.beam, args.length_penalty) if args.beam else None
    results = evaluate(checkpoint, pairs, demo_sentences(args.corpus, args.task), beam)
    everyday = f"everyday-{args.split}"
    if args.corpus and (Path(args.corpus) / f"{everyday}.tsv.gz").exists():
        results["everyday"] = evaluate(checkpoint, test_pairs(args.corpus, None, everyday, args.limit), [], beam)
    if beam is not None:
        results["beam"] = {"width": beam.width, "length_penalty": beam.length_penalty}
    for name, r in [("test", results), ("everyday", results.get("everyday"))]:
        if r:
            summary = {k: v for k, v in r.items() if k not in ("samples", "errors", "everyday", "demos")}
            print(name, json.dumps({**summary, "errors": len(r["errors"])}, ensure_ascii=False))
    print(json.dumps(results["demos"], ensure_ascii=False, indent=2))
    if args.lever:
        if not args.ablations:
            parser.error("--lever needs --ablations FILE")
        print("recorded", json.dumps(record_ablation(args.ablations, args.lever, args.checkpoint, args.split, results)))
    if args.write_card:
        data = args.data_description or (
            f"Synthetic task `{args.task}` (`transformer.training.synthetic`): held-out items never seen in training."
            if args.task
            else f"`{args.corpus}` (see its DATA_CARD.md); test pairs are held-out everyday sentences."
        )
        runs = [run for run in map(read_run, args.run) if run]
        if runs and args.selection:
            runs[-1]["selection"] = args.selection
        card = model_card(
            args.checkpoint.name,
            checkpoint,
            results,
            data,
            runs,
            args.split,
            bool(args.task),
            extra=sources_table(args.corpus) if args.corpus else [],
        )
        if args.ablations and args.ablations.is_file():
            head, sep, tail = card.partition("## Evaluation")
            table = ["## What each lever did (dev sets)", "", *ablation_table(args.ablations)]
            card = head + "\n".join(table) + "\n" + sep + tail
        (args.checkpoint / CARD).write_text(card, encoding="utf-8")
        print(f"wrote {args.checkpoint / CARD}")


if __name__ == "__main__":
    main()
