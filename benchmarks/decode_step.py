"""Section 1: one decoding step with every attention map captured, and without, ours against transformers.

Ours is the explorer's path, `Decoding.step` (it also lists the top-10 candidates); transformers' is
`MarianMTModel` with eager attention, one forward call per token with its cache, then softmax and top-10, as a user
writes it. Both are forced through the same tokens, so they do the same work; the encoder pass is left out.
"""

from __future__ import annotations

import time
from functools import partial

import torch

from benchmarks.model_pair import random_sources
from benchmarks.plan import Plan
from benchmarks.timing import measure_pair, ratio, synchronize
from transformer.decoding import Decoding, Greedy
from transformer.model import Transformer


def ours_steps(model: Transformer, src: list[int], forced: list[int], attention: bool) -> float:
    """Seconds for len(forced) steps of the explorer's `Decoding` (after its encoder pass)."""
    decoding = Decoding(model, src, Greedy(), max_new_tokens=len(forced) + 1, return_attention=attention)
    synchronize()
    start = time.perf_counter()
    for token in forced:
        decoding.step(force=token)
    synchronize()
    return time.perf_counter() - start


def hf_steps(hf, src: list[int], forced: list[int], attention: bool) -> float:
    """Seconds for the same steps with transformers: one forward call per token with the cache, as a user writes."""
    with torch.inference_mode():
        ids = torch.tensor([src], device=hf.device)
        encoded = hf.get_encoder()(input_ids=ids, output_attentions=attention)
        synchronize()
        start = time.perf_counter()
        past, token = None, torch.tensor([[hf.config.decoder_start_token_id]], device=hf.device)
        for t in forced:
            out = hf(
                encoder_outputs=encoded,
                decoder_input_ids=token,
                past_key_values=past,
                use_cache=True,
                output_attentions=attention,
            )
            past, token = out.past_key_values, torch.tensor([[t]], device=hf.device)
            probs = out.logits[0, -1].softmax(-1)  # what a step shows: the distribution and its top candidates
            probs.topk(10)
        synchronize()
        return time.perf_counter() - start


def bench_decode_step(plan: Plan, hf, ours: Transformer) -> list[dict]:
    """Per output length: milliseconds per step of each side, with and without the attention maps, and the ratios."""
    src = random_sources(ours.config, 1, seed=1, lengths=(20, 20))[0]
    rows = []
    for length in plan.lengths:
        forced = random_sources(ours.config, 1, seed=length, lengths=(length, length))[0][:length]
        row = {"length": length}
        for attention in (True, False):
            ours_s, hf_s = measure_pair(
                partial(ours_steps, ours, src, forced, attention),
                partial(hf_steps, hf, src, forced, attention),
                plan.repeats,
            )
            key = "attention" if attention else "plain"
            row[f"ours_{key}_ms"] = round(1000 * ours_s / length, 2)
            row[f"hf_{key}_ms"] = round(1000 * hf_s / length, 2)
            row[f"ratio_{key}"] = ratio(ours_s, hf_s)
        rows.append(row)
    return rows
