"""One user's translation in progress: the `Explorer`, a state paired with a live decoding.

An `Explorer` pairs an `ExplorerState` with a live `Decoding`, so stepping does not replay from the start: step,
back, force, reset and run move both together; changing a setting that affects decoding replays the choices
under the new setting (the forced tokens stay forced, the strategy's own choices are made again).

A `StepSnapshot` comes from one teacher-forced forward pass over the output so far: every layer's and head's
encoder self-attention, decoder self-attention and cross-attention (with the causal mask off, decoder positions see
the future of the given target), plus the next-token candidates.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field

import torch

from transformer.checkpoint import Checkpoint
from transformer.decoding import Candidate, Decoding, Step
from transformer.model import TransformerConfig, validate_heads
from transformer.worked import WorkedStep, work_through

from .cache import SHARED, identity
from .i18n import _
from .registry import ModelRegistry
from .state import MAX_SOURCE_CHARS, VIEW_ONLY, ExplorerError, ExplorerState


@dataclass(frozen=True)
class StepSnapshot:
    """What the page shows after every action."""

    source_tokens: list[str]  # the encoder's input pieces (with padding, if any)
    target_tokens: list[str]  # the decoder's input pieces: the start token, then the output so far
    output_text: str
    finished: bool
    candidates: tuple[Candidate, ...]  # for the next token (empty when finished)
    candidate_tokens: list[str]
    encoder: torch.Tensor  # (L, H, S, S)
    decoder_self: torch.Tensor  # (L, H, T, T)
    cross: torch.Tensor  # (L, H, T, S)
    predictions: list[str] = field(default_factory=list)  # the teacher-forced argmax at every target position
    source_padding: list[bool] = field(default_factory=list)  # which source positions are padding
    steps: tuple[Step, ...] = field(default=())
    end_token: str = "</s>"  # the piece that ends a translation
    key: Hashable = None  # what the attention maps were computed from (`cache.SHARED`'s key of the forward pass)


@dataclass(frozen=True)
class Forward:
    """What the views read from one teacher-forced forward pass; shared by every user who asks for the same one,
    so never changed."""

    encoder: torch.Tensor  # (L, H, S, S)
    decoder_self: torch.Tensor  # (L, H, T, T)
    cross: torch.Tensor  # (L, H, T, S)
    predictions: tuple[str, ...]


def unknown_pieces(tokenizer, text: str) -> list[str]:
    """The pieces of `text` that are not in the tokenizer's source vocabulary: the model reads each as `<unk>`."""
    return [piece for piece in tokenizer.source_pieces(text.strip()) if tokenizer.source.piece_to_id(piece, -1) < 0]


def shuffle_words(text: str, seed: int = 0) -> str:
    """The same words in a random (seeded) order: what is a Transformer without word order?"""
    words = text.split()
    random.Random(seed).shuffle(words)
    return " ".join(words)


