"""What made the next token: three ways to look past the attention weights, for the step being taken.

Attention weights say where a head looks, not what made the model choose its word. This module asks the model
three other questions about the token predicted from the decoder's input so far (the last target position):

1. **Contributions** (`contributions`): how much each source piece and each piece already written adds to the
   token's score, by integrated gradients (Sundararajan, Taly and Yan 2017, "Axiomatic Attribution for Deep
   Networks"), as Captum computes them. Every token's embedding row moves on a straight path from zero (the
   baseline: no words, the positions kept) to its real value; the gradients of the score along the path, times the
   distance travelled, give each piece its share. The shares add up to the score's change from the baseline
   (*completeness*), up to the error of the integral's numerical rule, which is measured and returned (`gap`).
   The score is the token's log-probability, or, to ask "why this token and not that one?", the difference of the
   two tokens' log-probabilities (the same as the difference of their logits).
2. **A census of the heads** (`head_census`): the step run again with each head silenced alone, every family,
   layer and head: how the token's probability changes, and whether the choice flips. Each run is a real forward
   pass, as the page's own silencing is.
3. **What each encoder layer already knows** (`decoder_lens`): the decoder reads the output of an intermediate
   encoder layer instead of the last one (the DecoderLens of Langedijk et al. 2024), and says what it would write.

Every function here only reads the model (several users may run the same model object at the same moment): no
hooks, no changed weights. The switches (masks, silenced heads, positions) are those of the page's step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from .model import AS_TRAINED, ATTENTION_FAMILIES, EncoderOutput, HeadRef, ModelSwitches, Transformer
from .worked import LayerPrediction

# Integrated gradients (`contributions`): the score read at `SCAN` + 1 points along the path, and again `REFINE` times
# where it jumps; the path cut into `SEGMENTS` segments of `STEPS` points each (Gauss–Legendre, Captum's default
# rule); the worst segments halved, `ROUNDS` times at most, until the completeness gap is at most `GAP`.
SEGMENTS = 16
STEPS = 2
ROUNDS = 6
GAP = 0.01
SCAN = 16
REFINE = 2


def _ids(ids: Sequence[int] | Tensor, device: torch.device) -> Tensor:
    """(1, L) token ids on the model's device."""
    return torch.as_tensor(ids, dtype=torch.long, device=device).reshape(1, -1)


def _device(model: Transformer) -> torch.device:
    return next(model.parameters()).device


def _next_logits(model: Transformer, tgt: Tensor, encoded: EncoderOutput, switches: ModelSwitches, **more) -> Tensor:
    """(B, V): the logits of the last target position (`more`: `Transformer.decode`'s other arguments)."""
    return model.decode(tgt, encoded, switches=switches, last_only=True, **more).logits[:, -1]


# ---- 1. Contributions ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Contributions:
    """Each piece's share of the score of the token being chosen (integrated gradients)."""

    source: Tensor  # (S,): each source piece's attribution, summed over its embedding's dimensions; signed
    target: Tensor  # (T,): each piece of the decoder's input (the start token, then the pieces written)
    score: float  # the score at the real input: log p(token), or log p(token) − log p(versus)
    baseline: float  # the score at the baseline: every token's embedding row zero, the positions kept
    steps: int  # the gradients computed: the integral's points, over all its segments

    @property
    def total(self) -> float:
        """The sum of every attribution: by completeness, `score − baseline`."""
        return float(self.source.sum() + self.target.sum())

    @property
    def gap(self) -> float:
        """The completeness gap: |Σ attributions − (score − baseline)| / |score − baseline| (0 with an exact
        integral)."""
        change = self.score - self.baseline
        return abs(self.total - change) / max(abs(change), 1e-9)

    @property
    def source_share(self) -> float:
        """The source sentence's part of the contribution, by magnitude: Σ|source| / (Σ|source| + Σ|target|)."""
        source, target = float(self.source.abs().sum()), float(self.target.abs().sum())
        return source / max(source + target, 1e-12)


