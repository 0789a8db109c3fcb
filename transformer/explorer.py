"""The explorer's per-user state machine, in plain Python (no gradio): what the app shows is computed here.

An `ExplorerState` is everything a user has chosen — model, sentence, strategy, masks, silenced heads, the
choices made at each decoding step, the selected view — as one immutable value. It is what a shared link
carries, and the whole translation in progress is a pure function of it: the decoding is replayed from the
choices (None = let the strategy choose, a token id = forced), so a restored link shows exactly the same view.

An `Explorer` pairs a state with a live `Decoding`, so stepping does not replay from the start: step, back,
force, reset and run move both together; changing a setting that affects decoding replays the choices under
the new setting (the forced tokens stay forced, the strategy's own choices are made again).

Views come from one teacher-forced forward pass over the output so far: every layer's and head's encoder
self-attention, decoder self-attention and cross-attention (with the causal mask off, decoder positions see
the future of the given target), plus the next-token candidates.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import random
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .checkpoint import TWIN, Checkpoint, CheckpointError, download_marian, load_checkpoint, load_marian
from .decoding import BeamSearch, Candidate, Decoding, Greedy, ModelSwitches, Sampling, Step, Strategy
from .model import ATTENTION_FAMILIES, HeadRef, validate_heads

MAX_SOURCE_CHARS = 500
MAX_OUTPUT_TOKENS = 128
MAX_BEAM_WIDTH = 8
MAX_TOP_K = 1000
STRATEGIES = ("greedy", "sampling", "beam")


class ExplorerError(ValueError):
    """A user input that cannot be used; the message says why and is safe to show."""


# --------------------------------------------------------------------------------------------------------
# The state: every user choice, immutable, serialisable into a link
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExplorerState:
    model: str = "en-de"
    source: str = ""
    strategy: str = "greedy"
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    beam_width: int = 4
    max_output_tokens: int = 64
    causal_mask: bool = True
    padding_mask: bool = True
    positions: bool = True
    pad_to: int = 0  # pad the source to this many tokens, as a shorter sentence in a batch is (0 = no padding)
    silenced: frozenset[HeadRef] = frozenset()
    choices: tuple[int | None, ...] = ()  # one per step taken: None = the strategy chose, an id = forced
    family: str = "cross"  # the attention view selected
    layer: int = 0
    head: int | None = None  # None = the average over heads
    grid: bool = False  # show every head of the layer at once

    def __post_init__(self) -> None:
        def require(condition: bool, message: str) -> None:
            if not condition:
                raise ExplorerError(message)

        require(isinstance(self.source, str), "the source must be text")
        require(_is_unicode(self.source), "the text holds invalid characters (lone surrogates)")
        require(
            len(self.source) <= MAX_SOURCE_CHARS, f"the sentence is too long (at most {MAX_SOURCE_CHARS} characters)"
        )
        require(self.strategy in STRATEGIES, f"unknown strategy {self.strategy!r}; choose greedy, sampling or beam")
        require(0.01 <= self.temperature <= 10, "temperature must be between 0.01 and 10")
        require(isinstance(self.top_k, int) and 0 <= self.top_k <= MAX_TOP_K, f"top-k must be 0…{MAX_TOP_K}")
        require(0 < self.top_p <= 1, "top-p must be in (0, 1]")
        require(isinstance(self.seed, int) and 0 <= self.seed < 2**31, "the seed must be a non-negative integer")
        require(
            isinstance(self.beam_width, int) and 1 <= self.beam_width <= MAX_BEAM_WIDTH,
            f"beam width must be 1…{MAX_BEAM_WIDTH} (wider beams make every step slower)",
        )
        require(
            isinstance(self.max_output_tokens, int) and 1 <= self.max_output_tokens <= MAX_OUTPUT_TOKENS,
            f"the output length must be 1…{MAX_OUTPUT_TOKENS} tokens",
        )
        require(isinstance(self.pad_to, int) and 0 <= self.pad_to <= 256, "pad_to must be 0…256")
        require(len(self.choices) <= self.max_output_tokens, "more steps than the output length allows")
        require(all(c is None or (isinstance(c, int) and c >= 0) for c in self.choices), "invalid forced token")
        require(self.family in ATTENTION_FAMILIES, f"unknown attention family {self.family!r}")
        require(isinstance(self.layer, int) and self.layer >= 0, "the layer must be a non-negative integer")
        require(self.head is None or (isinstance(self.head, int) and self.head >= 0), "invalid head")

    def replace(self, **changes) -> ExplorerState:
        return dataclasses.replace(self, **changes)

    def strategy_object(self, length_penalty: float = 1.0) -> Strategy:
        """The decoding strategy; beam search ranks finished beams with the model's length penalty."""
        if self.strategy == "sampling":
            return Sampling(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, seed=self.seed)
        if self.strategy == "beam":
            return BeamSearch(width=self.beam_width, length_penalty=length_penalty)
        return Greedy()

    def switches(self) -> ModelSwitches:
        return ModelSwitches(
            causal_mask_on=self.causal_mask,
            padding_mask_on=self.padding_mask,
            use_positions=self.positions,
            silenced=self.silenced,
        )

    # ---- links ------------------------------------------------------------------------------------------

    def to_link(self) -> str:
        """A compact URL-safe token holding the whole state."""
        values = dataclasses.asdict(self)
        values["silenced"] = sorted(list(h) for h in self.silenced)
        values["choices"] = list(self.choices)
        raw = json.dumps(values, separators=(",", ":"), ensure_ascii=False).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def from_link(cls, token: str) -> ExplorerState:
        """Parse `to_link`'s token; anything malformed is an ExplorerError, never an exception from deep inside."""
        if not isinstance(token, str) or len(token) > 20_000:
            raise ExplorerError("the link is not valid")
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            values = json.loads(raw.decode())
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise ExplorerError("the link is damaged and cannot be read") from None
        if not isinstance(values, dict):
            raise ExplorerError("the link is not valid")
        known = {f.name for f in dataclasses.fields(cls)}
        if set(values) - known:
            raise ExplorerError("the link holds unknown settings")
        try:
            if "silenced" in values:
                values["silenced"] = frozenset(tuple(h) for h in values["silenced"])
            if "choices" in values:
                values["choices"] = tuple(values["choices"])
            return cls(**values)
        except ExplorerError:
            raise
        except (TypeError, ValueError):
            raise ExplorerError("the link holds invalid settings") from None