class Explorer:
    """One user's translation in progress. Not thread-safe: one per user session (gr.State)."""

    def __init__(self, registry: ModelRegistry, state: ExplorerState):
        self.registry = registry
        self.state = state
        self._decoding: Decoding | None = None
        self._snapshot: tuple[ExplorerState, StepSnapshot] | None = None  # the last snapshot, after the state it shows
        # The comparisons the user asked for (by the page's name, such as "twins"): from then on they follow every
        # step, rather than stay drawn for a step that is gone. Not part of the state: a link opens none of them.
        self.following: set[str] = set()
        # For callers that share an explorer between threads (the app: one per user). Re-entrant: on ZeroGPU the page
        # holds it around a handler that takes it again (`ui.runtime.uses_gpu`).
        self.lock = threading.RLock()
        self._rebuild()

    @classmethod
    def showing(cls, registry: ModelRegistry, state: ExplorerState) -> Explorer:
        """An explorer that shows `state` without replaying its decoding until it is needed: a class's follower,
        whose page shows what the teacher's page has just computed. Its views come from the shared cache
        (`snapshot`); a Step, or a view that reads the decoding itself, replays it then (`decoding`)."""
        explorer = cls.__new__(cls)
        explorer.registry, explorer.state = registry, state
        explorer._decoding, explorer._snapshot = None, None
        explorer.following, explorer.lock = set(), threading.RLock()
        try:
            validate_heads(explorer.checkpoint.model.config, state.silenced)
        except ValueError as error:
            raise ExplorerError(str(error)) from None
        explorer._check_view()
        return explorer

    # ---- across processes (a ZeroGPU worker) ----------------------------------------------------------------

    def __getstate__(self) -> dict:
        """What a pickled copy holds: the registry (by reference, `ModelRegistry.__reduce__`), the state, the last
        snapshot (CPU tensors) and the comparisons followed. Not the live decoding, whose key/value cache lives where
        the model does: the copy replays it from the state when it first needs it (`decoding`). Not the lock."""
        return {
            "registry": self.registry,
            "state": self.state,
            "_snapshot": self._snapshot,
            "following": self.following,
        }

    def __setstate__(self, saved: dict) -> None:
        self.__dict__.update(saved)
        self._decoding = None
        self.lock = threading.RLock()

    def adopt(self, other: Explorer) -> None:
        """Become `other`, a copy of this explorer that an action changed elsewhere (a ZeroGPU worker), keeping this
        one's lock: the page goes on holding this explorer. Its decoding is replayed when next needed."""
        self.__dict__.update({key: value for key, value in other.__dict__.items() if key != "lock"})

    # ---- actions ----------------------------------------------------------------------------------------

    def update(self, **changes) -> None:
        """Change settings; the decoding is replayed under the new ones when they affect it."""
        view_only = set(changes) <= VIEW_ONLY
        new = self.state.replace(**changes)
        if ("source" in changes or "model" in changes) and not view_only:
            new = new.replace(choices=())
        old_state, old_decoding = self.state, self._decoding
        self.state = new
        try:
            if view_only:
                self._check_view()
            else:
                self._rebuild()
        except Exception:
            self.state, self._decoding = old_state, old_decoding  # a failed change leaves everything as it was
            raise

    def step(self, force: int | None = None) -> Step:
        if self.finished:
            raise ExplorerError(_("the translation is finished: step back or reset"))
        if len(self.state.choices) >= self.state.max_output_tokens:
            raise ExplorerError(
                _("the output length limit ({limit} tokens) is reached").format(limit=self.state.max_output_tokens)
            )
        if force is not None and not (0 <= force < self.checkpoint.model.config.tgt_vocab_size):
            raise ExplorerError(_("token id {token} is not in the target vocabulary").format(token=force))
        record = self.decoding.step(force)
        self.state = self.state.replace(choices=(*self.state.choices, force))
        return record

    def force_text(self, text: str) -> str:
        """Force what the user typed: one piece of the target vocabulary (with or without its leading ▁), or else
        a word or phrase, split into the model's pieces and forced one after another. Returns what was forced."""
        tokenizer = self.checkpoint.tokenizer
        text = text.strip()
        if not text:
            raise ExplorerError(_("type a token or a word to force"))
        for candidate in (text, "▁" + text.lstrip("▁"), text.lstrip("▁")):
            token = tokenizer.target.piece_to_id(candidate, -1)
            if token >= 0:
                self.step(force=token)
                return ""
        pieces = tokenizer.target.processor.encode(text, out_type=str)
        ids = [tokenizer.target.piece_to_id(piece, -1) for piece in pieces]
        unknown = [piece for piece, token in zip(pieces, ids, strict=True) if token < 0]
        if unknown:
            raise ExplorerError(
                _(
                    "{text} is not a token of this model's target vocabulary, and it cannot be split into tokens "
                    "either: {pieces} is not one"
                ).format(text=repr(text), pieces=", ".join(map(repr, unknown)))
            )
        left = self.state.max_output_tokens - len(self.state.choices)
        if len(pieces) > left:
            raise ExplorerError(
                _("{text} takes {n} tokens; the output length limit leaves {left}").format(
                    text=repr(text), n=len(pieces), left=left
                )
            )
        for token in ids:
            if self.finished:
                break
            self.step(force=token)
        return _("“{text}” is {n} tokens of this model, forced one after another: {pieces}").format(
            text=text, n=len(pieces), pieces=" · ".join(pieces)
        )

    def back(self) -> str | None:
        """Undo the last step. When what it takes off shows nothing in the output (the end token, or a piece such as
        a bare word start "▁"), the answer says what it was: Back never seems to do nothing."""
        before = list(self.decoding.output_ids)
        if self.decoding.back() is None:
            return None
        self.state = self.state.replace(choices=self.state.choices[:-1])
        tokenizer, removed = self.checkpoint.tokenizer, before[-1]
        if removed == self.checkpoint.model.config.eos_id:
            return _("Back took off the end token {piece}: the translation is not finished any more.").format(
                piece=tokenizer.target_piece(removed)
            )
        if tokenizer.decode_target(before).rstrip() == tokenizer.decode_target(before[:-1]).rstrip():
            return _("Back took off “{piece}”, a piece that shows nothing in the output by itself.").format(
                piece=tokenizer.target_piece(removed)
            )
        return None

    def reset(self) -> None:
        self.state = self.state.replace(choices=())
        self._rebuild()

    def run(self) -> Iterator[Step]:
        """Step to the end, yielding each step (for streaming)."""
        while not self.at_end:
            yield self.step()

    @property
    def at_end(self) -> bool:
        """Finished, or at the output length limit: Run has nothing left to do."""
        return self.finished or len(self.state.choices) >= self.state.max_output_tokens

    # ---- what to show -----------------------------------------------------------------------------------

    @property
    def checkpoint(self) -> Checkpoint:
        return self.registry.get(self.state.model)

    @property
    def config(self) -> TransformerConfig:
        """The model's configuration: its layers, heads, sizes and positions."""
        return self.checkpoint.model.config

    @property
    def device(self) -> str:
        """Where the model runs: "cpu", "cuda:0", …"""
        return str(next(self.checkpoint.model.parameters()).device)

    @property
    def output_text(self) -> str:
        """The output so far, as text."""
        return self.checkpoint.tokenizer.decode_target(self.decoding.output_ids)

    def piece(self, token: int) -> str:
        """A token of the target vocabulary, as its piece ("▁Haus")."""
        return self.checkpoint.tokenizer.target_piece(token)

    @property
    def output_pieces(self) -> list[str]:
        """The output so far, piece by piece."""
        return [self.piece(i) for i in self.decoding.output_ids]

    @property
    def source_pieces(self) -> list[str]:
        """The sentence as the encoder reads it, piece by piece, `</s>` included."""
        return [self.checkpoint.tokenizer.source_piece(i) for i in self.source_ids()]

    def worked_step(self) -> WorkedStep:
        """The current step worked through stage by stage (Inside a step, the walkthrough), with the state's masks,
        silenced heads and positions; shared by every user at the same step of the same sentence alike
        (`cache.SHARED`: a `WorkedStep` is only read)."""
        state, model = self.state, self.checkpoint.model
        target = [model.config.decoder_start_id, *self.decoding.output_ids]
        if self.finished:
            target = target[:-1]  # the step that wrote </s> is the last one there is
        chosen = self.decoding.output_ids[-1] if self.finished else None
        source = self.source_ids()
        switches = state.switches()
        key = ("worked", identity(model), tuple(source), tuple(target), chosen, switches)
        return SHARED.get(key, lambda: work_through(model, source, target, switches=switches, chosen=chosen))

    @property
    def decoding(self) -> Decoding:
        if self._decoding is None:  # a copy (`__setstate__`): the decoding is replayed from the state
            self._rebuild()
        assert self._decoding is not None
        return self._decoding

    @property
    def finished(self) -> bool:
        if self._decoding is None:  # a follower (`showing`): the snapshot says, from the shared cache if it can
            return self.snapshot().finished
        return self.decoding.finished

    @property
    def output_limit(self) -> int:
        """The most tokens this output may have: the state's limit, within the model's positions."""
        return min(self.state.max_output_tokens, self.config.max_positions - 1)

    def unknown_pieces(self) -> list[str]:
        """The pieces of the sentence the model cannot read (`<unk>` to it), each once, in order."""
        return list(dict.fromkeys(unknown_pieces(self.checkpoint.tokenizer, self.state.source)))

    def source_ids(self) -> list[int]:
        checkpoint = self.checkpoint
        text = self.state.source.strip()
        if not text:
            raise ExplorerError(_("type a sentence to translate"))
        ids = checkpoint.tokenizer.encode_source(text)
        limit = checkpoint.model.config.max_positions
        if len(ids) > limit:
            raise ExplorerError(
                _("the sentence has {n} tokens; this model reads at most {limit}").format(n=len(ids), limit=limit)
            )
        pad = checkpoint.model.config.pad_id
        return ids + [pad] * max(0, min(self.state.pad_to, limit) - len(ids))

    def snapshot(self) -> StepSnapshot:
        """The output so far, the next-token candidates and every attention map, from one forward pass. Asked
        again for the same state (by several panels of one answer, or after a change of view only), it is the
        same `StepSnapshot`; the forward pass itself is shared by every user who reads the same tokens alike
        (`cache.SHARED`)."""
        shown = self.state.computed()  # what the views depend on: not the layer or tab chosen
        if self._snapshot is not None and self._snapshot[0] == shown:
            return self._snapshot[1]
        # The whole snapshot is shared too: a class's followers show what the teacher's page computed.
        snapshot = SHARED.get(("snapshot", identity(self.checkpoint.model), shown), lambda: self._snapshot_of(shown))
        self._snapshot = (shown, snapshot)
        return snapshot

    def _snapshot_of(self, shown: ExplorerState) -> StepSnapshot:
        """`snapshot`, computed: the forward pass (itself shared), the candidates and the steps from the decoding."""
        checkpoint, state = self.checkpoint, self.state
        tokenizer, config = checkpoint.tokenizer, checkpoint.model.config
        src = self.source_ids()
        output = self.decoding.output_ids
        target_in = [config.decoder_start_id, *output]
        if self.decoding.finished and output and output[-1] == config.eos_id:
            target_in = target_in[:-1]  # nothing is predicted after </s>: its row would show nothing new
        key = ("forward", identity(checkpoint.model), tuple(src), tuple(target_in), state.switches())
        forward = SHARED.get(key, lambda: self._forward(src, target_in))
        candidates = self.decoding.upcoming()
        snapshot = StepSnapshot(
            source_tokens=[tokenizer.source_piece(i) for i in src],
            target_tokens=[tokenizer.target_piece(i) for i in target_in],
            output_text=tokenizer.decode_target(output),
            finished=self.decoding.finished,
            candidates=candidates,
            candidate_tokens=[tokenizer.target_piece(c.token_id) for c in candidates],
            encoder=forward.encoder,
            decoder_self=forward.decoder_self,
            cross=forward.cross,
            predictions=list(forward.predictions),
            source_padding=[i == config.pad_id for i in src],
            steps=self.decoding.steps,
            end_token=tokenizer.target_piece(config.eos_id),
            key=key,
        )
        return snapshot

    def _forward(self, src: list[int], target_in: list[int]) -> Forward:
        """The teacher-forced pass over the output so far that the views show, with every attention map."""
        checkpoint, state = self.checkpoint, self.state
        with torch.inference_mode():
            out = checkpoint.model(
                torch.tensor([src], device=self._device),
                torch.tensor([target_in], device=self._device),
                switches=state.switches(),
                return_attention=True,
            )
        attention = out.attention
        return Forward(
            encoder=torch.stack([a[0] for a in attention.encoder]).float().cpu(),
            decoder_self=torch.stack([a[0] for a in attention.decoder_self]).float().cpu(),
            cross=torch.stack([a[0] for a in attention.cross]).float().cpu(),
            predictions=tuple(checkpoint.tokenizer.target_piece(i) for i in out.logits[0].argmax(dim=-1).tolist()),
        )

    def translate_to_end(self, **changes) -> tuple[str, tuple[Candidate, ...]]:
        """The full translation and the next-token candidates under other settings, without touching this
        explorer (e.g. with no heads silenced, to compare before/after)."""
        other = Explorer(self.registry, self.state.replace(**changes))
        upcoming = other.decoding.upcoming()
        for _step in other.run():
            pass
        return self.checkpoint.tokenizer.decode_target(other.decoding.output_ids), upcoming

    # ---- internals ----------------------------------------------------------------------------------------

    @property
    def _device(self) -> torch.device:
        return next(self.checkpoint.model.parameters()).device

    def _check_view(self) -> None:
        config = self.checkpoint.model.config
        n_layers = config.n_layers(self.state.family)
        if self.state.layer >= n_layers:
            raise ExplorerError(
                _("layer {layer} does not exist ({family}: {n} layers)").format(
                    layer=self.state.layer, family=self.state.family, n=n_layers
                )
            )
        if self.state.head is not None and self.state.head >= config.n_heads:
            raise ExplorerError(
                _("head {head} does not exist (the model has {n} heads)").format(head=self.state.head, n=config.n_heads)
            )

    def _rebuild(self) -> None:
        """A fresh decoding for the current settings, replaying the choices made so far."""
        state = self.state
        config = self.checkpoint.model.config
        try:
            validate_heads(config, state.silenced)
        except ValueError as error:
            raise ExplorerError(str(error)) from None
        self._check_view()
        limit = self.output_limit
        decoding = Decoding(
            self.checkpoint.model,
            self.source_ids(),
            state.strategy_object(float(self.checkpoint.generation.get("length_penalty", 1.0))),
            switches=state.switches(),
            max_new_tokens=limit,
        )
        self._decoding = decoding
        choices = state.choices
        self.state = state.replace(choices=())
        for choice in choices:
            if self.finished:
                break
            self.step(choice)


