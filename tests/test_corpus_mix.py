"""A corpus for continuing a model (transformer.training.corpus.mix): new pairs repeated, a replay sample of the old
train split, the held-out splits unchanged and kept apart from the new pairs."""

from __future__ import annotations

from collections import Counter

import pytest

from transformer.training.corpus.__main__ import main
from transformer.training.corpus.mix import mix_corpus, read_held_out
from transformer.training.corpus.tsv import load_corpus, write_pairs


def _base() -> dict[str, list[tuple[str, str]]]:
    """An old corpus: 40 train lines (one pair twice), and one pair in each held-out split."""
    train = [(f"旧句子{i}号。", f"Old sentence number {i}.") for i in range(39)]
    train.append(("旧句子0号。", "Old sentence number 0."))
    return {
        "train": train,
        "dev": [("我们明天去北京看长城。", "Tomorrow we are going to Beijing to see the Great Wall.")],
        "test": [("我的猫很喜欢睡觉。", "My cat loves to sleep.")],
        "everyday-dev": [("请把窗户打开一点儿。", "Please open the window a little.")],
        "everyday-test": [("今天下午我要去医院看牙。", "This afternoon I'm going to the dentist.")],
    }


ADDED = [
    ("你好！", "Hello!"),
    ("谢谢你！", "Thank you!"),
    ("谢谢你。", "Thank you."),  # a repeat of the one before, punctuation aside
    ("我的猫很喜欢睡觉！", "My cat really loves sleeping!"),  # the test's Chinese, up to punctuation: exact
    ("你好吗？", "My cat loves to sleep."),  # the test's English: exact, on the other side
    ("请把窗户打开一点。", "Open the window a bit, please."),  # the everyday dev's Chinese less 儿: near
    ("", "Empty."),  # rejected by the filters
]


def test_mix_repeats_the_new_pairs_replays_the_old_and_keeps_the_held_out_apart():
    splits, report = mix_corpus(_base(), ADDED, repeat=3, replay=10, seed=0)
    assert report.added == 7 and report.kept == 2 and report.replay == 10 and report.train == 2 * 3 + 10
    assert [pair for pair, _ in report.rejected] == [("", "Empty.")]
    assert report.duplicates == [("谢谢你。", "Thank you.")]
    assert [(pair[0], kind, split) for pair, kind, split, _ in report.collisions] == [
        ("我的猫很喜欢睡觉！", "exact", "test"),
        ("你好吗？", "exact", "test"),
        ("请把窗户打开一点。", "near", "everyday-dev"),
    ]
    assert report.collisions[2][3] == _base()["everyday-dev"][0]
    counts = Counter(splits["train"])
    assert counts[("你好！", "Hello!")] == 3 and counts[("谢谢你！", "Thank you!")] == 3
    replayed = [pair for pair in splits["train"] if pair[0].startswith("旧")]
    assert len(replayed) == 10 and set(replayed) <= set(_base()["train"])
    for split in ("dev", "test", "everyday-dev", "everyday-test"):
        assert splits[split] == _base()[split]


def test_mix_is_a_function_of_the_seed():
    first, _ = mix_corpus(_base(), ADDED, repeat=2, replay=20, seed=1)
    again, _ = mix_corpus(_base(), ADDED, repeat=2, replay=20, seed=1)
    other, _ = mix_corpus(_base(), ADDED, repeat=2, replay=20, seed=2)
    assert first == again and first != other
    everything, _ = mix_corpus(_base(), ADDED, repeat=1, replay=40, seed=0)
    assert Counter(pair for pair in everything["train"] if pair[0].startswith("旧")) == Counter(_base()["train"])


def test_mix_refuses_a_replay_larger_than_the_old_train_split_or_no_repeat():
    with pytest.raises(ValueError, match="replay"):
        mix_corpus(_base(), ADDED, repeat=1, replay=41, seed=0)
    with pytest.raises(ValueError, match="repeat"):
        mix_corpus(_base(), ADDED, repeat=0, replay=1, seed=0)


def _written(tmp_path):
    """A base corpus and a file of basics on disk, as the command reads them: (the corpus folder, the file)."""
    base = tmp_path / "base"
    base.mkdir()
    for split, pairs in _base().items():
        write_pairs(base / f"{split}.tsv.gz", pairs)
    added = tmp_path / "basics.tsv"
    added.write_text("".join(f"{a}\t{b}\tlanguage\timperative\n" for a, b in ADDED), encoding="utf-8")
    return base, added


