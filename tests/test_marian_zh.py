"""opus-mt-zh-en and opus-mt-en-zh, as tiny Marian models with Chinese sentencepiece models built here: our import
computes what transformers' MarianMTModel computes, and tokenizes Chinese as MarianTokenizer does.

Their layout, from the Hub repos: two sentencepiece models (`source.spm`, `target.spm`) and one `vocab.json` holding
both sides' pieces; opus-mt-en-zh writes several Chinese scripts, so its sentences start with a language code
(`>>cmn_Hans<<`), one token of that vocabulary.
"""

from __future__ import annotations

import pytest
import torch

from tests.conftest import CHINESE, ENGLISH, build_marian
from tests.test_marian import assert_same_outputs
from transformer.decoding import Greedy, generate
from transformer.marian import load_marian

CODES = (">>cmn_Hans<<", ">>cmn_Hant<<", ">>yue_Hans<<")


@pytest.fixture(scope="module", params=["zh-en", "en-zh"])
def marian_zh(request, tmp_path_factory):
    """(direction, folder, MarianMTModel): Chinese → English, or English → Chinese with language codes."""
    folder = tmp_path_factory.mktemp(f"marian-{request.param}")
    if request.param == "zh-en":
        model = build_marian(folder, shared=False, union=True, source=CHINESE, target=ENGLISH)
    else:
        model = build_marian(folder, shared=False, union=True, source=ENGLISH, target=CHINESE, language_codes=CODES)
    return request.param, folder, model


def sources(direction: str) -> list[str]:
    return CHINESE if direction == "zh-en" else [f">>cmn_Hans<< {sentence}" for sentence in ENGLISH]


def test_logits_and_attention_match_transformers(marian_zh):
    direction, folder, hf = marian_zh
    assert_same_outputs(hf, load_marian(folder), sources(direction)[:3])


def test_greedy_output_matches_generate(marian_zh):
    direction, folder, hf = marian_zh
    ours = load_marian(folder)
    for sentence in sources(direction):
        src = ours.tokenizer.encode_source(sentence)
        expected = hf.generate(torch.tensor([src]), num_beams=1, do_sample=False, max_length=20)[0, 1:].tolist()
        got = generate(ours.model, src, Greedy(), max_new_tokens=19)
        assert got == expected[: len(got)], sentence


def test_tokenizer_matches_marian_tokenizer_on_chinese(marian_zh):
    from transformers import MarianTokenizer

    direction, folder, _ = marian_zh
    theirs = MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"))
    ours = load_marian(folder).tokenizer
    extra = ["今天天气真好！", "没见过的字：龘", "  空格  ", "火车站 Station 12"]
    for text in sources(direction) + extra:
        assert ours.encode_source(text) == theirs(text)["input_ids"], text
    targets = ENGLISH if direction == "zh-en" else CHINESE
    for text in targets:
        target_ids = theirs(text_target=text)["input_ids"]
        assert ours.encode_target(text) == target_ids, text
        assert ours.decode_target(target_ids) == theirs.decode(target_ids, skip_special_tokens=True), text


def test_a_language_code_is_one_token_and_chinese_decodes_without_spaces(marian_zh):
    direction, folder, _ = marian_zh
    tokenizer = load_marian(folder).tokenizer
    if direction == "en-zh":
        assert tokenizer.source_pieces(">>cmn_Hans<< The weather is nice today.")[0] == ">>cmn_Hans<<"
        assert tokenizer.source_piece(tokenizer.encode_source(">>cmn_Hans<< Hello.")[0]) == ">>cmn_Hans<<"
        assert tokenizer.decode_target(tokenizer.encode_target("我想要一杯咖啡。")) == "我想要一杯咖啡。"
    else:
        assert tokenizer.decode_target(tokenizer.encode_target("We are going home now.")) == "We are going home now."
        assert all(" " not in piece.strip("▁") for piece in tokenizer.source_pieces("孩子们在公园里玩。"))
