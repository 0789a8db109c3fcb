"""Section 4: beam search, ours (`Decoding` with `BeamSearch`) against `generate(num_beams=...)`, one sentence at a
time on the random opus-mt-sized model."""

from __future__ import annotations

from functools import partial

from benchmarks.model_pair import hf_generate, same_outputs
from benchmarks.plan import Plan
from benchmarks.timing import measure_pair, ratio
from transformer.decoding import BeamSearch, Decoding
from transformer.model import Transformer

WIDTH = 4


def beam_outputs(model: Transformer, sources: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """Our beam search's translation of each source, one at a time."""
    outputs = []
    for src in sources:
        decoding = Decoding(model, src, BeamSearch(WIDTH), max_new_tokens=max_new_tokens, return_attention=False)
        decoding.run()
        outputs.append(decoding.output_ids)
    return outputs


def bench_beam(plan: Plan, hf, ours: Transformer, sources: list[list[int]]) -> dict:
    """Milliseconds per sentence of each side, and how many sentences both translated alike."""
    limit = plan.beam_new_tokens
    ours_all = partial(beam_outputs, ours, sources, limit)

    def hf_all():
        return [hf_generate(hf, [src], limit, num_beams=WIDTH)[0] for src in sources]

    ours_out, hf_out = ours_all(), hf_all()
    ours_s, hf_s = measure_pair(ours_all, hf_all, plan.repeats)
    return {
        "width": WIDTH,
        "sentences": len(sources),
        "max_new_tokens": limit,
        "ours_ms_per_sentence": round(1000 * ours_s / len(sources), 1),
        "hf_ms_per_sentence": round(1000 * hf_s / len(sources), 1),
        "ratio": ratio(ours_s, hf_s),
        "same_outputs": same_outputs(ours_out, hf_out),
    }