def test_the_mix_command_writes_train_copies_the_held_out_files_and_lists_what_it_dropped(tmp_path, capsys):
    base, added = _written(tmp_path)
    out = tmp_path / "mixed"
    argv = ["mix", "--base", str(base), "--add", str(added), "--repeat", "4", "--replay", "8", "--out", str(out)]
    main(argv)
    assert "3 near or equal to a held-out sentence, 2 kept × 4" in capsys.readouterr().out
    corpus = load_corpus(out)
    assert len(corpus["train"]) == 2 * 4 + 8
    for split in ("dev", "test", "everyday-dev", "everyday-test"):
        assert (out / f"{split}.tsv.gz").read_bytes() == (base / f"{split}.tsv.gz").read_bytes()
    card = (out / "MIX.md").read_text(encoding="utf-8")
    assert "python -m transformer.training.corpus mix --base" in card
    assert (
        "| 请把窗户打开一点。 / Open the window a bit, please. | near (everyday-dev) | 请把窗户打开一点儿。 / " in card
    )
    main(argv)  # the same command again: the same bytes
    assert load_corpus(out) == corpus


HELD_OUT = [
    ("basics.tsv", "你好！"),  # an added pair's Chinese: exact
    ("basics.tsv", "旧句子0号！"),  # a train line (twice in the old split), up to punctuation: exact
    ("plain.tsv", "旧句子3号呀。"),  # a train line with a character more: near
    ("plain.tsv", "Thank you!"),  # an added pair's English: only the source side is compared, so nothing
]


def test_further_held_out_files_keep_their_sources_out_of_the_added_pairs_and_the_replay():
    splits, report = mix_corpus(_base(), ADDED, repeat=3, replay=40, seed=0, held_out=HELD_OUT)
    assert [(pair, kind, name, source) for pair, kind, name, source in report.held_out_added] == [
        (("你好！", "Hello!"), "exact", "basics.tsv", "你好！")
    ]
    assert sorted((pair[0], kind, name, source) for pair, kind, name, source in report.held_out_replay) == [
        ("旧句子0号。", "exact", "basics.tsv", "旧句子0号！"),
        ("旧句子0号。", "exact", "basics.tsv", "旧句子0号！"),
        ("旧句子3号。", "near", "plain.tsv", "旧句子3号呀。"),
    ]
    assert len(report.collisions) == 3 and report.held_out_files == {"basics.tsv": 2, "plain.tsv": 2}
    assert report.kept == 1 and report.replay == 40 and report.replayed == 37 and report.train == 3 + 37
    counts = Counter(splits["train"])
    assert counts[("谢谢你！", "Thank you!")] == 3 and ("你好！", "Hello!") not in counts
    assert not {"旧句子0号。", "旧句子3号。"} & {first for first, _ in counts}
    # the sample is drawn before the held-out lines leave it: what stays is the same as without them
    plain, _ = mix_corpus(_base(), ADDED, repeat=3, replay=10, seed=0)
    held, report = mix_corpus(_base(), ADDED, repeat=3, replay=10, seed=0, held_out=HELD_OUT)
    removed = Counter(pair for pair, *_ in report.held_out_replay)
    assert Counter(p for p in held["train"] if p[0].startswith("旧")) == (
        Counter(p for p in plain["train"] if p[0].startswith("旧")) - removed
    )


def test_the_mix_command_reads_held_out_test_sets_and_lists_what_they_removed(tmp_path, capsys):
    base, added = _written(tmp_path)
    test_set = tmp_path / "zh-en.tsv"  # data/basics-style: a header, the source in its own column
    test_set.write_text(
        "id\tsource\treferences\tcategory\tcore\n"
        "zh-en-001\t你好！\tHello! ||| Hi!\tgreeting\t1\n"
        "zh-en-002\t旧句子5号。\tOld sentence number 5.\tnumber-time-date\t0\n",
        encoding="utf-8",
    )
    plain = tmp_path / "plain.tsv"  # no header: the first column is the source
    plain.write_text("旧句子3号呀。\tOld sentence number 3!\n", encoding="utf-8")
    assert read_held_out([test_set, plain]) == [
        (str(test_set), "你好！"),
        (str(test_set), "旧句子5号。"),
        (str(plain), "旧句子3号呀。"),
    ]
    out = tmp_path / "mixed"
    argv = ["mix", "--base", str(base), "--add", str(added), "--repeat", "2", "--replay", "40", "--out", str(out)]
    main([*argv, "--held-out", str(test_set), "--held-out", str(plain)])
    printed = capsys.readouterr().out
    assert "1 near or equal to a held-out source, 1 kept × 2" in printed and "less 2 held out" in printed
    train = load_corpus(out)["train"]
    assert len(train) == 1 * 2 + 38 and ("你好！", "Hello!") not in train
    assert not {"旧句子5号。", "旧句子3号。"} & {first for first, _ in train}
    card = (out / "MIX.md").read_text(encoding="utf-8")
    assert f"--held-out {test_set} --held-out {plain}" in card
    assert f"| 你好！ / Hello! | exact | `{test_set}` | 你好！ |" in card
    assert f"| 旧句子5号。 / Old sentence number 5. | exact | `{test_set}` | 旧句子5号。 |" in card
    assert f"| 旧句子3号。 / Old sentence number 3. | near | `{plain}` | 旧句子3号呀。 |" in card
    assert "less 2 that equal or nearly equal a source of a held-out file (38 left): 40 lines." in card