# --------------------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------------------


def _is_unicode(text: str) -> bool:
    """False for text that is not valid Unicode (lone surrogates, which can arrive through the API)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# What a user may name besides a built-in model: a Hub repo id, "owner/name". Never a path on the server.
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")


def load_hub_model(repo_id: str, device: str | torch.device = "cpu") -> Checkpoint:
    """An opus-mt (Marian) model from the Hugging Face Hub, downloaded once into the standard cache."""
    checkpoint = load_marian(download_marian(repo_id), device)
    checkpoint.name = repo_id
    return checkpoint


BUILTIN_FILES = ("config.json", TWIN)  # a built-in model is a checkpoint folder or an untrained twin's


class ModelRegistry:
    """Built-in checkpoints (folders under `checkpoints/`) and Hub models, loaded once, shared read-only.

    Names come from users: a built-in name, or a Hub repo id ("Helsinki-NLP/opus-mt-en-de"). Anything else, a
    path on the server included, is refused before any file is touched.
    """

    def __init__(self, folder: str | Path, loader: Callable[..., Checkpoint] = load_hub_model, device: str = "cpu"):
        self.folder = Path(folder)
        self.device = device
        self.builtin = sorted(p.name for p in self.folder.iterdir() if any((p / f).is_file() for f in BUILTIN_FILES))
        self.loader = loader
        self._loaded: dict[str, Checkpoint] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, name: str) -> Checkpoint:
        """The model called `name` (a built-in, or a Hub repo id such as Helsinki-NLP/opus-mt-en-de)."""
        builtin = name in self.builtin
        if not builtin and not (HUB_ID.fullmatch(name) and ".." not in name):
            raise ExplorerError(
                f"unknown model {name[:100]!r}: choose a built-in model ({', '.join(self.builtin)}) "
                "or give a Hugging Face Hub id such as Helsinki-NLP/opus-mt-en-de"
            )
        with self._guard:
            if name in self._loaded:
                return self._loaded[name]
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:  # one load per model, even when several users ask for it at once
            if name not in self._loaded:
                try:
                    checkpoint = (
                        load_checkpoint(self.folder / name, self.device) if builtin else self.loader(name, self.device)
                    )
                except CheckpointError as error:
                    raise ExplorerError(str(error)) from None
                checkpoint.model.requires_grad_(False)
                self._loaded[name] = checkpoint
            return self._loaded[name]


# --------------------------------------------------------------------------------------------------------
# The explorer
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Views:
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
    steps: tuple[Step, ...] = field(default=())


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
        self.lock = threading.Lock()  # for callers that share an explorer between threads (the app: one per user)
        self._rebuild()

    # ---- actions ----------------------------------------------------------------------------------------

    def update(self, **changes) -> None:
        """Change settings; the decoding is replayed under the new ones when they affect it."""
        view_only = {"family", "layer", "head", "grid"}
        new = self.state.replace(**changes)
        if ("source" in changes or "model" in changes) and not set(changes) <= view_only:
            new = new.replace(choices=())
        old_state, old_decoding = self.state, self._decoding
        self.state = new
        try:
            if set(changes) <= view_only:
                self._check_view()
            else:
                self._rebuild()
        except Exception:
            self.state, self._decoding = old_state, old_decoding  # a failed change leaves everything as it was
            raise

    def step(self, force: int | None = None) -> Step:
        if self.finished:
            raise ExplorerError("the translation is finished: step back or reset")
        if len(self.state.choices) >= self.state.max_output_tokens:
            raise ExplorerError(f"the output length limit ({self.state.max_output_tokens} tokens) is reached")
        if force is not None and not (0 <= force < self.checkpoint.model.config.tgt_vocab_size):
            raise ExplorerError(f"token id {force} is not in the target vocabulary")
        record = self.decoding.step(force)
        self.state = self.state.replace(choices=(*self.state.choices, force))
        return record

    def force_text(self, piece: str) -> Step:
        """Force a token given as text (a sentencepiece piece, with or without its leading ▁)."""
        tokenizer = self.checkpoint.tokenizer
        for candidate in (piece, "▁" + piece.lstrip("▁"), piece.lstrip("▁")):
            token = tokenizer.target.piece_to_id(candidate, -1)
            if token >= 0:
                return self.step(force=token)
        raise ExplorerError(f"{piece!r} is not a token of this model's target vocabulary")

    def back(self) -> None:
        if self.decoding.back() is not None:
            self.state = self.state.replace(choices=self.state.choices[:-1])

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
    def decoding(self) -> Decoding:
        assert self._decoding is not None
        return self._decoding

    @property
    def finished(self) -> bool:
        return self.decoding.finished

    def source_ids(self) -> list[int]:
        checkpoint = self.checkpoint
        text = self.state.source.strip()
        if not text:
            raise ExplorerError("type a sentence to translate")
        ids = checkpoint.tokenizer.encode_source(text)
        limit = checkpoint.model.config.max_positions
        if len(ids) > limit:
            raise ExplorerError(f"the sentence has {len(ids)} tokens; this model reads at most {limit}")
        pad = checkpoint.model.config.pad_id
        return ids + [pad] * max(0, min(self.state.pad_to, limit) - len(ids))

    def views(self) -> Views:
        """The output so far, the next-token candidates and every attention map, from one forward pass."""
        checkpoint, state = self.checkpoint, self.state
        tokenizer, config = checkpoint.tokenizer, checkpoint.model.config
        src = self.source_ids()
        output = self.decoding.output_ids
        target_in = [config.decoder_start_id, *output]
        if self.finished and output and output[-1] == config.eos_id:
            target_in = target_in[:-1]  # nothing is predicted after </s>: its row would show nothing new
        with torch.inference_mode():
            out = checkpoint.model(
                torch.tensor([src], device=self._device),
                torch.tensor([target_in], device=self._device),
                return_attention=True,
                causal_mask_on=state.causal_mask,
                padding_mask_on=state.padding_mask,
                silenced=state.silenced,
                use_positions=state.positions,
            )
        attention = out.attention
        candidates = self.decoding.upcoming()
        return Views(
            source_tokens=[tokenizer.source_piece(i) for i in src],
            target_tokens=[tokenizer.target_piece(i) for i in target_in],
            output_text=tokenizer.decode_target(output),
            finished=self.finished,
            candidates=candidates,
            candidate_tokens=[tokenizer.target_piece(c.token_id) for c in candidates],
            encoder=torch.stack([a[0] for a in attention.encoder]).float().cpu(),
            decoder_self=torch.stack([a[0] for a in attention.decoder_self]).float().cpu(),
            cross=torch.stack([a[0] for a in attention.cross]).float().cpu(),
            predictions=[tokenizer.target_piece(int(i)) for i in out.logits[0].argmax(dim=-1)],
            steps=self.decoding.steps,
        )

    def translate_to_end(self, **changes) -> tuple[str, tuple[Candidate, ...]]:
        """The full translation and the next-token candidates under other settings, without touching this
        explorer (e.g. with no heads silenced, to compare before/after)."""
        other = Explorer(self.registry, self.state.replace(**changes))
        upcoming = other.decoding.upcoming()
        for _ in other.run():
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
            raise ExplorerError(f"layer {self.state.layer} does not exist ({self.state.family}: {n_layers} layers)")
        if self.state.head is not None and self.state.head >= config.n_heads:
            raise ExplorerError(f"head {self.state.head} does not exist (the model has {config.n_heads} heads)")

    def _rebuild(self) -> None:
        """A fresh decoding for the current settings, replaying the choices made so far."""
        state = self.state
        config = self.checkpoint.model.config
        try:
            validate_heads(config, state.silenced)
        except ValueError as error:
            raise ExplorerError(str(error)) from None
        self._check_view()
        limit = min(state.max_output_tokens, config.max_positions - 1)
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
