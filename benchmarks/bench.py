"""Benchmarks, side by side with what a user would pick instead: `python -m benchmarks.bench`.

Every comparison runs in the same process on the same weights with the same number of threads, warmed up, and is
the median of several repeats, taking turns; ratios are ours / theirs (below 1: ours is faster). The full run writes
BENCHMARKS.md; `--quick` runs every section at tiny sizes (CI runs it so that the benchmark never rots).

1. One decoding step with every attention map captured, for an opus-mt-sized model (6+6 layers, d_model 512,
   8 heads, vocabulary 58,101, random weights): our `Decoding.step` against `transformers`' MarianMTModel (eager
   attention, `output_attentions=True`, with its cache), at output lengths 16, 64 and 128; and without capture.
2. Greedy translation of a batch of sentences (sentences/s): ours (`generate_batch`) against `generate`, on the
   same random weights and on the shipped English→German model (exported with `convert.to_marian`).
3. Incremental decoding with the key/value cache against recomputing the whole prefix at every step.
4. Beam search (width 4): ours against `generate(num_beams=4)`.
5. Training throughput (target tokens/s) for the shipped model's configuration: ours against `torch.nn.Transformer`.
6, 7. The app: start-up time, Step and Run in headless Chromium, memory (measured by `benchmarks.app_bench`).

Random weights: `</s>` gets a large negative logit bias, so that every output has the full requested length and
both implementations do the same amount of work (they must also produce the same tokens, which is checked).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

from transformer.checkpoint import load_checkpoint
from transformer.decoding import BeamSearch, Decoding, Greedy, generate_batch
from transformer.model import Transformer, TransformerConfig

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Plan:
    """Sizes and repeats of one benchmark run."""

    name: str
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    vocab: int
    lengths: tuple[int, ...]  # output lengths for sections 1 and 3
    repeats: int
    batch_sentences: int  # section 2
    batch_new_tokens: int
    shipped_sentences: int  # section 2, shipped model (0: skip)
    beam_sentences: int  # section 4
    beam_new_tokens: int
    train_batch_tokens: int  # section 5
    train_steps: int


FULL = Plan("full", 512, 6, 8, 2048, 58101, (16, 64, 128), 7, 16, 32, 200, 8, 32, 3000, 8)
QUICK = Plan("quick", 32, 2, 4, 64, 500, (4, 8), 2, 4, 6, 8, 2, 6, 300, 2)


# --------------------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------------------


def measure(run: Callable[[], object], repeats: int, warmup: int = 1) -> list[float]:
    """Seconds per call of `run` after warm-up; a `run` that returns a float has timed itself (to leave out its
    own set-up), and that number is used instead."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        inner = run()
        times.append(inner if isinstance(inner, float) else time.perf_counter() - start)
    return times


