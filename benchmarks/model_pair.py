"""The same random opus-mt-sized model in both implementations, the sentences both are given, and transformers' side
of a whole translation.

Random weights: `</s>` gets a large negative logit bias, so that every output has the full requested length and
both implementations do the same amount of work (they must also produce the same tokens, which is checked).
"""

from __future__ import annotations

import torch

from benchmarks.plan import Plan
from transformer import marian
from transformer.model import Transformer, TransformerConfig


def model_pair(plan: Plan, seed: int = 0):
    """(MarianMTModel with eager attention, our Transformer) with identical random weights: ours, and `to_marian`
    of it."""
    torch.manual_seed(seed)
    config = marian.opus_mt_config(plan.vocab, **plan.sizes())  # opus-mt's architecture at the plan's sizes
    ours = Transformer(config).eval()
    with torch.no_grad():
        ours.logits_bias[config.eos_id] = -1e4  # outputs run to the length limit, where </s> is forced
        ours.logits_bias[config.pad_id] = -1e4
    return marian.to_marian(ours), ours


def random_sources(config: TransformerConfig, n: int, seed: int, lengths: tuple[int, int] = (8, 24)) -> list:
    """n source sentences of random ordinary tokens, each ending with </s>."""
    generator = torch.Generator().manual_seed(seed)
    specials = {config.pad_id, config.eos_id, config.decoder_start_id}
    sources = []
    for _ in range(n):
        length = int(torch.randint(lengths[0], lengths[1] + 1, (1,), generator=generator))
        ids = torch.randint(0, config.src_vocab_size, (length * 2,), generator=generator).tolist()
        sources.append([t for t in ids if t not in specials][:length] + [config.eos_id])
    return sources


def padded(sources: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The sources as one batch padded on the right, and its attention mask."""
    width = max(map(len, sources))
    ids = torch.tensor([s + [pad] * (width - len(s)) for s in sources])
    return ids, (ids != pad).long()


def hf_generate(hf, sources: list[list[int]], max_new_tokens: int, num_beams: int = 1) -> list[list[int]]:
    """transformers' translations of `sources` in one batch, as token lists ending with `</s>` like ours."""
    ids, mask = padded(sources, hf.generation_config.pad_token_id)
    with torch.inference_mode():
        out = hf.generate(ids, attention_mask=mask, num_beams=num_beams, do_sample=False, max_new_tokens=max_new_tokens)
    eos, pad = hf.generation_config.eos_token_id, hf.generation_config.pad_token_id
    results = []
    for row in out[:, 1:].tolist():  # without the start token, up to </s>, padding dropped
        results.append(row[: row.index(eos) + 1] if eos in row else [t for t in row if t != pad])
    return results


def same_outputs(ours: list[list[int]], theirs: list[list[int]]) -> int:
    """How many sentences both translated to exactly the same tokens."""
    return sum(a == b for a, b in zip(ours, theirs, strict=True))
