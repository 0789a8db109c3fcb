"""The evaluation command: metrics, demo translations and a model card made of them."""

from __future__ import annotations

import shutil
from pathlib import Path

from transformer.evaluate import main
from transformer.train import score

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