# ---- settings from the page or the API ------------------------------------------------------------------------


def with_settings(registry: ModelRegistry, explorer: Explorer | None, fields: dict) -> tuple[Explorer, str]:
    """The user's explorer with the state's `fields` the page or the API chose (a new one when there was none, or for
    a new model), and a note for the user when the sentence had to change: too long, it is cut (`within_limit`); a
    new model that cannot read the sentence (its pieces would be `<unk>`) starts from its own first example instead."""
    wanted = dict(fields)
    wanted["source"], note = within_limit(registry, wanted["model"], wanted["source"])
    if explorer is None or wanted["model"] != explorer.state.model:
        if explorer is not None:
            wanted.update(silenced=frozenset(), layer=0, head=None, tab=explorer.state.tab)
            wanted["source"], switched = suited_source(registry, wanted["model"], wanted["source"])
            note = switched or note
        return Explorer(registry, ExplorerState(**wanted)), note
    changes = {key: value for key, value in wanted.items() if getattr(explorer.state, key) != value}
    if changes:
        explorer.update(**changes)
    return explorer, ""


def within_limit(registry: ModelRegistry, model: str, source: str) -> tuple[str, str]:
    """`source`, or as much of it as the model and the explorer read, cut after a whole word, with a note saying so:
    at most `MAX_SOURCE_CHARS` characters, and at most as many pieces as the model has positions."""
    checkpoint = registry.get(model)
    positions = checkpoint.model.config.max_positions

    def fits(text: str) -> bool:
        return len(text) <= MAX_SOURCE_CHARS and len(checkpoint.tokenizer.encode_source(text.strip())) <= positions

    if fits(source):
        return source, ""
    ends = [0, *(word.end() for word in re.finditer(r"\S+", source[: MAX_SOURCE_CHARS + 1]))]  # after each word
    low, high = 0, len(ends) - 1  # the most words that fit: `low` fits, `high + 1` does not
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(source[: ends[middle]]) else (low, middle - 1)
    cut = source[: ends[low]].strip()
    if len(source) > MAX_SOURCE_CHARS:
        note = _(
            "The text is too long ({length:,} characters): the explorer reads at most {most} characters, and {model} "
            "at most {positions} pieces. It was cut after “…{end}”; shorten it to choose where it ends."
        )
    else:  # short, but more pieces than the model has positions (a toy model reads ten)
        note = _(
            "{model} reads at most {positions} pieces, and this text is {pieces}: it was cut after “…{end}”, and the "
            "rest is not read. Shorten it to choose where it ends."
        )
    pieces = len(checkpoint.tokenizer.encode_source(source.strip()))
    return cut, note.format(
        length=len(source),
        most=MAX_SOURCE_CHARS,
        model=model,
        positions=positions,
        pieces=pieces,
        end=cut[-40:].lstrip(),
    )


def suited_source(registry: ModelRegistry, model: str, source: str) -> tuple[str, str]:
    """`source`, or the model's first example when the model cannot read it, with a note saying so."""
    unknown = unknown_pieces(registry.get(model).tokenizer, source)
    if not unknown:
        return source, ""
    example = registry.examples(model)[0][0]
    note = _(
        "{model} cannot read that sentence ({count} of its pieces are unknown to it, e.g. {piece!r}), so it starts "
        "from one of its own examples: {example!r}."
    ).format(model=model, count=len(unknown), piece=unknown[0], example=example)
    return example, note