def score_of(
    model: Transformer,
    src: Tensor,
    tgt: Tensor,
    token: int,
    versus: int | None,
    switches: ModelSwitches,
    source_vectors: Tensor | None = None,
    target_vectors: Tensor | None = None,
) -> Tensor:
    """The explained score for each batch row: log p(token) at the last target position, minus log p(versus)
    when given. `source_vectors`/`target_vectors` (B, L, d): the embedding rows to use instead of the table's."""
    encoded = model.encode(src, switches=switches, token_vectors=source_vectors)
    logits = _next_logits(model, tgt, encoded, switches, token_vectors=target_vectors)
    log_probabilities = torch.log_softmax(logits.float(), dim=-1)
    score = log_probabilities[:, token]
    return score if versus is None else score - log_probabilities[:, versus]


def contributions(
    model: Transformer,
    src_ids: Sequence[int] | Tensor,
    tgt_ids: Sequence[int] | Tensor,
    token: int,
    *,
    versus: int | None = None,
    switches: ModelSwitches = AS_TRAINED,
    segments: int = SEGMENTS,
    steps: int = STEPS,
    rounds: int = ROUNDS,
) -> Contributions:
    """Integrated gradients of the score of `token` (predicted from the last of `tgt_ids`, the decoder's input
    so far, starting with the start token) over the embedding rows of every source and target piece. With `versus`,
    of the difference between the two tokens' scores ("why `token` and not `versus`?"): by the integral's
    linearity, that is the difference of the two tokens' attributions.

    The integral is taken piece by piece along the path (adaptive quadrature). A trained model's score often
    changes all at once, over a few hundredths of the path, where an even grid of points puts one or none. So:

    1. the score is read along the path (forward passes only, `path_points`);
    2. the path is cut into `segments`, placed half evenly and half by how much the score changes (`segment_cuts`):
       many where it jumps, few where it is flat;
    3. Captum integrates every segment with `steps` points (Gauss–Legendre), all in one batch;
    4. each segment's own completeness is checked (its attributions against its change of score); while the whole
       gap is above `GAP`, the worst segments are halved and integrated again, `rounds` times at most.

    The segments' attributions add up to those of the whole path, which is one straight line."""
    from captum.attr import IntegratedGradients  # (imported when first asked for: the page starts without it)

    device = _device(model)

    def score(source_vectors: Tensor, target_vectors: Tensor, src: Tensor, tgt: Tensor) -> Tensor:
        return score_of(model, src, tgt, token, versus, switches, source_vectors, target_vectors)

    integrated = IntegratedGradients(score)
    # Gradients, even where the caller runs in inference mode (the app does): ids and rows made here are ordinary.
    # What Captum makes (its points on the path) goes where the model is, whatever PyTorch's default device.
    with torch.inference_mode(False), torch.autocast(device.type, enabled=False), torch.device(device):
        src, tgt = _ids(src_ids, device).clone(), _ids(tgt_ids, device).clone()
        with torch.no_grad():
            source_rows = model.src_embed.tokens(src)  # (1, S, d)
            target_rows = model.tgt_embed.tokens(tgt)  # (1, T, d)

        def along(alphas: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:  # the path's points, a batch row each
            a = alphas.float().to(device)[:, None, None]
            n = len(alphas)
            return a * source_rows, a * target_rows, src.expand(n, -1), tgt.expand(n, -1)

        def read(alphas: Tensor) -> Tensor:  # the score at these points of the path
            with torch.no_grad():
                return score(*along(alphas)).double().cpu()

        def integrate(starts: Tensor, ends: Tensor) -> tuple[Tensor, Tensor]:  # (segments, S) and (segments, T)
            start, end = along(starts), along(ends)
            with torch.enable_grad():
                source, target = integrated.attribute(
                    end[:2], baselines=start[:2], additional_forward_args=end[2:], n_steps=steps
                )
            return source.sum(-1).detach().double().cpu(), target.sum(-1).detach().double().cpu()

        return adaptive_integral(read, integrate, segments, steps, rounds)


Integrate = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]  # segments' starts and ends → their attributions


