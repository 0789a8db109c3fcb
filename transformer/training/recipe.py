"""The paper's training recipe (§5), written once: the library's trainer (`train.Trainer`) and the Train tab's runs
(`live.LiveRun`) both train with it, and both show how they learn the same way.

* the learning rate: a linear warm-up, then the inverse square root of the step (§5.3): `learning_rate`;
* the loss: label-smoothed cross-entropy (§5.4) per target token: `token_loss`, `batch_loss`;
* one update: Adam with β = (0.9, 0.98) and ε = 10⁻⁹ (§5.3), the learning rate set for each step, the gradients
  clipped: `Recipe`;
* how a run is watched as it learns: the *probe*, one held-out example's attention and the model's translation of it
  (`look`), the loss and exact match on held-out pairs (`measured`), at steps spaced logarithmically, since the
  start of training changes fastest (`snapshot_steps`, `steps_until`, `thinned`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional as F

from ..decoding import generate_batch
from ..model import ATTENTION_FAMILIES, Transformer
from ..tokenizer import Tokenizer
from .batches import collate
from .settings import PAD

# --------------------------------------------------------------------------------------------------------
# The learning rate, the loss and one update
# --------------------------------------------------------------------------------------------------------


def learning_rate(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)  (§5.3), for step = 1, 2, …"""
    step = max(step, 1)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def token_loss(logits: Tensor, labels: Tensor, smoothing: float) -> Tensor:
    """The label-smoothed cross-entropy (§5.4) of next-token logits (B, T, V) against the labels (B, T), summed over
    the target tokens; padding counts for nothing."""
    return F.cross_entropy(
        logits.float().reshape(-1, logits.size(-1)),
        labels.reshape(-1),
        ignore_index=PAD,
        label_smoothing=smoothing,
        reduction="sum",
    )


def batch_loss(model: torch.nn.Module, batch: tuple[Tensor, Tensor, Tensor], smoothing: float, n_tokens: int):
    """Summed label-smoothed cross-entropy over the batch's target tokens, divided by `n_tokens`.

    `n_tokens` is the token count of the *global* batch, so that the gradients averaged over processes equal
    the gradient of single-process training (each process multiplies by the world size to undo the average).
    """
    src, tgt_in, labels = batch
    return token_loss(model(src, tgt_in).logits, labels, smoothing) / n_tokens


class Recipe:
    """Adam with β = (0.9, 0.98) and ε = 10⁻⁹ over `model`'s parameters, its learning rate set for every step by
    `learning_rate` (for `d_model`, `warmup` and `scale`), the gradients clipped to `clip_norm`: `update` is one
    training step, `state_dict` all a resumed run needs of it."""

    def __init__(self, model: torch.nn.Module, d_model: int, warmup: int, scale: float = 1.0, clip_norm: float = 1.0):
        self.model, self.clip_norm = model, clip_norm
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: learning_rate(step + 1, d_model, warmup, scale)
        )

    @property
    def learning_rate(self) -> float:
        """The learning rate of the next update."""
        return self.schedule.get_last_lr()[0]

    def update(self, loss: Tensor) -> None:
        """One step down the gradient of `loss`: backward, the gradients clipped, Adam, the next learning rate."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        self.optimizer.step()
        self.schedule.step()

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "schedule": self.schedule.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.schedule.load_state_dict(state["schedule"])


# --------------------------------------------------------------------------------------------------------
# Watching a run learn
# --------------------------------------------------------------------------------------------------------


def snapshot_steps() -> Iterator[int]:
    """The steps at which a run keeps a snapshot: 0, 1, 2, 3, 4, 6, 8, 11, 16, 23, 33, 47, … each about √2 times
    the last (and at least one more)."""
    step = 0
    while True:
        yield step
        step = max(step + 1, round(step * math.sqrt(2)))


def steps_until(last: int) -> list[int]:
    """`snapshot_steps` up to `last`, and `last` itself."""
    steps = []
    for step in snapshot_steps():
        if step >= last:
            return [*steps, last]
        steps.append(step)
    raise AssertionError("unreachable")


def thinned(steps: list[int], limit: int) -> list[int]:
    """At most `limit` of `steps` (sorted), still spaced logarithmically: while there are too many, drop the one
    whose neighbours are closest on a log scale. The first and the last always stay."""
    kept = list(steps)
    while len(kept) > max(limit, 2):
        gaps = [math.log1p(kept[i + 1]) - math.log1p(kept[i - 1]) for i in range(1, len(kept) - 1)]
        del kept[1 + gaps.index(min(gaps))]
    return kept


@dataclass(frozen=True)
class Probe:
    """What the model makes of the probe, one held-out example: the attention of the teacher-forced pass over its
    correct answer (every family, layer and head), and the model's own greedy translation."""

    step: int
    source: tuple[str, ...]  # the encoder's pieces, `</s>` included
    decoder_input: tuple[str, ...]  # `<s>` and the correct answer: what each row of the attention reads from
    expected: tuple[str, ...]  # the correct answer and `</s>`: what each row should predict
    attention: dict[str, np.ndarray]  # family -> (layers, heads, rows, columns), float32
    prediction: tuple[str, ...]  # the greedy translation's pieces, `</s>` included when it ends

    @property
    def correct(self) -> bool:
        return self.prediction == self.expected

    def wrong(self) -> list[bool]:
        """For each piece of the prediction, whether it is not the expected piece at its place."""
        return [i >= len(self.expected) or piece != self.expected[i] for i, piece in enumerate(self.prediction)]


@torch.no_grad()
def look(model: Transformer, tokenizer: Tokenizer, source: str, target: str, step: int, max_new_tokens: int) -> Probe:
    """The probe (`source` → `target`) as `model` sees it at `step`."""
    model.eval()
    device = next(model.parameters()).device
    src_ids, tgt_ids = tokenizer.encode_source(source), tokenizer.encode_target(target)
    decoder_input = [model.config.decoder_start_id, *tgt_ids[:-1]]
    out = model(torch.tensor([src_ids], device=device), torch.tensor([decoder_input], device=device),
                return_attention=True)  # fmt: skip
    attention = {
        family: torch.stack([layer[0] for layer in getattr(out.attention, family)]).float().cpu().numpy()
        for family in ATTENTION_FAMILIES
    }
    (prediction,) = generate_batch(model, [src_ids], max_new_tokens=max_new_tokens)
    return Probe(
        step=step,
        source=tuple(tokenizer.source_piece(i) for i in src_ids),
        decoder_input=tuple(tokenizer.target_piece(i) for i in decoder_input),
        expected=tuple(tokenizer.target_piece(i) for i in tgt_ids),
        attention=attention,
        prediction=tuple(tokenizer.target_piece(i) for i in prediction),
    )


@torch.no_grad()
def measured(model: Transformer, examples: Sequence[tuple[list[int], list[int]]], smoothing: float = 0.0) -> dict:
    """The loss per target token (teacher-forced) and exact match (greedy translations) on encoded `examples`."""
    model.eval()
    src, tgt_in, labels = collate(list(examples), next(model.parameters()).device)
    loss = float(token_loss(model(src, tgt_in).logits, labels, smoothing)) / int((labels != PAD).sum())
    outputs = generate_batch(model, [s for s, _ in examples], max_new_tokens=model.config.max_positions - 1)
    right = sum(output == target for output, (_, target) in zip(outputs, examples, strict=True))
    return {"loss": loss, "exact": right / len(examples)}
