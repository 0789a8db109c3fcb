"""Section 5: training throughput (target tokens a second) for the shipped model's configuration, ours against
`torch.nn.Transformer` with the same sizes, both trained as `transformer.training.train` trains ours: Adam, label
smoothing 0.1, gradient clipping, dropout."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.plan import Plan
from benchmarks.timing import measure, ratio
from transformer.checkpoint import read_architecture
from transformer.model import Transformer, TransformerConfig

SMOOTHING = 0.1


def training_config(plan: Plan, shipped: Path) -> TransformerConfig:
    """The shipped model's configuration; a quick run keeps its architecture at the plan's tiny sizes."""
    config, _, _ = read_architecture(shipped)  # no weights to load for a config
    return config if plan.name == "full" else replace(config, **plan.sizes())


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
        causal = torch.ones(n, n, dtype=torch.bool, device=src.device).triu(1)  # True: may not attend (torch's way)
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

    def loss(self, batch: tuple[torch.Tensor, ...], smoothing: float, n_tokens: int) -> torch.Tensor:
        """The same loss as ours (`transformer.training.recipe.batch_loss`)."""
        src, tgt_in, labels = batch
        logits = self(src, tgt_in)
        return F.cross_entropy(
            logits.reshape(-1, logits.size(-1)),
            labels.reshape(-1),
            ignore_index=self.config.pad_id,
            label_smoothing=smoothing,
            reduction="sum",
        ) / max(n_tokens, 1)


def training_batch(config: TransformerConfig, batch_tokens: int, seed: int):
    """Sentence pairs of 10-30 tokens up to `batch_tokens` target tokens, as (src, tgt_in, labels, n_tokens)."""
    from transformer.training.batches import collate

    generator = torch.Generator().manual_seed(seed)
    examples, total = [], 0
    while total < batch_tokens:
        s, t = (int(torch.randint(10, 31, (1,), generator=generator)) for _ in range(2))
        src = torch.randint(4, config.src_vocab_size, (s,), generator=generator).tolist() + [config.eos_id]
        tgt = torch.randint(4, config.tgt_vocab_size, (t,), generator=generator).tolist() + [config.eos_id]
        examples.append((src, tgt))
        total += len(tgt)
    return (*collate(examples), total)


def throughput(model: torch.nn.Module, loss, batches: list, repeats: int) -> float:
    """Target tokens a second over passes through `batches`, one optimiser step each, as training does; `loss` is
    (model, (src, tgt_in, labels), smoothing, n_tokens) -> loss."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

    def one_pass():
        for src, tgt_in, labels, n_tokens in batches:
            value = loss(model, (src, tgt_in, labels), SMOOTHING, n_tokens)
            optimizer.zero_grad(set_to_none=True)
            value.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

    seconds = statistics.median(measure(one_pass, repeats))
    return sum(b[3] for b in batches) / seconds


def bench_training(plan: Plan, config: TransformerConfig, device: str = "cpu") -> dict:
    """Both models' sizes and target tokens a second on the same batches, on `device`."""
    from transformer.training.recipe import batch_loss

    batches = [training_batch(config, plan.train_batch_tokens, seed) for seed in range(plan.train_steps)]
    batches = [(*(tensor.to(device) for tensor in batch[:3]), batch[3]) for batch in batches]
    torch.manual_seed(0)
    ours = Transformer(config).to(device).train()
    theirs = TorchTransformer(config).to(device).train()
    repeats = max(1, plan.repeats - 2)
    ours_tps = throughput(ours, batch_loss, batches, repeats)
    theirs_tps = throughput(theirs, TorchTransformer.loss, batches, repeats)
    return {
        "parameters_ours": ours.num_parameters(),
        "parameters_torch": sum(p.numel() for p in theirs.parameters()),
        "batch_tokens": plan.train_batch_tokens,
        "ours_tokens_per_s": round(ours_tps),
        "torch_tokens_per_s": round(theirs_tps),
        "ratio_time": ratio(theirs_tps, ours_tps),  # time per token, ours / theirs
    }
