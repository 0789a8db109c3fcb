"""The zh-en corpus: Chinese text measured and cleaned like German, the readers turned round, the CC-CEDICT lexicon."""

from __future__ import annotations

import pytest

from transformer.training.corpus import cedict
from transformer.training.corpus.cleaning import (
    clean_text,
    is_sentence,
    is_sentence_like,
    reject_reason,
    span,
    words,
)
from transformer.training.corpus.ddtp import ddtp_pairs, sentences
from transformer.training.corpus.sources import PAIRS, ZH_EN, swapped
from transformer.training.corpus.splitting import is_held_out_candidate
from transformer.training.everyday import ZH_EN as ZH_EN_AUTHORING
from transformer.training.everyday import Row, overlapping, problems, word_set

# --- measuring and cleaning Chinese ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I like green tea.", 4),  # unchanged for spaced languages
        ("今天天气真好。", 4),  # 6 characters: about 4 words
        ("我饿了。", 2),
        ("请打开 LibreOffice 的菜单。", 6),  # 7 characters (4 words) and one Latin word... and the product name
        ("好", 1),
    ],
)
def test_words_estimates_chinese_words_from_characters(text, expected):
    assert words(text) == pytest.approx(expected, abs=1)


def test_a_chinese_character_spans_about_four_letters():
    assert span("I like tea.") == len("I like tea.")
    assert span("我喜欢茶。") == 4 * 4 + 1
    # a length ratio that a word-for-word translation passes, and the German rule unchanged
    assert reject_reason("今天天气真好。", "The weather is really nice today.") is None
    assert reject_reason("好。", "This sentence is far too long to translate one character of Chinese.") == (
        "length ratio"
    )


def test_clean_text_joins_chinese_broken_across_lines_but_keeps_spaces_around_latin_words():
    assert (
        clean_text("简而言之，它是一款基于历史的战争/经\n 济游戏 。") == "简而言之，它是一款基于历史的战争/经济游戏。"
    )
    assert clean_text("使用 Enter 键以启动选中的 OLE 对象。") == "使用 Enter 键以启动选中的 OLE 对象。"
    assert clean_text("Wir gehen  heute ins Kino .") == "Wir gehen heute ins Kino."


def test_chinese_sentences_end_in_full_width_punctuation():
    assert is_sentence("我可以在哪里找到文件？", "Where can I find the files?")
    assert is_sentence_like("工作区可以用来组织窗口。", "Workspaces are a way of grouping windows.")
    assert not is_sentence("打开文件", "Open the file.")  # a label, not a sentence
    assert is_held_out_candidate("我们明天去公园吧。", "Let's go to the park tomorrow.")


def test_ddtp_splits_chinese_paragraphs_after_each_sentence_mark():
    assert sentences("这是第一句。这是第二句！Hello there. Next one.") == [
        "这是第一句。",
        "这是第二句！",
        "Hello there.",
        "Next one.",
    ]
    english = "Package: a\nDescription-md5: 1\nDescription-en: x\n A tool. It is fast.\n"
    chinese = "Package: a\nDescription-md5: 1\nDescription-zh_CN: x\n 一个工具。它很\n 快。\n"
    assert ddtp_pairs(english, chinese, "zh_CN") == [("A tool.", "一个工具。"), ("It is fast.", "它很快。")]


# --- the registry ----------------------------------------------------------------------------------------------------


def test_zh_en_pairs_are_chinese_first_and_hold_out_authored_sentences():
    assert PAIRS["zh-en"] is ZH_EN and ZH_EN.apt_languages == ("en", "zh_CN")
    assert ZH_EN.held_out_source == "authored" and ZH_EN.held_out_sizes == (300, 300)
    assert [source.name for source in ZH_EN.sources][:2] == ["authored", "cedict-lexicon"]

    def english_first(root, packages):
        return [("Open the file.", "打开文件。")], ["note"]

    assert swapped(english_first)(None, ()) == ([("打开文件。", "Open the file.")], ["note"])


# --- CC-CEDICT --------------------------------------------------------------------------------------------------------

CEDICT = """# CC-CEDICT
#! date=2020-12-21T10:42:05Z
天氣 天气 [tian1 qi4] /weather/
保 保 [Bao3] /surname Bao/
保 保 [bao3] /to defend/to protect/
北京 北京 [Bei3 jing1] /Beijing, capital of the People's Republic of China/Peking/
喫 吃 [chi1] /variant of 吃[chi1]/
做飯 做饭 [zuo4 fan4] /to prepare a meal (sth)/to cook/
出租車 出租车 [chu1 zu1 che1] /taxi/CL:輛|辆[liang4]/
看 看 [kan4] /to see/
"""
HSK = "\ufeff// HSK 3.0/普及化 - Entry Level\n天气\n看\n做饭\n北京\n出租车\n// HSK 3.0/中级\n保\n打电话\n"


@pytest.mark.parametrize(
    ("gloss", "expected"),
    [
        ("weather", "weather"),
        ("to prepare a meal (sth)", "to prepare a meal"),
        ("Beijing, capital of the People's Republic of China", "Beijing"),
        ("variant of 吃[chi1]", None),
        ("surname Bao", None),
        ("CL:輛|辆[liang4]", None),
        ("(completed action marker)", None),
        ("a long explanation of far more than five words", None),
    ],
)
def test_plain_gloss_keeps_translations_only(gloss, expected):
    assert cedict.plain_gloss(gloss) == expected


def test_the_lexicon_glosses_hsk_words_of_two_to_four_characters_common_senses_first():
    assert cedict.first_glosses(CEDICT)["保"] == "to defend"  # the surname is a proper name
    assert cedict.lexicon(CEDICT, HSK) == [
        ("天气", "weather"),
        ("做饭", "to prepare a meal"),
        ("北京", "Beijing"),
        ("出租车", "taxi"),
    ]  # 看 and 保 are single characters; 打电话 is not in this CC-CEDICT


def test_the_lexicon_reads_the_installed_package():
    pairs, notes = cedict.read(None, ())
    assert len(pairs) > 8000 and ("天气", "weather") in pairs
    assert notes[0].endswith("CC-CEDICT of 2020-12-21")


# --- the authored sentences' checks in Chinese ----------------------------------------------------------------------


def test_chinese_authored_rows_are_checked_in_characters_with_full_width_punctuation():
    good = Row("我们明天去公园吧。", "Let's go to the park tomorrow.", "city", ("suggestion-ba", "time"))
    assert problems([good], spec=ZH_EN_AUTHORING) == []
    bad = [
        good,
        Row("我们明天去公园吧！", "Let's go to the park tomorrow!", "city", ("time",)),  # a duplicate
        Row("我们明天去公园吧.", "Let's go.", "city", ("time",)),  # half-width stop
        Row("好。", "Good.", "city", ("time",)),  # one character
        Row("我喜欢喝茶。", "我喜欢喝茶。", "food", ("v2",)),  # Chinese as English, a German tag
    ]
    found = problems(bad, spec=ZH_EN_AUTHORING)
    assert any("duplicate" in p for p in found) and any("does not end" in p for p in found)
    assert any("1 characters, not 2–40" in p for p in found)
    assert any("Chinese characters on the English side" in p for p in found)
    assert any("unknown or missing tags ['v2']" in p for p in found)


def test_near_duplicates_of_chinese_compare_characters():
    assert word_set("我今天很忙。") == {"我", "今", "天", "很", "忙"}
    held_out = [("我今天下午很忙。", "I am busy this afternoon.")]
    assert overlapping([("我今天下午很忙啊！", "x"), ("他明天去北京。", "y")], held_out) == [True, False]