def measure_pair(ours: Callable[[], object], theirs: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median seconds per call of each, taking turns (ours, theirs, ours, …) after one warm-up of each, so that a
    noisy minute on this shared virtual machine slows both sides alike instead of one."""
    ours_times, theirs_times = [], []
    for _ in range(repeats):
        ours_times += measure(ours, 1, warmup=0 if ours_times else 1)
        theirs_times += measure(theirs, 1, warmup=0 if theirs_times else 1)
    return statistics.median(ours_times), statistics.median(theirs_times)


def p95(values: list[float]) -> float:
    """95th percentile, nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def ratio(ours: float, theirs: float) -> float:
    return round(ours / theirs, 3)


# --------------------------------------------------------------------------------------------------------
# The same random opus-mt-sized model in both implementations
# --------------------------------------------------------------------------------------------------------


def model_pair(plan: Plan, seed: int = 0):
    """(MarianMTModel with eager attention, our Transformer) with identical random weights: an opus-mt-shaped model
    of ours (post-norm, SiLU, [sin | cos] positions, logits bias, <pad> as decoder start), and `to_marian` of it."""
    from transformer.convert import to_marian

    torch.manual_seed(seed)
    pad, eos = plan.vocab - 1, 0
    config = TransformerConfig(
        src_vocab_size=plan.vocab,
        tgt_vocab_size=plan.vocab,
        d_model=plan.d_model,
        n_heads=plan.n_heads,
        n_encoder_layers=plan.n_layers,
        n_decoder_layers=plan.n_layers,
        d_ff=plan.d_ff,
        activation="silu",
        positional_encoding="sinusoidal_concat",
        max_positions=512,
        share_embeddings=True,
        final_logits_bias=True,
        pad_id=pad,
        eos_id=eos,
        decoder_start_id=pad,
    )
    ours = Transformer(config).eval()
    with torch.no_grad():
        ours.logits_bias[eos] = -1e4  # outputs run to the length limit, where </s> is forced
        ours.logits_bias[pad] = -1e4
    return to_marian(ours), ours


def random_sources(config: TransformerConfig, n: int, seed: int, lengths: tuple[int, int] = (8, 24)) -> list:
    """n source sentences of random ordinary tokens, each ending with </s>."""
    generator = torch.Generator().manual_seed(seed)
    specials = {config.pad_id, config.eos_id, config.decoder_start_id}
    sources = []
    for _ in range(n):
        length = int(torch.randint(lengths[0], lengths[1] + 1, (1,), generator=generator))
        ids = [t for t in torch.randint(0, config.src_vocab_size, (length * 2,), generator=generator).tolist()]
        sources.append([t for t in ids if t not in specials][:length] + [config.eos_id])
    return sources


def padded(sources: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(map(len, sources))
    ids = torch.tensor([s + [pad] * (width - len(s)) for s in sources])
    return ids, (ids != pad).long()


# --------------------------------------------------------------------------------------------------------
# 1. One decoding step, with and without the attention maps
# --------------------------------------------------------------------------------------------------------


def ours_steps(model: Transformer, src: list[int], forced: list[int], attention: bool) -> float:
    """Seconds for len(forced) steps of the explorer's `Decoding` (after its encoder pass)."""
    decoding = Decoding(model, src, Greedy(), max_new_tokens=len(forced) + 1, return_attention=attention)
    start = time.perf_counter()
    for token in forced:
        decoding.step(force=token)
    return time.perf_counter() - start


def hf_steps(hf, src: list[int], forced: list[int], attention: bool) -> float:
    """Seconds for the same steps with transformers: one forward call per token with the cache, as a user writes."""
    with torch.inference_mode():
        ids = torch.tensor([src])
        encoded = hf.get_encoder()(input_ids=ids, output_attentions=attention)
        start = time.perf_counter()
        past, token = None, torch.tensor([[hf.config.decoder_start_token_id]])
        for t in forced:
            out = hf(
                encoder_outputs=encoded,
                decoder_input_ids=token,
                past_key_values=past,
                use_cache=True,
                output_attentions=attention,
            )
            past, token = out.past_key_values, torch.tensor([[t]])
            probs = out.logits[0, -1].softmax(-1)  # what a step shows: the distribution and its top candidates
            probs.topk(10)
        return time.perf_counter() - start


def bench_decode_step(plan: Plan, hf, ours: Transformer) -> list[dict]:
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


# --------------------------------------------------------------------------------------------------------
# 2 and 4. Whole translations: greedy batches and beam search
# --------------------------------------------------------------------------------------------------------


def hf_generate(hf, sources: list[list[int]], max_new_tokens: int, num_beams: int = 1) -> list[list[int]]:
    ids, mask = padded(sources, hf.generation_config.pad_token_id)
    with torch.inference_mode():
        out = hf.generate(ids, attention_mask=mask, num_beams=num_beams, do_sample=False, max_new_tokens=max_new_tokens)
    eos, pad = hf.generation_config.eos_token_id, hf.generation_config.pad_token_id
    results = []
    for row in out[:, 1:].tolist():  # without the start token, up to </s>, padding dropped
        results.append(row[: row.index(eos) + 1] if eos in row else [t for t in row if t != pad])
    return results


def bench_greedy(plan: Plan, hf, ours: Transformer, sources: list[list[int]], max_new_tokens: int) -> dict:
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
        "same_outputs": sum(a == b for a, b in zip(ours_out, hf_out, strict=True)),
    }


def bench_shipped_greedy(plan: Plan, checkpoint_dir: Path) -> dict | None:
    """The shipped model on real test sentences, in batches of 16, in both implementations."""
    from transformer.convert import to_marian
    from transformer.training.corpus.tsv import load_corpus

    if plan.shipped_sentences == 0 or not checkpoint_dir.is_dir():
        return None
    checkpoint = load_checkpoint(checkpoint_dir)
    hf = to_marian(checkpoint.model)
    pairs = load_corpus(ROOT / "data" / "en-de")["test"][: plan.shipped_sentences]
    sources = [checkpoint.tokenizer.encode_source(s) for s, _ in pairs]
    batches = [sources[i : i + 16] for i in range(0, len(sources), 16)]
    limit = 64

    def ours_all():
        return [out for batch in batches for out in generate_batch(checkpoint.model, batch, max_new_tokens=limit)]

    def hf_all():
        return [out for batch in batches for out in hf_generate(hf, batch, limit)]

    ours_out, hf_out = ours_all(), hf_all()
    ours_s, hf_s = measure_pair(ours_all, hf_all, max(1, plan.repeats - 2))
    return {
        "model": checkpoint_dir.name,
        "sentences": len(sources),
        "batch": 16,
        "output_tokens": sum(map(len, ours_out)),
        "ours_sentences_per_s": round(len(sources) / ours_s, 1),
        "hf_sentences_per_s": round(len(sources) / hf_s, 1),
        "ratio": ratio(ours_s, hf_s),
        "same_outputs": sum(a == b for a, b in zip(ours_out, hf_out, strict=True)),
    }


def bench_beam(plan: Plan, hf, ours: Transformer, sources: list[list[int]]) -> dict:
    width, limit = 4, plan.beam_new_tokens

    def ours_all():
        outputs = []
        for src in sources:
            decoding = Decoding(ours, src, BeamSearch(width), max_new_tokens=limit, return_attention=False)
            decoding.run()
            outputs.append(decoding.output_ids)
        return outputs

    def hf_all():
        return [hf_generate(hf, [src], limit, num_beams=width)[0] for src in sources]

    ours_out, hf_out = ours_all(), hf_all()
    ours_s, hf_s = measure_pair(ours_all, hf_all, plan.repeats)
    return {
        "width": width,
        "sentences": len(sources),
        "max_new_tokens": limit,
        "ours_ms_per_sentence": round(1000 * ours_s / len(sources), 1),
        "hf_ms_per_sentence": round(1000 * hf_s / len(sources), 1),
        "ratio": ratio(ours_s, hf_s),
        "same_outputs": sum(a == b for a, b in zip(ours_out, hf_out, strict=True)),
    }


# --------------------------------------------------------------------------------------------------------
# 3. The cache against recomputation
# --------------------------------------------------------------------------------------------------------


def decode_cached(model: Transformer, src: torch.Tensor, forced: list[int]) -> None:
    with torch.inference_mode():
        encoded = model.encode(src)
        cache, token = model.init_cache(encoded), torch.tensor([[model.config.decoder_start_id]])
        for t in forced:
            cache = model.decode(token, encoded, cache=cache).cache  # one new position, earlier K/V reused
            token = torch.tensor([[t]])


def decode_recomputed(model: Transformer, src: torch.Tensor, forced: list[int]) -> None:
    with torch.inference_mode():
        encoded = model.encode(src)
        prefix = [model.config.decoder_start_id]
        for t in forced:
            model.decode(torch.tensor([prefix]), encoded).logits[:, -1]  # the whole prefix again, every step
            prefix.append(t)


def bench_cache(plan: Plan, ours: Transformer) -> list[dict]:
    src = torch.tensor(random_sources(ours.config, 1, seed=2, lengths=(20, 20)))
    rows = []
    for length in plan.lengths:
        forced = random_sources(ours.config, 1, seed=length, lengths=(length, length))[0][:length]
        cached, recomputed = measure_pair(
            partial(decode_cached, ours, src, forced), partial(decode_recomputed, ours, src, forced), plan.repeats
        )
        rows.append(
            {
                "length": length,
                "cached_ms": round(1000 * cached, 1),
                "recomputed_ms": round(1000 * recomputed, 1),
                "speedup": round(recomputed / cached, 2),
            }
        )
    return rows


# --------------------------------------------------------------------------------------------------------
# 5. Training throughput against torch.nn.Transformer
# --------------------------------------------------------------------------------------------------------


class TorchTransformer(torch.nn.Module):
    """torch.nn.Transformer with the same sizes as ours: scaled tied embeddings, sinusoidal positions, post-norm."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        from transformer.model import sinusoidal_position_encoding

        self.config = config
        self.embed = torch.nn.Embedding(config.src_vocab_size, config.d_model)
        self.register_buffer(
            "positions", sinusoidal_position_encoding(config.max_positions, config.d_model), persistent=False
        )
        self.transformer = torch.nn.Transformer(
            d_model=config.d_model,
            nhead=config.n_heads,
            num_encoder_layers=config.n_encoder_layers,
            num_decoder_layers=config.n_decoder_layers,
            dim_feedforward=config.d_ff,
            dropout=config.dropout,
            batch_first=True,
        )

    def embed_ids(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed(ids) * math.sqrt(self.config.d_model) + self.positions[: ids.size(1)]

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        pad = self.config.pad_id
        n = tgt_in.size(1)
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)  # True = may not attend (torch's convention)
        y = self.transformer(
            self.embed_ids(src),
            self.embed_ids(tgt_in),
            tgt_mask=causal,
            src_key_padding_mask=src == pad,
            tgt_key_padding_mask=tgt_in == pad,
            memory_key_padding_mask=src == pad,
            tgt_is_causal=True,
        )
        return y @ self.embed.weight.T


def training_batch(config: TransformerConfig, batch_tokens: int, seed: int):
    """Sentence pairs of 10-30 tokens up to `batch_tokens` target tokens, as (src, tgt_in, labels, n_tokens)."""
    from transformer.training.train import collate

    generator = torch.Generator().manual_seed(seed)
    examples, total = [], 0
    while total < batch_tokens:
        s, t = (int(torch.randint(10, 31, (1,), generator=generator)) for _ in range(2))
        src = torch.randint(4, config.src_vocab_size, (s,), generator=generator).tolist() + [config.eos_id]
        tgt = torch.randint(4, config.tgt_vocab_size, (t,), generator=generator).tolist() + [config.eos_id]
        examples.append((src, tgt))
        total += len(tgt)
    return (*collate(examples), total)


def bench_training(plan: Plan, config: TransformerConfig) -> dict:
    from transformer.training.train import batch_loss

    batches = [training_batch(config, plan.train_batch_tokens, seed) for seed in range(plan.train_steps)]
    torch.manual_seed(0)
    ours = Transformer(config).train()
    theirs = TorchTransformer(config).train()

    def loss_theirs(model, batch, smoothing, n_tokens):
        src, tgt_in, labels = batch
        logits = model(src, tgt_in)
        return F.cross_entropy(
            logits.reshape(-1, logits.size(-1)),
            labels.reshape(-1),
            ignore_index=config.pad_id,
            label_smoothing=smoothing,
            reduction="sum",
        ) / max(n_tokens, 1)

    def throughput(model, loss_fn) -> float:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

        def one_pass():
            for src, tgt_in, labels, n_tokens in batches:
                loss = loss_fn(model, (src, tgt_in, labels), 0.1, n_tokens)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()

        seconds = statistics.median(measure(one_pass, max(1, plan.repeats - 2)))
        return sum(b[3] for b in batches) / seconds

    ours_tps, theirs_tps = throughput(ours, batch_loss), throughput(theirs, loss_theirs)
    return {
        "parameters_ours": ours.num_parameters(),
        "parameters_torch": sum(p.numel() for p in theirs.parameters()),
        "batch_tokens": plan.train_batch_tokens,
        "ours_tokens_per_s": round(ours_tps),
        "torch_tokens_per_s": round(theirs_tps),
        "ratio_time": ratio(theirs_tps, ours_tps),  # time per token, ours / theirs
    }


# --------------------------------------------------------------------------------------------------------
# The whole run
# --------------------------------------------------------------------------------------------------------


def environment(threads: int) -> dict:
    import importlib.metadata as metadata

    cpu = platform.processor() or "unknown"
    if Path("/proc/cpuinfo").exists():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "date": datetime.date.today().isoformat(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "threads": threads,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": version("transformers"),
        "gradio": version("gradio"),
        "plotly": version("plotly"),
    }


def run(plan: Plan, *, threads: int = 2, app: bool = True, shipped: Path | None = None, log=print) -> dict:
    """Every section; returns the numbers (see `write_markdown`)."""
    torch.set_num_threads(threads)
    shipped = shipped if shipped is not None else ROOT / "checkpoints" / "en-de"
    results: dict = {"plan": asdict(plan), "environment": environment(threads)}
    hf, ours = model_pair(plan)
    log("1. decoding step")
    results["decode_step"] = bench_decode_step(plan, hf, ours)
    log("2. greedy batch")
    sources = random_sources(ours.config, plan.batch_sentences, seed=3)
    results["greedy"] = bench_greedy(plan, hf, ours, sources, plan.batch_new_tokens)
    results["greedy_shipped"] = bench_shipped_greedy(plan, shipped)
    log("3. cache")
    results["cache"] = bench_cache(plan, ours)
    log("4. beam search")
    results["beam"] = bench_beam(plan, hf, ours, random_sources(ours.config, plan.beam_sentences, seed=4))
    del hf, ours
    log("5. training")
    train_config = (
        load_checkpoint(shipped).model.config
        if plan.name == "full"
        else TransformerConfig(
            src_vocab_size=300,
            tgt_vocab_size=300,
            d_model=32,
            n_heads=4,
            n_encoder_layers=2,
            n_decoder_layers=2,
            d_ff=64,
            share_embeddings=True,
            pad_id=0,
            eos_id=3,
            decoder_start_id=2,
        )
    )
    results["training"] = bench_training(plan, train_config)
    if app:
        from benchmarks.app_bench import measure_app

        log("6, 7. the app")
        results["app"] = measure_app(quick=plan.name == "quick")
    return results


# --------------------------------------------------------------------------------------------------------
# BENCHMARKS.md
# --------------------------------------------------------------------------------------------------------


def mark(ok: bool) -> str:
    return "met" if ok else "**missed**"


def table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def write_markdown(results: dict, path: Path) -> str:
    """BENCHMARKS.md from the numbers of `run` (the prose around them is part of the template)."""
    env, plan = results["environment"], results["plan"]
    size = f"{plan['n_layers']}+{plan['n_layers']} layers, d_model {plan['d_model']}, {plan['n_heads']} heads, "
    size += f"FFN {plan['d_ff']}, vocabulary {plan['vocab']:,}"
    out = [
        "# Benchmarks",
        "",
        f"Measured by `python -m benchmarks.bench` ({plan['name']} run) on {env['date']}: {env['cpu']}, "
        f"{env['cores']} cores, {env['threads']} torch threads; Python {env['python']}, torch {env['torch']}, "
        f"transformers {env['transformers']}, gradio {env['gradio']}, plotly {env['plotly']}.",
        "Each figure is the median of repeats after a warm-up, both sides in the same process on the same weights, "
        "taking turns (ours, theirs, ours, …) so that a noisy moment slows both alike. "
        "Ratios are ours / theirs in time: below 1 means ours is faster.",
        "",
        f"## 1. One decoding step, opus-mt-sized model ({size}; random weights)",
        "",
        "Ours: `Decoding.step`, the explorer's path (it also lists the top-10 candidates). transformers: "
        "`MarianMTModel` with eager attention, one forward call per token with its cache, then softmax and top-10. "
        "Milliseconds per step, encoder pass excluded. Target: ratio ≤ 0.8 with the attention maps.",
        "",
    ]
    rows = [
        [
            r["length"],
            r["ours_attention_ms"],
            r["hf_attention_ms"],
            r["ratio_attention"],
            r["ours_plain_ms"],
            r["hf_plain_ms"],
            r["ratio_plain"],
        ]
        for r in results["decode_step"]
    ]
    out += table(
        [
            "output length",
            "ours, attention (ms)",
            "transformers, attention (ms)",
            "ratio",
            "ours, no attention (ms)",
            "transformers, no attention (ms)",
            "ratio",
        ],
        rows,
    )
    worst = max(r["ratio_attention"] for r in results["decode_step"])
    out += ["", f"Target ≤ 0.8 with attention: {mark(worst <= 0.8)} (worst ratio {worst})."]

    g = results["greedy"]
    out += [
        "",
        "## 2. Greedy translation of a batch",
        "",
        "Ours: `generate_batch` (finished sentences leave the batch). transformers: `generate(num_beams=1)` with an "
        "attention mask. Same padded batch, same rules (`</s>` forced at the limit, `<pad>` never generated); "
        '"same outputs" counts sentences where both produced exactly the same tokens.',
        "",
    ]
    rows = [
        [
            f"random weights, opus-mt size ({g['sentences']} sentences, {plan['batch_new_tokens']} tokens each)",
            g["ours_sentences_per_s"],
            g["hf_sentences_per_s"],
            g["ratio"],
            f"{g['same_outputs']}/{g['sentences']}",
        ]
    ]
    s = results.get("greedy_shipped")
    if s:
        rows.append(
            [
                f"shipped {s['model']} ({s['sentences']} test sentences, batches of {s['batch']})",
                s["ours_sentences_per_s"],
                s["hf_sentences_per_s"],
                s["ratio"],
                f"{s['same_outputs']}/{s['sentences']}",
            ]
        )
    out += table(["model", "ours (sentences/s)", "transformers (sentences/s)", "ratio", "same outputs"], rows)
    worst = max(r[3] for r in rows)
    out += ["", f"Target ≤ 0.8: {mark(worst <= 0.8)} (worst ratio {worst})."]
    if s:
        out += [
            "",
            "The shipped model runs in transformers through `python -m transformer.convert marian` "
            "(`convert.to_marian`), which permutes the model dimensions from the paper's interleaved sinusoids to "
            "Marian's [sin | cos] layout; the tests check that both compute the same logits.",
        ]

    out += [
        "",
        "## 3. The key/value cache against recomputing the prefix",
        "",
        "Ours, same model as section 1, no attention maps: each step feeds one new token and reuses the cached keys "
        "and values, against feeding the whole prefix again at every step. Target: ≥ 3× at 64 tokens.",
        "",
    ]
    out += table(
        ["output length", "with cache (ms)", "recomputed (ms)", "speed-up"],
        [[r["length"], r["cached_ms"], r["recomputed_ms"], f"{r['speedup']}×"] for r in results["cache"]],
    )
    at64 = next((r["speedup"] for r in results["cache"] if r["length"] == 64), None)
    if at64 is not None:
        out += ["", f"Target ≥ 3× at 64 tokens: {mark(at64 >= 3)} ({at64}×)."]

    b = results["beam"]
    out += [
        "",
        f"## 4. Beam search, width {b['width']}",
        "",
        f"Ours: `Decoding` with `BeamSearch({b['width']})`; transformers: `generate(num_beams={b['width']})`; "
        f"{b['sentences']} sentences one at a time, {b['max_new_tokens']} tokens each, random weights as in section 1.",
        "",
    ]
    out += table(
        ["ours (ms/sentence)", "transformers (ms/sentence)", "ratio", "same outputs"],
        [[b["ours_ms_per_sentence"], b["hf_ms_per_sentence"], b["ratio"], f"{b['same_outputs']}/{b['sentences']}"]],
    )

    t = results["training"]
    out += [
        "",
        "## 5. Training throughput",
        "",
        f"The shipped model's configuration ({t['parameters_ours']:,} parameters), batches of about "
        f"{t['batch_tokens']:,} target tokens, Adam, label smoothing 0.1, gradient clipping, dropout 0.1. "
        "torch.nn.Transformer with the same sizes, scaled tied embeddings and sinusoidal positions (it also has a "
        f"final LayerNorm after each stack: {t['parameters_torch']:,} parameters).",
        "",
    ]
    out += table(
        ["ours (target tokens/s)", "torch.nn.Transformer (target tokens/s)", "time ratio"],
        [[t["ours_tokens_per_s"], t["torch_tokens_per_s"], t["ratio_time"]]],
    )

    app = results.get("app")
    if app:
        out += ["", "## 6, 7. The app", ""] + app_markdown(app)
    classroom = results.get("classroom")
    if classroom:  # measured apart (python -m benchmarks.classroom), written up in docs/classroom.md
        out += ["", classroom.strip()]
    notes = results.get("notes")
    if notes:
        out += ["", "## What limits the numbers", "", notes.strip()]
    text = "\n".join(out) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def app_markdown(app: dict) -> list[str]:
    """Sections 6 and 7 from `benchmarks.app_bench.measure_app`'s numbers."""
    step, run = app["step_ms_median"], app["run_ms_median"]
    peak = app["peak_mb"]
    inside = app.get("inside_step_ms_median")  # measured since the Inside a step view
    inside_rows = [] if inside is None else [
        ["Step → Inside a step drawn (ms)", inside, app["inside_step_ms_p95"], "≤ 150", mark(inside <= 150)]
    ]  # fmt: skip
    tour = app.get("walkthrough_step_ms_median")  # measured since the walkthrough became a tour of the stages
    if tour is not None:  # eleven sections of text, tensors and figures
        inside_rows.append(["Step → the whole walkthrough drawn (ms)", tour, app["walkthrough_step_ms_p95"], "≤ 300",
                            mark(tour <= 300)])  # fmt: skip
    lines = [
        f"The real app (`python app.py`) in its own process; headless Chromium (Playwright) on the same machine. "
        f'Built-in model `{app["model"]}`, the sentence "{app["sentence"]}" ({app["n_steps"]} steps; the model '
        f'says "{app["translation"]}"). Step: click → every figure of the Attention tab\'s first screen drawn for the '
        "new step (the heatmap with the new row, the next-token candidates and every layer × head thumbnail); Run: "
        "click → the whole translation shown with its figures. Repeats: "
        f"{len(app['step_ms_each'])} steps, {len(app['run_ms_each'])} runs, {len(app['ready_s_each'])} starts."
        + (f" Measured on {app['measured']}, apart from the sections above." if app.get("measured") else ""),
        "",
    ]
    lines += table(
        ["measure", "median", "p95", "target", ""],
        [
            ["process start → ready (s)", app["ready_s"], max(app["ready_s_each"]), "≤ 8", mark(app["ready_s"] <= 8)],
            ["Step → every visible figure drawn (ms)", step, app["step_ms_p95"], "≤ 120", mark(step <= 120)],
            ["Run → translation shown (ms)", run, app["run_ms_p95"], "≤ 1000", mark(run <= 1000)],
            *inside_rows,
        ],
    )
    lines += [
        "",
        "Where a Step's time goes (medians): the handler (model + figures) "
        f"{app['step_server_fn_ms_median']} ms; the answer read by the page after {app['step_message_ms_median']} ms "
        f"({app['step_message_bytes_median'] / 1000:.1f} KB); drawing in the browser {app['step_browser_ms_median']} "
        f"ms. Run: the handler {app['run_server_fn_ms_median']} ms in all, the first token shown after "
        f"{app['run_first_token_ms_median']} ms, {app['run_message_bytes_median'] / 1000:.1f} KB streamed.",
        "",
        "Memory of the app process (resident set, MiB):",
        "",
    ]
    after = app.get("rss_after_100_steps_mb") or app["rss_after_steps_mb"]
    lines += table(
        ["started, no model loaded", f"all built-in models loaded ({len(app['models_loaded'])})",
         f"after {app['memory_step_clicks']} steps", "peak", "target"],
        [[app["rss_bare_mb"], app["rss_ready_mb"], after, peak, f"≤ 800: {mark(peak <= 800)}"]],
    )  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (what CI runs)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-app", action="store_true", help="skip sections 6 and 7 (they need Chromium)")
    parser.add_argument("--out", type=Path, default=None, help="markdown file (default: BENCHMARKS.md, full run)")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw numbers here")
    parser.add_argument("--notes", type=Path, default=None, help="notes to append (full run: docs/benchmark-notes.md)")
    parser.add_argument("--from-json", type=Path, default=None, help="only rewrite the markdown from saved numbers")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        results = run(plan, threads=args.threads, app=not args.no_app)
    notes = args.notes or (None if args.quick else ROOT / "docs" / "benchmark-notes.md")
    if notes and notes.exists():
        results["notes"] = notes.read_text(encoding="utf-8")
    classroom = ROOT / "docs" / "classroom.md"
    if not args.quick and classroom.exists():
        results["classroom"] = classroom.read_text(encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    out = args.out or (None if args.quick else ROOT / "BENCHMARKS.md")
    if out is not None:
        write_markdown(results, out)
        print(f"wrote {out}")
    else:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