def adaptive_integral(
    read: Callable[[Tensor], Tensor], integrate: Integrate, segments: int, steps: int, rounds: int
) -> Contributions:
    """Steps 1 to 4 of `contributions`: `read(alphas)` gives the score at points of the path, `integrate(starts,
    ends)` the source's and the target's attributions of each segment (one row a segment)."""
    alphas, scores = path_points(read)
    cuts = segment_cuts(alphas, scores, segments)  # indices into the points read
    starts, ends, low, high = alphas[cuts[:-1]], alphas[cuts[1:]], scores[cuts[:-1]], scores[cuts[1:]]
    source, target = integrate(starts, ends)
    evaluations = len(starts) * steps
    for _ in range(rounds):
        errors = source.sum(1) + target.sum(1) - (high - low)  # each segment's own completeness gap
        if abs(float(errors.sum())) <= GAP * abs(float(scores[-1] - scores[0])):
            break
        worst = errors.abs().topk(min(segments // 2, len(errors))).indices  # the worst half, at most
        worst = worst[errors.abs()[worst] >= 0.25 * errors.abs().max()]
        kept = torch.ones(len(starts), dtype=torch.bool, device="cpu")
        kept[worst] = False
        middles = (starts[worst] + ends[worst]) / 2
        at_middles = read(middles)
        halves = (  # each worst segment as two: its first halves, then its second halves
            torch.cat([starts[worst], middles]),
            torch.cat([middles, ends[worst]]),
            torch.cat([low[worst], at_middles]),
            torch.cat([at_middles, high[worst]]),
        )
        new_source, new_target = integrate(halves[0], halves[1])
        evaluations += len(halves[0]) * steps
        starts, ends, low, high = (
            torch.cat([old[kept], new]) for old, new in zip((starts, ends, low, high), halves, strict=True)
        )
        source, target = torch.cat([source[kept], new_source]), torch.cat([target[kept], new_target])
    return Contributions(source.sum(0).float(), target.sum(0).float(), float(scores[-1]), float(scores[0]), evaluations)


def path_points(read: Callable[[Tensor], Tensor]) -> tuple[Tensor, Tensor]:
    """The score along the path: at `SCAN` + 1 even points from the baseline (0) to the input (1), then, `REFINE`
    times, at 3 more points inside each of the (at most 4) intervals where it changes most: where the score jumps,
    points a few thousandths apart. `read(alphas)` gives the score at a batch of points. Returns the points and
    their scores, in order."""
    alphas = torch.linspace(0, 1, SCAN + 1, dtype=torch.float64, device="cpu")  # (whatever PyTorch's default device)
    scores = read(alphas)
    for _ in range(REFINE):
        changes = scores.diff().abs()
        steep = changes.topk(min(4, len(changes))).indices
        steep = steep[changes[steep] > 0.25 * changes.sum() / SCAN]  # only where it changes more than on average
        if not len(steep):
            break
        width = (alphas[steep + 1] - alphas[steep])[:, None]
        inside = (
            alphas[steep][:, None] + width * torch.tensor([0.25, 0.5, 0.75], dtype=alphas.dtype, device="cpu")
        ).flatten()
        alphas, order = torch.cat([alphas, inside]).sort()
        scores = torch.cat([scores, read(inside)])[order]
    return alphas, scores


def segment_cuts(alphas: Tensor, scores: Tensor, n: int) -> Tensor:
    """The indices of at most n + 1 of the points read (`path_points`), the first and the last among them, that cut
    the path into segments each holding about an equal share of a measure that is half the path's length and half
    the score's change along it (its total variation)."""
    variation = torch.cat([torch.zeros(1, dtype=alphas.dtype, device="cpu"), scores.diff().abs().cumsum(0)])
    measure = 0.5 * alphas + 0.5 * (variation / variation[-1] if variation[-1] > 0 else alphas)
    wanted = torch.linspace(0, 1, n + 1, dtype=alphas.dtype, device="cpu")
    nearest = (measure[None, :] - wanted[:, None]).abs().argmin(1)
    nearest[0], nearest[-1] = 0, len(alphas) - 1
    return torch.unique(nearest)  # sorted, each once


# ---- 2. A census of the heads --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SilencedHead:
    """The step run again with one more head silenced."""

    head: HeadRef  # (family, layer, head)
    probability: float  # the probability of the token the model chose, with this head silenced
    choice: int  # the most probable token with this head silenced
    choice_probability: float


@dataclass(frozen=True)
class Census:
    """Every head silenced alone, for the token chosen at one step."""

    token: int  # the token the model chooses with no more head silenced
    probability: float  # its probability then
    heads: tuple[SilencedHead, ...]  # family by family (`ATTENTION_FAMILIES`), layer by layer, head by head

    def change(self, silenced: SilencedHead) -> float:
        """How much silencing the head changes the token's probability (negative: it lowers it)."""
        return silenced.probability - self.probability

    def ranked(self) -> list[SilencedHead]:
        """The heads, those whose silencing flips the choice first, then by how much it moves the probability."""
        return sorted(self.heads, key=lambda h: (h.choice == self.token, -abs(self.change(h))))

    @property
    def flips(self) -> list[SilencedHead]:
        """The heads whose silencing makes the model choose another token."""
        return [h for h in self.heads if h.choice != self.token]


def every_head(model: Transformer) -> list[HeadRef]:
    """Every head of the model: family by family, layer by layer."""
    config = model.config
    return [
        (family, layer, head)
        for family in ATTENTION_FAMILIES
        for layer in range(config.n_layers(family))
        for head in range(config.n_heads)
    ]


def head_census(
    model: Transformer,
    src_ids: Sequence[int] | Tensor,
    tgt_ids: Sequence[int] | Tensor,
    *,
    switches: ModelSwitches = AS_TRAINED,
    token: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Census:
    """The step (the last of `tgt_ids`) run again once per head, with that head silenced as well as those
    `switches` silences already (a head silenced already is run as it is). `token`: the token followed (default:
    the one the model chooses). `progress(done, total)` is told after each run. A head of the decoder is silenced
    on the encoder's own output, computed once."""
    device = _device(model)
    src, tgt = _ids(src_ids, device), _ids(tgt_ids, device)
    base = switches.silenced

    def encoded(silenced: frozenset[HeadRef]) -> EncoderOutput:
        return model.encode(src, switches=replace(switches, silenced=silenced))

    def probabilities(memory: EncoderOutput, silenced: frozenset[HeadRef]) -> Tensor:
        return torch.softmax(_next_logits(model, tgt, memory, replace(switches, silenced=silenced))[0].float(), dim=-1)

    heads = every_head(model)
    found: list[SilencedHead] = []
    with torch.inference_mode(), torch.autocast(device.type, enabled=False):
        memory = encoded(base)
        first = probabilities(memory, base)
        token = int(first.argmax()) if token is None else token
        for done, head in enumerate(heads, start=1):
            silenced = base | {head}
            alone = probabilities(encoded(silenced) if head[0] == "encoder" else memory, silenced)
            best = int(alone.argmax())
            found.append(SilencedHead(head, float(alone[token]), best, float(alone[best])))
            if progress is not None:
                progress(done, len(heads))
    return Census(token, float(first[token]), tuple(found))


# ---- 3. What each encoder layer already knows ----------------------------------------------------------------


def decoder_lens(
    model: Transformer,
    src_ids: Sequence[int] | Tensor,
    tgt_ids: Sequence[int] | Tensor,
    *,
    switches: ModelSwitches = AS_TRAINED,
    token: int | None = None,
    top_k: int = 3,
) -> list[LayerPrediction]:
    """For each encoder layer (1 … N, the last being the model itself), what the decoder predicts at the step when
    its cross-attention reads that layer's output (after the encoder's final LayerNorm in a pre-norm model) instead
    of the last layer's: the `top_k` tokens, and the probability of `token` (default: the one the whole model
    chooses). `LayerPrediction.layer` counts from 0, as the decoder's logit lens does."""
    device = _device(model)
    src, tgt = _ids(src_ids, device), _ids(tgt_ids, device)
    n_layers = model.config.n_encoder_layers
    with torch.inference_mode(), torch.autocast(device.type, enabled=False):
        layers = [model.encode(src, switches=switches, layers=n) for n in range(1, n_layers + 1)]
        mask = layers[-1].memory_mask
        memories = EncoderOutput(
            torch.cat([layer.memory for layer in layers]),
            None if mask is None else mask.expand(n_layers, -1, -1, -1),
        )
        logits = _next_logits(model, tgt.expand(n_layers, -1), memories, switches)
        probabilities = torch.softmax(logits.float(), dim=-1)  # (N, V)
        token = int(probabilities[-1].argmax()) if token is None else token
        top = probabilities.topk(top_k, dim=-1)
    return [
        LayerPrediction(n, top.indices[n].tolist(), top.values[n].tolist(), float(probabilities[n, token]))
        for n in range(n_layers)
    ]


def first_knowing(predictions: Sequence[LayerPrediction], token: int) -> int | None:
    """The first layer whose most probable token is `token` (as the class's question "Which layer first knows?"
    asks of the decoder's layers); None if none is."""
    return next((p.layer for p in predictions if p.top_ids[0] == token), None)
