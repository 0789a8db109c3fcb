"""Step-by-step decoding: greedy, sampling and beam search, one record per generated token.

A `Decoding` holds the state of one translation in progress. It is an iterator: each `next()` generates
one token and returns a `Step` record (the chosen token, the top-k candidates with their probabilities, and the
attention of the query that chose it). Between steps the caller may

* look at the distribution of the *next* token (`upcoming()`), e.g. to offer the candidates for forcing,
* force the next token (`step(force=id)` or `send(id)`): teacher forcing, or "what if it had said …",
* step back (`back()`), and continue from there with the same or another choice.

`translate()` simply runs the same iterator to the end, so the explorer and batch translation share one
source of truth.

The rules every translation obeys are written once, in `GenerationRules`: a hypothesis ends when it produces
`</s>`, `</s>` is forced at the last allowed step, and the padding (and BOS) tokens are never generated — the same
rules as Hugging Face's `generate` for opus-mt. `Decoding` and the batched `generate_batch` both apply them. Within
them a strategy object chooses, as whisper's decoders do: `Greedy` and `Sampling` pick a token per row (`choose`),
and `BeamSearch` ranks its finished hypotheses (`score`) while `Decoding` keeps the beams.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .model import AS_TRAINED, DecoderCache, EncoderOutput, ModelSwitches, Transformer, TransformerConfig

# --------------------------------------------------------------------------------------------------------
# The rules every translation follows, and the strategies that choose within them
# --------------------------------------------------------------------------------------------------------


def banned_tokens(config: TransformerConfig) -> list[int]:
    """The tokens a translation never contains, whatever the model's scores: padding, and the start token when it is
    a separate BOS (Marian starts from the padding token). Decoding, batch translation and the Hugging Face export
    (`marian.to_marian`'s `bad_words_ids`) all ban these."""
    return sorted({config.pad_id, config.decoder_start_id} - {config.eos_id})


@dataclass(frozen=True)
class GenerationRules:
    """What every translation obeys, whatever the strategy (the rules of Hugging Face's `generate` for opus-mt): the
    banned tokens are never generated, and a translation ends with `</s>`, forced at its last allowed token.
    `Decoding` and `generate_batch` both apply them, through `constrain`."""

    eos_id: int
    banned: tuple[int, ...]
    longest: int  # the most tokens any translation may have, `</s>` included: the positions left after the start

    @classmethod
    def of(cls, config: TransformerConfig) -> GenerationRules:
        return cls(config.eos_id, tuple(banned_tokens(config)), config.max_positions - 1)

    def limit(self, max_new_tokens: int | None) -> int:
        """The caller's limit on generated tokens (None: as many as the model has positions), checked."""
        limit = self.longest if max_new_tokens is None else max_new_tokens
        if not (isinstance(limit, int) and 1 <= limit <= self.longest):
            raise ValueError(f"max_new_tokens must be between 1 and {self.longest}, got {max_new_tokens!r}")
        return limit

    def constrain(self, scores: Tensor, last: Tensor | bool) -> Tensor:
        """(N, V) scores (logits or log-probabilities) with the rules applied, as a copy. `last` (a bool, or one
        per row) marks the rows at their last allowed token: those can only end."""
        scores = scores.clone()
        if self.banned:
            scores[:, list(self.banned)] = -math.inf
        ending = torch.full_like(scores[0], -math.inf)
        ending[self.eos_id] = 0.0
        last = torch.as_tensor(last, device=scores.device).reshape(-1, 1)  # (N, 1) or (1, 1)
        return torch.where(last, ending, scores)


@dataclass(frozen=True)
class Greedy:
    """Always take the most probable token."""

    def choose(self, scores: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """(…, V) scores, the rules applied -> (…) the chosen token ids."""
        return scores.argmax(dim=-1)


@dataclass(frozen=True)
class Sampling:
    """Draw the next token at random from the (reshaped) distribution; reproducible through `seed`.

    temperature: divides the logits (< 1 sharpens, > 1 flattens).
    top_k: keep only the k most probable tokens (0 = all).
    top_p: keep the smallest set of most probable tokens whose probability reaches p (1.0 = all).
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a positive number, got {self.temperature!r}")
        if not (isinstance(self.top_k, int) and self.top_k >= 0):
            raise ValueError(f"top_k must be an integer >= 0, got {self.top_k!r}")
        if not (0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")

    def generator(self) -> torch.Generator:
        """A CPU generator for the draws (`choose` draws on the CPU): one seed, the same tokens on every device."""
        return torch.Generator(device="cpu").manual_seed(self.seed)

    def choose(self, scores: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """(…, V) log-probabilities, the rules applied (banned tokens at -inf) -> (…) token ids drawn from
        softmax(scores / T) restricted to the top-k and the top-p."""
        logits = scores / self.temperature
        if self.top_k and self.top_k < logits.size(-1):
            kth = logits.topk(self.top_k, dim=-1).values[..., -1:]
            logits = logits.masked_fill(logits < kth, -math.inf)
        if self.top_p < 1.0:
            sorted_logits, order = logits.sort(dim=-1, descending=True)
            cumulative = sorted_logits.softmax(-1).cumsum(-1)
            # drop a token when the tokens before it already reach top_p (the most probable one always stays)
            drop_sorted = (cumulative - sorted_logits.softmax(-1)) >= self.top_p
            logits = logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), -math.inf)
        probs = logits.softmax(-1).cpu()
        return torch.multinomial(probs, 1, generator=generator).squeeze(-1).to(scores.device)


@dataclass(frozen=True)
class BeamSearch:
    """Keep the `width` best partial translations; finished ones are ranked by logprob / length^length_penalty."""

    width: int = 4
    length_penalty: float = 1.0

    def __post_init__(self) -> None:
        if not (isinstance(self.width, int) and self.width >= 1):
            raise ValueError(f"beam width must be an integer >= 1, got {self.width!r}")
        if not math.isfinite(self.length_penalty):
            raise ValueError(f"length_penalty must be a finite number, got {self.length_penalty!r}")

    def score(self, logprob: float, length: int) -> float:
        """A finished hypothesis's rank: its log-probability over its length to the length penalty."""
        return logprob / length**self.length_penalty


Strategy = Greedy | Sampling | BeamSearch


# --------------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    token_id: int
    prob: float  # the model's probability (softmax of the logits, temperature 1, nothing filtered)


@dataclass(frozen=True)
class Hypothesis:
    """One beam: the tokens generated so far (without the start token) and their summed log-probability."""

    tokens: tuple[int, ...]
    logprob: float
    score: float  # logprob / length ** length_penalty for finished beams; logprob while running


@dataclass(frozen=True, eq=False)  # tensors: compare with torch.equal, not ==
class StepAttention:
    """The attention of the one query that produced a step's distribution, per decoder layer."""

    decoder_self: list[Tensor]  # (H, t): over the target positions 0 … t-1 fed so far
    cross: list[Tensor]  # (H, S): over the source tokens


@dataclass(frozen=True)
class Step:
    """What happened at one decoding step."""

    index: int  # 0 for the first generated token
    token_id: int  # the token chosen (for beam search: the newest token of the best running beam)
    prob: float  # the model's probability of that token
    forced: bool  # chosen by the caller, not by the strategy
    candidates: tuple[Candidate, ...]  # the top-k of the distribution the token was chosen from
    finished: bool  # decoding is over after this step
    attention: StepAttention | None
    beams: tuple[Hypothesis, ...] = ()  # beam search: running beams after this step, best first
    parents: tuple[int, ...] = ()  # beam search: the previous beam each running beam extends
    finished_beams: tuple[Hypothesis, ...] = ()  # beam search: completed hypotheses so far, best first


# --------------------------------------------------------------------------------------------------------
# The decoding state machine
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _State:
    """Everything needed to go back to a point in decoding (caches are rebuilt, not stored)."""

    tokens: Tensor  # (N, t) including the start token; N = 1, or the number of running beams
    logprobs: Tensor  # (N,) summed (processed) log-probabilities of the generated tokens
    finished_beams: tuple[Hypothesis, ...] = ()
    improvable: bool = True  # beam search: can a running beam still beat the finished ones?
    done: bool = False
    rng_state: Tensor | None = None
    steps: tuple[Step, ...] = ()


class Decoding(Iterator[Step]):
    """One translation in progress. Iterate it (or call `step`) to generate token by token.

    Args:
        model: the Transformer (used read-only; nothing is stored on it).
        src_ids: one source sentence as token ids (ending with `</s>`).
        strategy: Greedy(), Sampling(...) or BeamSearch(...).
        switches: masks, positions and silenced heads for every forward pass of this decoding.
        max_new_tokens: at most this many generated tokens, `</s>` included (it is forced at the last one).
        top_k: how many candidates each record lists.
        return_attention: record the attention of each step's query in its record (`Step.attention`; None without),
            and the encoder's (`encoder_attention`). Off by default: the explorer draws attention from a teacher-forced
            pass over the output (`explorer.session.StepSnapshot`), not from the records.
    """

    def __init__(
        self,
        model: Transformer,
        src_ids: Sequence[int] | Tensor,
        strategy: Strategy = Greedy(),
        *,
        switches: ModelSwitches = AS_TRAINED,
        max_new_tokens: int | None = None,
        top_k: int = 10,
        return_attention: bool = False,
    ):
        cfg = model.config
        self.model = model
        self.strategy = strategy
        self.switches = switches.checked(cfg)
        self.device = next(model.parameters()).device
        src = torch.as_tensor(src_ids, dtype=torch.long, device=self.device).reshape(1, -1)  # (1, S)
        if src.size(1) == 0:
            raise ValueError("the source sentence is empty")
        if src.size(1) > cfg.max_positions:
            raise ValueError(f"the source has {src.size(1)} tokens; this model reads at most {cfg.max_positions}")
        if int(src.min()) < 0 or int(src.max()) >= cfg.src_vocab_size:
            raise ValueError("source token ids outside the vocabulary")
        self.src = src
        self.rules = GenerationRules.of(cfg)
        self.max_new_tokens = self.rules.limit(max_new_tokens)
        self.top_k = min(top_k, cfg.tgt_vocab_size)
        self.return_attention = return_attention
        self.generator = strategy.generator() if isinstance(strategy, Sampling) else None

        with torch.inference_mode():
            encoded = model.encode(src, switches=self.switches, return_attention=return_attention)
        self.encoder_attention: list[Tensor] = [a[0] for a in encoded.attention]  # per layer (H, S, S)
        self._encoded = encoded
        self._encoded_rows: dict[int, EncoderOutput] = {1: encoded}
        start = torch.full((1, 1), cfg.decoder_start_id, dtype=torch.long, device=self.device)
        self._history: list[_State] = []
        self._state = _State(start, torch.zeros(1, device=self.device), rng_state=self._rng_state())
        with torch.inference_mode():
            self._feed(start, None, start)

    # ---- public API -------------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self._state.done

    @property
    def steps(self) -> tuple[Step, ...]:
        """The records of the steps taken so far."""
        return self._state.steps

    @property
    def output_ids(self) -> list[int]:
        """The translation so far (or final), without the start token, up to and including `</s>`."""
        state = self._state
        if state.done and state.finished_beams:  # beam search: the best completed hypothesis
            return list(state.finished_beams[0].tokens)
        return state.tokens[0, 1:].tolist()

    def upcoming(self, k: int | None = None) -> tuple[Candidate, ...]:
        """The top-k candidates for the next token (of the best running hypothesis), before stepping."""
        if self.finished:
            return ()
        return self._candidates(self._next_logprobs[0], k or self.top_k)

    def __next__(self) -> Step:
        if self.finished:
            raise StopIteration
        return self.step()

    def send(self, token_id: int) -> Step:
        """Force the next token (generator-style `send`)."""
        return self.step(force=token_id)

    def step(self, force: int | None = None) -> Step:
        """Generate one token, or take `force` as the next token. Returns the step's record."""
        if self.finished:
            raise RuntimeError("decoding has finished: step back or start again")
        if force is not None and not (isinstance(force, int) and 0 <= force < self.model.config.tgt_vocab_size):
            raise ValueError(f"cannot force token {force!r}: not in the target vocabulary")
        self._history.append(self._state)
        with torch.inference_mode():
            if isinstance(self.strategy, BeamSearch):
                return self._beam_step(force)
            return self._single_step(force)

    def back(self) -> Step | None:
        """Undo the last step; returns its record (None if there was nothing to undo)."""
        if not self._history:
            return None
        undone = self._state.steps[-1]
        self._state = self._history.pop()
        if self.generator is not None:
            self.generator.set_state(self._state.rng_state)
        with torch.inference_mode():
            self._rebuild()
        return undone

    def run(self) -> list[Step]:
        """Step until the end; returns the new records."""
        return list(self)

    # ---- model calls --------------------------------------------------------------------------------------

    def _encoded_for(self, n: int) -> EncoderOutput:
        if n not in self._encoded_rows:
            self._encoded_rows[n] = self._encoded.repeat_interleave(n)
        return self._encoded_rows[n]

    def _feed(self, new_tokens: Tensor, cache: DecoderCache | None, all_tokens: Tensor) -> None:
        """Run the decoder on new tokens (N, n) after `cache` (None: from the start).

        Keeps the new cache (which then covers `all_tokens`), the next-token log-probs and the attention.
        """
        n_rows = new_tokens.size(0)
        encoded = self._encoded_for(n_rows)
        sw = self.switches
        if cache is None or not sw.causal_mask_on:  # without the mask, nothing computed before stays valid
            new_tokens, cache = all_tokens, self.model.init_cache(encoded)
        out = self.model.decode(
            new_tokens,
            encoded,
            cache=cache,
            # With the mask on, a prefix recomputed in one pass sees exactly what step-by-step decoding saw.
            switches=sw,
            return_attention=self.return_attention,
        )
        self._cache, self._cached_tokens = out.cache, all_tokens
        self._next_logprobs = out.logits[:, -1].float().log_softmax(dim=-1)  # (N, V) the model's own distribution
        if self.return_attention:  # the last query of every row, per layer: (N, H, K)
            self._next_attention = (
                [a[:, :, -1] for a in out.self_attention],
                [a[:, :, -1] for a in out.cross_attention],
            )

    def _rebuild(self) -> None:
        """Recompute the cache and next-token distribution for the restored state."""
        tokens, cached = self._state.tokens, self._cached_tokens
        keep = tokens.size(1) - 1
        if (
            cached.shape[0] == tokens.shape[0]
            and cached.size(1) >= keep
            and torch.equal(cached[:, :keep], tokens[:, :keep])
        ):
            # the cache already holds this prefix: cut it and redo the very computation of that step (exact)
            self._feed(tokens[:, keep:], self._cache.truncate(keep), tokens)
        else:
            self._feed(tokens, None, tokens)  # beams were reordered: recompute the prefix in one pass

    # ---- choosing tokens ----------------------------------------------------------------------------------

    def _processed_logprobs(self, step_index: int) -> Tensor:
        """(N, V) log-probabilities with the generation rules applied: banned tokens, `</s>` at the limit."""
        return self.rules.constrain(self._next_logprobs, step_index == self.max_new_tokens - 1)

    def _candidates(self, logprobs: Tensor, k: int) -> tuple[Candidate, ...]:
        probs, ids = logprobs.exp().topk(min(k, logprobs.numel()))
        return tuple(Candidate(int(i), float(p)) for i, p in zip(ids.tolist(), probs.tolist(), strict=True))

    def _rng_state(self) -> Tensor | None:
        return self.generator.get_state() if self.generator is not None else None

    def _step_attention(self, row: int) -> StepAttention | None:
        if not self.return_attention:
            return None
        self_rows, cross_rows = self._next_attention
        return StepAttention([a[row].cpu() for a in self_rows], [a[row].cpu() for a in cross_rows])

    def _single_step(self, force: int | None) -> Step:
        """Greedy or sampling: one hypothesis."""
        state = self._state
        index = state.tokens.size(1) - 1
        logprobs = self._processed_logprobs(index)[0]
        token = force if force is not None else int(self.strategy.choose(logprobs, self.generator))
        done = token == self.model.config.eos_id or index + 1 >= self.max_new_tokens
        record = Step(
            index=index,
            token_id=token,
            prob=float(self._next_logprobs[0, token].exp()),
            forced=force is not None,
            candidates=self._candidates(self._next_logprobs[0], self.top_k),
            finished=done,
            attention=self._step_attention(0),
        )
        new = torch.tensor([[token]], device=self.device)
        tokens = torch.cat([state.tokens, new], dim=1)  # (1, t+1)
        self._state = _State(
            tokens,
            state.logprobs + self._next_logprobs[0, token],
            done=done,
            rng_state=self._rng_state(),
            steps=state.steps + (record,),
        )
        if not done:
            self._feed(new, self._cache, tokens)
        return record

    def _beam_step(self, force: int | None) -> Step:
        """One step of beam search, following Hugging Face's `generate(num_beams=…)` exactly.

        Each running beam proposes every token; the 2·width best (beam, token) pairs by summed log-probability
        are ranked. Those ending in `</s>` among the first `width` become finished hypotheses (scored by
        logprob / length^length_penalty, the best `width` kept); the best `width` others keep running.
        Search stops when no running beam can beat the finished ones any more, or at the length limit.
        """
        beam: BeamSearch = self.strategy  # type: ignore[assignment]
        state = self._state
        eos = self.model.config.eos_id
        index = state.tokens.size(1) - 1  # tokens generated so far
        vocab = self._next_logprobs.size(1)
        logprobs = self._processed_logprobs(index)  # (N, V)
        if force is not None:  # every beam must continue with the forced token, scored by the model
            forced = torch.full_like(logprobs, -math.inf)
            forced[:, force] = self._next_logprobs[:, force]
            logprobs = forced
        totals = (state.logprobs[:, None] + logprobs).reshape(-1)  # (N·V,)
        k = min(2 * beam.width, totals.numel())
        top_scores, top_flat = totals.topk(k)  # best first
        parents, token_ids = top_flat // vocab, top_flat % vocab
        length = index + 1
        hits_end = (token_ids == eos) | (length >= self.max_new_tokens)

        # finished hypotheses: the candidates among the first `width` that end here
        finished = list(state.finished_beams)
        if state.improvable:
            for rank in range(min(beam.width, k)):
                if hits_end[rank] and top_scores[rank] > -math.inf:
                    tokens = tuple(state.tokens[parents[rank], 1:].tolist()) + (int(token_ids[rank]),)
                    logprob = float(top_scores[rank])
                    finished.append(Hypothesis(tokens, logprob, beam.score(logprob, length)))
            finished = sorted(finished, key=lambda h: -h.score)[: beam.width]

        # running beams: the best `width` candidates that did not end
        open_ranks = [r for r in range(k) if not hits_end[r] and top_scores[r] > -math.inf][: beam.width]
        keep = torch.tensor(open_ranks, dtype=torch.long, device=self.device)
        run_parents, run_tokens, run_scores = parents[keep], token_ids[keep], top_scores[keep]
        tokens = torch.cat([state.tokens[run_parents], run_tokens[:, None]], dim=1)  # (N', t+1)

        # can a running beam still beat the worst finished one? (HF's heuristic for early_stopping=False)
        improvable = state.improvable
        if len(finished) >= beam.width and len(open_ranks):
            best_possible = beam.score(float(run_scores[0]), length)
            improvable = improvable and best_possible > finished[-1].score
        done = not improvable or not open_ranks or length >= self.max_new_tokens

        best_rank = 0  # the record follows the best candidate overall
        parent = int(parents[best_rank])
        record = Step(
            index=index,
            token_id=int(token_ids[best_rank]),
            prob=float(self._next_logprobs[parent, token_ids[best_rank]].exp()),
            forced=force is not None,
            candidates=self._candidates(self._next_logprobs[parent], self.top_k),
            finished=done,
            attention=self._step_attention(parent),
            beams=tuple(
                Hypothesis(tuple(row[1:].tolist()), float(s), float(s))
                for row, s in zip(tokens, run_scores, strict=True)
            ),
            parents=tuple(run_parents.tolist()),
            finished_beams=tuple(finished),
        )
        self._state = _State(
            tokens, run_scores, tuple(finished), improvable, done, self._rng_state(), state.steps + (record,)
        )
        if not done:
            self._feed(run_tokens[:, None], self._cache.select(run_parents), tokens)
        return record


# --------------------------------------------------------------------------------------------------------
# Convenience
# --------------------------------------------------------------------------------------------------------


def generate(
    model: Transformer,
    src_ids: Sequence[int] | Tensor,
    strategy: Strategy = Greedy(),
    *,
    switches: ModelSwitches = AS_TRAINED,
    max_new_tokens: int | None = None,
    return_attention: bool = False,
) -> list[int]:
    """Decode to the end and return the output ids (without the start token, ending with `</s>`)."""
    decoding = Decoding(
        model, src_ids, strategy, switches=switches, max_new_tokens=max_new_tokens, return_attention=return_attention
    )
    decoding.run()
    return decoding.output_ids


def generate_batch(
    model: Transformer, sources: Sequence[Sequence[int]], *, max_new_tokens: int | Sequence[int] | None = None
) -> list[list[int]]:
    """Greedy decoding of several sources at once: the outputs of `generate(model, src)` for each, in one batch.

    The sources are padded into one batch (the padding mask hides the padding), every step decodes all unfinished
    sentences together, and a sentence leaves the batch as soon as it has produced `</s>`, taking its rows of the
    cache with it. `max_new_tokens` may be one limit for all or one per source. No attention is recorded.
    """
    cfg = model.config
    if not sources:
        return []
    device = next(model.parameters()).device
    longest = max(len(s) for s in sources)
    if min(len(s) for s in sources) == 0 or longest > cfg.max_positions:
        raise ValueError(f"every source needs between 1 and {cfg.max_positions} tokens")
    rules = GenerationRules.of(cfg)
    limits = [max_new_tokens] * len(sources) if max_new_tokens is None or isinstance(max_new_tokens, int) else None
    limits = [rules.limit(n) for n in (limits or max_new_tokens)]
    if len(limits) != len(sources):
        raise ValueError(f"{len(limits)} limits for {len(sources)} sources: give one limit, or one per source")
    src = torch.full((len(sources), longest), cfg.pad_id, dtype=torch.long, device=device)  # (B, S)
    for row, ids in enumerate(sources):
        src[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long, device=device)

    outputs: list[list[int]] = [[] for _ in sources]
    with torch.inference_mode():
        encoded = model.encode(src)
        cache = model.init_cache(encoded)
        alive = torch.arange(len(sources), device=device)  # which source each batch row belongs to
        remaining = torch.tensor(limits, device=device)  # tokens each row may still generate, </s> included
        last = torch.full((len(sources), 1), cfg.decoder_start_id, dtype=torch.long, device=device)  # (N, 1)
        while True:
            out = model.decode(last, encoded, cache=cache)
            chosen = Greedy().choose(rules.constrain(out.logits[:, -1], remaining == 1))  # (N,)
            for row, token in zip(alive.tolist(), chosen.tolist(), strict=True):
                outputs[row].append(token)
            running = (chosen != cfg.eos_id).nonzero().squeeze(1)  # rows that go on
            if running.numel() == 0:
                return outputs
            if running.numel() < alive.numel():  # finished sentences leave the batch
                alive, remaining, chosen = alive[running], remaining[running], chosen[running]
                encoded, cache = encoded.select(running), out.cache.select(running)
            else:
                cache = out.cache
            remaining = remaining - 1
            last = chosen[:, None]


def translate(
    checkpoint,
    text: str,
    strategy: Strategy = Greedy(),
    *,
    switches: ModelSwitches = AS_TRAINED,
    max_new_tokens: int | None = None,
) -> str:
    """Text in, text out, with a loaded `Checkpoint` (see `transformer.checkpoint`)."""
    src = checkpoint.tokenizer.encode_source(text)
    ids = generate(checkpoint.model, src, strategy, switches=switches, max_new_tokens=max_new_tokens)
    return checkpoint.tokenizer.decode_target(ids)
