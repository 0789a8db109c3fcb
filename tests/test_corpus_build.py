"""The corpus folder: pairs as .tsv.gz, the data card and notice, the licence files, the command line. No downloads."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from transformer.training.corpus import packages
from transformer.training.corpus.__main__ import main, parse_repeat, parser
from transformer.training.corpus.build import write_corpus
from transformer.training.corpus.card import data_card, measure, notice, split_numbers
from transformer.training.corpus.sources import EN_DE
from transformer.training.corpus.splitting import make_corpus
from transformer.training.corpus.tsv import load_corpus, read_pairs, write_pairs

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "data"
PAIRS = [("Better late than never.", "Besser spät als nie."), ("Where is the station?", "Wo ist der Bahnhof?")]


# --- pairs on disk ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pairs.tsv", "pairs.tsv.xz", "pairs.tsv.gz"])
def test_write_and_read_pairs_round_trip(tmp_path, name):
    write_pairs(tmp_path / name, PAIRS)
    assert read_pairs(tmp_path / name) == PAIRS


@pytest.mark.parametrize("suffix", [".xz", ".gz"])
def test_compressed_output_is_byte_identical(tmp_path, suffix):
    write_pairs(tmp_path / f"a.tsv{suffix}", PAIRS)
    write_pairs(tmp_path / f"b.tsv{suffix}", PAIRS)
    assert (tmp_path / f"a.tsv{suffix}").read_bytes() == (tmp_path / f"b.tsv{suffix}").read_bytes()


def test_a_corpus_folder_is_read_whichever_way_its_splits_are_stored(tmp_path):
    for split, suffix in zip(("train", "dev", "test"), (".tsv.xz", ".tsv.gz", ".tsv"), strict=True):
        write_pairs(tmp_path / f"{split}{suffix}", PAIRS[: 1 + (split == "train")])
    assert load_corpus(tmp_path) == {"train": PAIRS, "dev": PAIRS[:1], "test": PAIRS[:1]}
    (tmp_path / "test.tsv").unlink()
    with pytest.raises(FileNotFoundError, match="no test split"):
        load_corpus(tmp_path)


def test_write_pairs_refuses_tabs_and_read_pairs_refuses_lines_without_one(tmp_path):
    with pytest.raises(ValueError, match="tab or newline"):
        write_pairs(tmp_path / "x.tsv", [("a\tb", "c")])
    (tmp_path / "bad.tsv").write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected one tab"):
        read_pairs(tmp_path / "bad.tsv")


# --- the corpus folder -----------------------------------------------------------------------------------------------


def test_write_corpus_and_load_corpus(tmp_path):
    raw = {"ding-sentences": [(f"The house number {i} is red.", f"Das Haus Nummer {i} ist rot.") for i in range(9)]}
    splits, stats = make_corpus(
        raw, 0, selections=EN_DE.selections(), held_out_source="ding-sentences", dev_size=2, test_size=3
    )
    copyright_file = tmp_path / "copyright"
    copyright_file.write_text("License: GPL-2+\n", encoding="utf-8")
    card = data_card(EN_DE, measure(splits, stats, {}, {"trans-de-en": "1.9-6"}, seed=0, excluded=[]))
    write_corpus(tmp_path / "out", splits, card, notice(EN_DE), {"trans-de-en.copyright": copyright_file})
    assert load_corpus(tmp_path / "out") == splits
    assert (tmp_path / "out/licenses/trans-de-en.copyright").read_text(encoding="utf-8") == "License: GPL-2+\n"
    assert "GPL-2+" in (tmp_path / "out/licenses/NOTICE.md").read_text(encoding="utf-8")
    card_text = (tmp_path / "out/DATA_CARD.md").read_text(encoding="utf-8")
    assert "python -m transformer.training.corpus build --out data/en-de --seed 0\n" in card_text
    assert "| train | 4 | 24 | 24 | 100% |" in card_text
    assert "| ding-sentences | `trans-de-en` 1.9-6 | GPL-2+ |" in card_text


def test_the_shipped_data_card_is_its_template_filled_with_the_shipped_numbers():
    """The split numbers are measured again from the shipped files; the per-source ones can only be measured with
    the Debian packages, so they come from a fixture: the numbers the shipped card shows, read off its tables."""
    numbers = json.loads((FIXTURES / "en-de-card-numbers.json").read_text(encoding="utf-8"))
    numbers["splits"] = {split: split_numbers(pairs) for split, pairs in load_corpus(ROOT / "data/en-de").items()}
    assert data_card(EN_DE, numbers) == (ROOT / "data/en-de/DATA_CARD.md").read_text(encoding="utf-8")
    assert notice(EN_DE) == (ROOT / "data/en-de/licenses/NOTICE.md").read_text(encoding="utf-8")


def test_licence_files_include_the_common_licence_texts(tmp_path, monkeypatch):
    monkeypatch.setattr(packages, "COMMON_LICENCES_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="GPL-2"):
        packages.licence_files(tmp_path / "x", ["trans-de-en"])
    for name in packages.COMMON_LICENCES:
        (tmp_path / name).write_text(name, encoding="utf-8")
    assert packages.licence_files(tmp_path / "x", ["trans-de-en"]) == {
        "trans-de-en.copyright": tmp_path / "x/trans-de-en/usr/share/doc/trans-de-en/copyright",
        "GPL-2": tmp_path / "GPL-2",
        "GPL-3": tmp_path / "GPL-3",
        "MPL-2.0": tmp_path / "MPL-2.0",
    }


# --- the command line ------------------------------------------------------------------------------------------------


def test_the_documented_build_commands_name_this_package_and_parse():
    documents = ("docs/training.md", "data/everyday/README.md", "data/en-de/DATA_CARD.md")
    text = "\n".join((ROOT / name).read_text(encoding="utf-8") for name in documents)
    assert set(re.findall(r"python -m transformer\.training\.(\w+) build", text)) == {"corpus"}
    commands = re.findall(r"python -m transformer\.training\.corpus (build --[^`\n#]*)", text)
    assert len(commands) == 2  # docs/training.md's and the data card's
    for command in commands:
        assert parser().parse_args(shlex.split(command)).exclude == ["ddtp"]


def test_build_without_the_packages_says_what_is_missing(tmp_path):
    with pytest.raises(SystemExit, match="no trans-de-en_"):
        main(["build", "--out", str(tmp_path / "out"), "--from-debs", str(tmp_path)])


def test_repeat_settings_are_parsed_and_bad_ones_are_refused():
    assert parse_repeat(None, EN_DE) is None
    assert parse_repeat(["authored=1", "ding-lexicon=2"], EN_DE) == {"authored": 1, "ding-lexicon": 2}
    for bad in (["authored"], ["authored=0"], ["authored=x"], ["nonsense=2"]):
        with pytest.raises(ValueError, match="SOURCE=N"):
            parse_repeat(bad, EN_DE)


def test_build_refuses_a_bad_repeat_with_a_usage_message(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["build", "--out", str(tmp_path / "out"), "--from-debs", str(tmp_path), "--repeat", "authored=0"])
    assert "--repeat takes SOURCE=N" in capsys.readouterr().err
