"""Print the measured differences between our model and transformers' MarianMTModel (the README's table).

    python -m tests.parity_report

The tests assert the bounds (test_marian.py); this prints the figures themselves, on the same tiny models.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

from tests.conftest import ENGLISH, build_marian
from tests.test_marian import batch
from transformer.decoding import BeamSearch, Decoding, Greedy
from transformer.marian import load_marian


def report(shared: bool) -> str:
    folder = Path(tempfile.mkdtemp())
    hf = build_marian(folder, shared=shared)
    ours = load_marian(folder)
    src, mask = batch(ours, ENGLISH)
    tgt = torch.randint(2, 40, (len(ENGLISH), 7), generator=torch.Generator().manual_seed(0))
    tgt[:, 0] = ours.model.config.pad_id
    with torch.no_grad():
        theirs = hf(input_ids=src, attention_mask=mask, decoder_input_ids=tgt, output_attentions=True)
        mine = ours.model(src, tgt, return_attention=True)
    pairs = [
        (theirs.encoder_attentions, mine.attention.encoder),
        (theirs.decoder_attentions, mine.attention.decoder_self),
        (theirs.cross_attentions, mine.attention.cross),
    ]
    attention = max((a - b).abs().max().item() for maps in pairs for a, b in zip(*maps, strict=True))
    same = {"greedy": 0, "beam 4": 0}
    for sentence in ENGLISH:
        ids = ours.tokenizer.encode_source(sentence)
        for name, strategy, beams in (("greedy", Greedy(), 1), ("beam 4", BeamSearch(4), 4)):
            expected = hf.generate(torch.tensor([ids]), num_beams=beams, do_sample=False, max_length=20)[0, 1:]
            decoding = Decoding(ours.model, ids, strategy, max_new_tokens=19)
            decoding.run()
            got = decoding.output_ids
            same[name] += got == expected.tolist()[: len(got)]
    outputs = ", ".join(f"{name} identical {n}/{len(ENGLISH)}" for name, n in same.items())
    logits = (theirs.logits - mine.logits).abs().max().item()
    kind = "shared" if shared else "separate"
    return f"{kind} vocabulary: logits max|diff| {logits:.1e}, attention max|diff| {attention:.1e}, {outputs}"


if __name__ == "__main__":
    for shared in (True, False):
        print(report(shared))
