"""Section 2: greedy translation of a batch (sentences a second), ours (`generate_batch`) against `generate`, on the
random opus-mt-sized model and on the shipped English→German model (exported with `transformer.marian.to_marian`)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.model_pair import hf_generate, same_outputs
from benchmarks.plan import Plan
from benchmarks.timing import measure_pair, ratio
from transformer.checkpoint import load_checkpoint
from transformer.decoding import generate_batch
from transformer.model import Transformer

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_BATCH = 16  # sentences per batch for the shipped model
SHIPPED_LIMIT = 64  # new tokens at most: longer than any test sentence's translation


def bench_greedy(plan: Plan, hf, ours: Transformer, sources: list[list[int]], max_new_tokens: int) -> dict:
    """Both sides on one padded batch of `sources`, each output `max_new_tokens` long (`</s>` is never chosen)."""
    ours_out = generate_batch(ours, sources, max_new_tokens=max_new_tokens)
    hf_out = hf_generate(hf, sources, max_new_tokens)
    ours_s, hf_s = measure_pair(
        lambda: generate_batch(ours, sources, max_new_tokens=max_new_tokens),
        lambda: hf_generate(hf, sources, max_new_tokens),
        plan.repeats,
    )
    return {
        "sentences": len(sources),
        "output_tokens": sum(map(len, ours_out)),
        "ours_sentences_per_s": round(len(sources) / ours_s, 2),
        "hf_sentences_per_s": round(len(sources) / hf_s, 2),
        "ratio": ratio(ours_s, hf_s),
        "same_outputs": same_outputs(ours_out, hf_out),
    }


def bench_shipped_greedy(plan: Plan, checkpoint_dir: Path) -> dict | None:
    """The shipped model on real test sentences, in batches, in both implementations (None: not in this plan, or
    no such checkpoint)."""
    from transformer.marian import to_marian
    from transformer.training.corpus.tsv import load_corpus

    if plan.shipped_sentences == 0 or not checkpoint_dir.is_dir():
        return None
    checkpoint = load_checkpoint(checkpoint_dir)
    ours, hf = checkpoint.model, to_marian(checkpoint.model)
    pairs = load_corpus(ROOT / "data" / "en-de")["test"][: plan.shipped_sentences]
    sources = [checkpoint.tokenizer.encode_source(s) for s, _ in pairs]
    batches = [sources[i : i + SHIPPED_BATCH] for i in range(0, len(sources), SHIPPED_BATCH)]

    def ours_all():
        return [out for batch in batches for out in generate_batch(ours, batch, max_new_tokens=SHIPPED_LIMIT)]

    def hf_all():
        return [out for batch in batches for out in hf_generate(hf, batch, SHIPPED_LIMIT)]

    ours_out, hf_out = ours_all(), hf_all()
    ours_s, hf_s = measure_pair(ours_all, hf_all, max(1, plan.repeats - 2))
    return {
        "model": checkpoint_dir.name,
        "sentences": len(sources),
        "batch": SHIPPED_BATCH,
        "output_tokens": sum(map(len, ours_out)),
        "ours_sentences_per_s": round(len(sources) / ours_s, 1),
        "hf_sentences_per_s": round(len(sources) / hf_s, 1),
        "ratio": ratio(ours_s, hf_s),
        "same_outputs": same_outputs(ours_out, hf_out),
    }
