"""Section 3: incremental decoding with the key/value cache against recomputing the whole prefix at every step.

Ours on both sides, the model of section 1 without attention maps. Both ways must give the same logits (the row's
`max_logit_difference`): else the speed-up would compare two different computations.
"""

from __future__ import annotations

from functools import partial

import torch

from benchmarks.model_pair import random_sources
from benchmarks.plan import Plan
from benchmarks.timing import measure_pair
from transformer.model import Transformer


def decode_cached(model: Transformer, src: torch.Tensor, forced: list[int]) -> list[torch.Tensor]:
    """The next-token logits after each forced token, each step feeding one new token and reusing the cache."""
    logits = []
    with torch.inference_mode():
        encoded = model.encode(src)
        cache, token = model.init_cache(encoded), src.new_tensor([[model.config.decoder_start_id]])
        for t in forced:
            out = model.decode(token, encoded, cache=cache)  # one new position, earlier K/V reused
            cache, token = out.cache, src.new_tensor([[t]])
            logits.append(out.logits[0, -1].clone())  # copied as the recomputed side must: the same work
    return logits


def decode_recomputed(model: Transformer, src: torch.Tensor, forced: list[int]) -> list[torch.Tensor]:
    """The same logits, each step feeding the whole prefix again."""
    logits = []
    with torch.inference_mode():
        encoded = model.encode(src)
        prefix = [model.config.decoder_start_id]
        for t in forced:
            # a copy of the last row: a view would keep every step's (1, T, vocab) logits alive (GBs at 128 steps)
            logits.append(model.decode(src.new_tensor([prefix]), encoded).logits[0, -1].clone())
            prefix.append(t)
    return logits


def largest_difference(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """The largest absolute difference between two runs' logits, step by step."""
    return float((torch.stack(a) - torch.stack(b)).abs().max())


def bench_cache(plan: Plan, ours: Transformer) -> list[dict]:
    """Per output length: milliseconds for the whole output each way, the speed-up, and how far the logits differ."""
    src = torch.tensor(random_sources(ours.config, 1, seed=2, lengths=(20, 20)), device=ours.logits_bias.device)
    rows = []
    for length in plan.lengths:
        forced = random_sources(ours.config, 1, seed=length, lengths=(length, length))[0][:length]
        cached, recomputed = partial(decode_cached, ours, src, forced), partial(decode_recomputed, ours, src, forced)
        difference = largest_difference(cached(), recomputed())
        cached_s, recomputed_s = measure_pair(cached, recomputed, plan.repeats)
        rows.append(
            {
                "length": length,
                "cached_ms": round(1000 * cached_s, 1),
                "recomputed_ms": round(1000 * recomputed_s, 1),
                "speedup": round(recomputed_s / cached_s, 2),
                "max_logit_difference": difference,
            }
        )
    return rows
