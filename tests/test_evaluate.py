"""The evaluation command: metrics, demo translations and a model card made of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from transformer.training.evaluate import main, score
from transformer.training.settings import TrainSettings

SHIPPED = Path(__file__).resolve().parent.parent / "checkpoints" / "numbers-de"


def test_score_is_sacrebleu_and_exact_match():
    perfect = score(["Das Wetter ist heute schön ."], ["Das Wetter ist heute schön ."])
    assert perfect == {"bleu": 100.0, "chrf": 100.0, "exact_match": 100.0}
    half = score(["a b c d", "x"], ["a b c d", "y"])
    assert half["exact_match"] == 50.0 and 0 < half["chrf"] < 100


def test_evaluate_writes_a_model_card_from_its_measurements(tmp_path, capsys):
    folder = tmp_path / "numbers-de"
    shutil.copytree(SHIPPED, folder)
    (folder / "MODEL_CARD.md").unlink()
    main([str(folder), "--task", "numbers-de", "--limit", "12", "--write-card"])
    printed = capsys.readouterr().out
    assert '"n": 12' in printed
    card = (folder / "MODEL_CARD.md").read_text()
    assert "Held-out test split, 12 pairs" in card
    assert "| twenty-one | einundzwanzig |" in card  # a demo translation
    assert "parameters" in card and "exact match" in card


def test_a_model_trained_in_stages_lists_every_stage_in_its_card(tmp_path):
    def fake_run(name: str, steps: int, hours: float, **settings) -> Path:
        run = tmp_path / name
        run.mkdir()
        values = TrainSettings.from_dict({"out": str(run), "task": "numbers-de", **settings}).to_dict()
        (run / "settings.json").write_text(json.dumps(values))
        records = [
            {"kind": "train", "step": steps, "epoch": 2, "loss": 1.0, "tokens_per_s": 900, "elapsed_s": hours * 3600},
            {"kind": "dev", "step": steps, "dev_loss": 1.0, "bleu": 1.0, "chrf": 2.0, "exact_match": 3.0},
        ]
        (run / "train_log.jsonl").write_text("\n".join(map(json.dumps, records)))
        return run

    first = fake_run("first", 700, 1.5)
    second = fake_run("second", 300, 0.5, init_from="checkpoints/x", dropout=0.3, attention_dropout=0.1)
    folder = tmp_path / "numbers-de"
    shutil.copytree(SHIPPED, folder)
    selection = "the average of the last two snapshots."
    main(
        [
            str(folder),
            "--task",
            "numbers-de",
            "--limit",
            "4",
            "--write-card",
            "--run",
            str(first),
            "--run",
            str(second),
            "--selection",
            selection,
        ]
    )
    card = (folder / "MODEL_CARD.md").read_text()
    assert "- Stage 1 of 2: 700 steps" in card and "dropout 0.1, gradient" in card
    assert "- Stage 2 of 2: continued from the weights of `checkpoints/x`; 300 steps" in card
    assert "dropout 0.3, attention dropout 0.1" in card and "--init-from checkpoints/x" in card
    assert "Training time (all stages): 2.00 hours." in card
    assert f"The weights shipped: {selection}" in card


def _number_corpus(folder: Path) -> Path:
    """A corpus folder in the layout of data/en-de, with number words standing in for sentences."""
    from transformer.training.corpus.tsv import write_pairs

    pairs = [("twenty-one", "einundzwanzig"), ("seven", "sieben"), ("ninety-seven", "siebenundneunzig")]
    folder.mkdir()
    for split in ("train", "dev", "test", "everyday-dev", "everyday-test"):
        write_pairs(folder / f"{split}.tsv.gz", pairs if "everyday" in split else pairs[:2])
    (folder / "DATA_CARD.md").write_text(
        "## Counts per source\n\n| source | extracted | kept | unique | used | overlap | everyday overlap | train "
        "| dev | test | train words en / de |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
        "| authored | 10 | 9 | 9 | 9 | 0 | 1 | 8 | 0 | 0 | 40 / 38 |\n",
        encoding="utf-8",
    )
    return folder


def test_evaluate_reports_both_test_sets_greedy_and_beam_and_records_ablations(tmp_path, capsys):
    corpus = _number_corpus(tmp_path / "corpus")
    folder = tmp_path / "numbers-de"
    shutil.copytree(SHIPPED, folder)
    ablations = tmp_path / "ablations.jsonl"
    main(
        [
            str(folder),
            "--corpus",
            str(corpus),
            "--split",
            "dev",
            "--beam",
            "2",
            "--lever",
            "beam width: 2",
            "--ablations",
            str(ablations),
        ]
    )
    printed = capsys.readouterr().out
    assert 'everyday {"n": 3, "bleu"' in printed and '"beam_chrf": 100.0' in printed
    record = json.loads(ablations.read_text())
    assert record["lever"] == "beam width" and record["setting"] == "2" and record["split"] == "dev"
    assert record["everyday_chrf"] == record["everyday_beam_chrf"] == 100.0
    main([str(folder), "--corpus", str(corpus), "--beam", "2", "--write-card", "--ablations", str(ablations)])
    card = (folder / "MODEL_CARD.md").read_text()
    assert "Greedy decoding and beam search (width 2, length penalty 1.0)" in card
    # one-word "sentences": BLEU has no 4-grams to count, chrF is perfect
    assert (
        "| everyday test (`data/everyday`, written for the project) | 3 | 0.0 | 100.0 | 100.0% | 0.0 | 100.0 |" in card
    )
    assert "| Ding test (held-out Ding sentences) | 2 |" in card
    assert "| authored | 8 | 40 / 38 |" in card  # the sources, from the corpus's data card
    assert "## What each lever did (dev sets)" in card
    assert "| beam width | 2 | 100.0 (beam 100.0) | 100.0 (beam 100.0) | 0.0 (beam 0.0) |" in card
    assert card.index("## What each lever did") < card.index("## Evaluation")


def _basics(folder: Path, judged: str) -> Path:
    """A basics test file of number words (two core sentences, one not) and its hand judgements."""
    path = folder / "basics" / "en-de.tsv"
    (path.parent / "judged").mkdir(parents=True)
    path.write_text(
        "id\tsource\treferences\tcategory\tcore\n"
        "en-de-001\ttwenty-one\teinundzwanzig ||| 21\tnumber-time-date\t1\n"
        "en-de-002\tseven\tsieben Stück\tnumber-time-date\t1\n"
        "en-de-003\tninety-seven\tsiebenundneunzig\tnumber-time-date\t0\n",
        encoding="utf-8",
    )
    (path.parent / "judged" / "en-de.tsv").write_text("id\toutput\tverdict\treason\n" + judged, encoding="utf-8")
    return path


def test_the_card_puts_the_basics_and_the_weights_before_side_by_side(tmp_path, capsys):
    import pytest

    corpus = _number_corpus(tmp_path / "corpus")
    folder = tmp_path / "numbers-de"
    shutil.copytree(SHIPPED, folder)
    basics = _basics(tmp_path, judged="")
    command = [str(folder), "--corpus", str(corpus), "--beam", "2", "--basics", str(basics), "--before", str(SHIPPED)]
    # "sieben" is neither a reference of "seven" nor judged: the card waits for a verdict and names the output.
    with pytest.raises(SystemExit, match=r"judge these core outputs in .*en-de.tsv first:\n  en-de-002\tsieben$"):
        main([*command, "--write-card"])
    assert 'basics {"chrf": {"greedy": {"whole": ' in capsys.readouterr().out
    (basics.parent / "judged" / "en-de.tsv").write_text(
        "id\toutput\tverdict\treason\nen-de-002\tsieben\twrong\tthe test wants the pieces counted\n"
    )
    main([*command, "--write-card"])
    card = (folder / "MODEL_CARD.md").read_text()
    assert f"against the weights they continue, `{SHIPPED}` (before)" in card
    assert "beam search (width 2; length penalty 1.0 before, 1.0 after)" in card
    assert "| everyday test (3) | 100.0 | 100.0 | +0.00 | 100.0 | 100.0 | +0.00 |" in card
    assert "| basics core judged right by hand | 1/2 | 1/2 | +0 | 1/2 | 1/2 | +0 |" in card
    assert "| greedy | " in card and " | 1/2 |" in card
    assert "breaks none of the core sentences greedy decoding gets right" in card
    assert "| seven | greedy | sieben |" in card and "| seven | beam | sieben |" in card
    assert card.index("## Before and after") < card.index("## The basics test set") < card.index("## Demo")
    # the weights before, named as they were shipped (a folder that held them once)
    main([*command, "--before-name", "numbers-de as shipped before", "--write-card"])
    card = (folder / "MODEL_CARD.md").read_text()
    assert "against the weights they continue, `numbers-de as shipped before` (before)" in card


def test_lever_without_an_ablations_file_is_an_error(tmp_path):
    import pytest

    with pytest.raises(SystemExit):
        main([str(SHIPPED), "--task", "numbers-de", "--limit", "2", "--lever", "x: 1"])


def _table(card: str, heading: str) -> list[list[str]]:
    """The rows (cells, stripped) of the first table after `heading`, without its header and rule."""
    section = card.split(f"\n{heading}\n", 1)[1]
    lines = [line for line in section.split("\n\n## ", 1)[0].splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_the_card_template_gives_back_the_shipped_en_de_card_from_its_numbers(tmp_path, monkeypatch):
    """The shipped card, rendered again from its measured numbers (read off its tables) and from the settings and
    logs of the five training stages shipped with it, is the same text, byte for byte."""
    from transformer.checkpoint import load_checkpoint
    from transformer.training import evaluate

    shipped = SHIPPED.parent / "en-de"
    monkeypatch.chdir(shipped.parent.parent)  # the card names the basics test set by its path from the root
    card = (shipped / "MODEL_CARD.md").read_text(encoding="utf-8")
    runs = []
    for stage in ("stage-1-", "stage-2-", "stage-3-", "stage-4-", ""):  # the last stage's files carry no prefix
        run = tmp_path / f"run-{stage or 'last'}"
        run.mkdir()
        shutil.copy(shipped / f"{stage}settings.json", run / "settings.json")
        shutil.copy(shipped / f"{stage}train_log.jsonl", run / "train_log.jsonl")
        runs.append(evaluate.read_run(run))
    monkeypatch.setattr(evaluate, "hardware", lambda: card.split("- Hardware: ", 1)[1].split(".\n", 1)[0])

    def test_set(row: list[str], samples: list[dict]) -> dict:
        n, bleu, chrf, exact_match, beam_bleu, beam_chrf = row[1:]
        scores = dict(
            bleu=bleu,
            chrf=float(chrf),
            exact_match=exact_match.rstrip("%"),
            beam_bleu=beam_bleu,
            beam_chrf=float(beam_chrf),
        )
        return {"n": int(n.replace(",", "")), **scores, "samples": samples, "errors": [], "demos": {}}

    def ablation(row: list[str]) -> dict:
        record = {"lever": row[0], "setting": row[1], "checkpoint": row[5].strip("`")}
        for prefix, metric, cell in (
            ("", "chrf", row[2]),
            ("everyday_", "chrf", row[3]),
            ("everyday_", "bleu", row[4]),
        ):
            value, _, beam = cell.removesuffix(")").partition(" (beam ")
            record |= {prefix + metric: value} | ({f"{prefix}beam_{metric}": beam} if beam else {})
        return record

    everyday_row, ding_row = _table(card, "## Evaluation")
    sample_rows = _table(card, "## Samples from the test splits")
    samples = [dict(zip(("source", "reference", "output"), row, strict=True)) for row in sample_rows]
    results = test_set(ding_row, samples[5:]) | {
        "everyday": test_set(everyday_row, samples[:5]),
        "beam": {"width": 4, "length_penalty": 1.0},
        "demos": dict(_table(card, "## Demo translations")),
        **basics_numbers(card),
    }
    numbers = evaluate.card_numbers(
        load_checkpoint(shipped),
        results,
        name="en-de",
        data=card.split("## Data\n\n", 1)[1].split("\n", 1)[0],
        split="test",
        synthetic=False,
        runs=runs,
        selection=card.split("- The weights shipped: ", 1)[1].split("\n", 1)[0],
        sources=[dict(zip(("source", "pairs", "words"), row, strict=True)) for row in _table(card, "## Data")],
        ablations=[ablation(row) for row in _table(card, "## What each lever did (dev sets)")],
        basics_set=Path("data/basics/en-de.tsv"),
    )
    assert evaluate.model_card(numbers) == card


def basics_numbers(card: str) -> dict:
    """What the card's "Before and after" and "The basics test set" sections show, read off their tables."""
    rows = {row[0].split(" (")[0]: row for row in _table(card, "## Before and after")}
    (everyday,), (held_out,) = ([v for k, v in rows.items() if k.startswith(w)] for w in ("everyday", "Ding"))
    before_basics, after_basics = {"chrf": {"greedy": {}, "beam": {}}}, {"chrf": {"greedy": {}, "beam": {}}}
    for subset in ("whole", "core"):
        row = rows[f"basics, {subset}"]
        before_basics["chrf"]["greedy"][subset], before_basics["chrf"]["beam"][subset] = float(row[1]), float(row[4])
    judged = rows["basics core judged right by hand"]
    before_basics["judged"] = {
        "greedy": {"right": int(judged[1].split("/")[0])},
        "beam": {"right": int(judged[4].split("/")[0])},
    }
    scores = card.split("\n## The basics test set\n", 1)[1].split("What it still gets wrong", 1)[0]
    for decoding, whole, core, right in _table(scores, ""):
        after_basics["chrf"][decoding] = {"whole": float(whole), "core": float(core)}
        after_basics.setdefault("judged", {})[decoding] = {"right": int(right.split("/")[0])}
    misses = card.split("What it still gets wrong in the core:\n\n", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    after_basics["misses"] = {"greedy": [], "beam": []}
    for line in misses:
        source, decoding, output = (cell.strip() for cell in line.strip("|").split("|"))
        after_basics["misses"][decoding].append({"source": source, "output": output})
    after_basics["beam_broke"] = []
    before = {
        "name": card.split("the weights they continue, `", 1)[1].split("`", 1)[0],
        "chrf": float(held_out[1]),
        "beam_chrf": float(held_out[4]),
        "everyday": {"chrf": float(everyday[1]), "beam_chrf": float(everyday[4])},
        "beam": {"width": 4, "length_penalty": 2.0},
        "basics": before_basics,
    }
    return {"before": before, "basics": after_basics}
