"""Train a tiny Transformer on a toy task one step at a time, and watch it learn: the engine of the page's Train tab.

A run (`LiveRun`) is set by a `LiveSetup`: the task (`toy_tasks`), the model's shape and the paper's recipe (§5):
Adam with β = (0.9, 0.98), the learning rate

    lrate = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)

(the factor is 1 in the paper) and label smoothing. Everything a run does follows from its setup: the weights
start from the seed, and the batch of step k is drawn from (seed, k) alone. So the same setup gives the same run,
and a run paused after any step and resumed from its `state_dict` continues exactly as if it had never stopped.

While it trains, a run can be asked
- for its numbers (`train_step`: the loss and how many training sequences the model gets right, teacher-forced;
  `evaluate`: the same on held-out sequences, decoded greedily, as a user would);
- for the attention of one fixed held-out example, the probe, with the model's own translation of it (`probe`);
- for a `Snapshot`: its weights, numbers and probe at this step. `SNAPSHOT_STEPS` are spaced logarithmically (the
  start of training changes fastest), and `thinned` keeps any number of them within a bound, still so spaced.
"""

from __future__ import annotations

import dataclasses
import io
import json
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..checkpoint import Checkpoint
from ..model import Transformer, TransformerConfig
from .batches import Example, collate
from .recipe import Probe, Recipe, learning_rate, look, measured, token_loss
from .settings import BOS, EOS, PAD
from .toy_tasks import TOY_TASKS, ToyTask, draw, get_toy_task

POSITIONAL_ENCODINGS = ("sinusoidal_interleaved", "sinusoidal_concat", "learned")
NORM_POSITIONS = ("post", "pre")
HELD_OUT = 200  # held-out sequences decoded at each evaluation
CLIP_NORM = 1.0  # gradients clipped to this norm, as the library's training loop does
SNAPSHOT_LIMIT = 32  # snapshots kept in memory at most (`thinned`)


@dataclass(frozen=True)
class LiveSetup:
    """Everything that defines a run: the task, the model's shape, the recipe and the seed. Its limits keep a run
    trainable on a CPU in minutes; a setting out of them is a ValueError that says which and why."""

    task: str = "reverse"
    layers: int = 2  # encoder layers, and as many decoder layers
    heads: int = 4
    d_model: int = 64
    positional_encoding: str = "sinusoidal_interleaved"
    norm_position: str = "pre"  # before each sub-layer: steadier than the paper's "post" at a high learning rate
    warmup: int = 200  # steps of linear warm-up of the learning rate
    lr_factor: float = 0.5  # multiplies the schedule (the "factor" of the Annotated Transformer's NoamOpt)
    label_smoothing: float = 0.1
    batch_size: int = 64  # sequences a step
    seed: int = 0

    def __post_init__(self) -> None:
        def require(condition: bool, message: str) -> None:
            if not condition:
                raise ValueError(message)

        def integer(name: str, low: int, high: int) -> None:
            value = getattr(self, name)
            require(type(value) is int and low <= value <= high, f"{name} must be an integer {low}…{high}")

        require(self.task in TOY_TASKS, f"unknown task {self.task!r}; choose one of {', '.join(TOY_TASKS)}")
        integer("layers", 1, 3)
        integer("heads", 1, 4)
        integer("d_model", 32, 128)
        require(
            self.d_model % (2 * self.heads) == 0,
            f"d_model ({self.d_model}) must be divisible by twice the number of heads ({self.heads}): each head "
            "gets an even share",
        )
        require(
            self.positional_encoding in POSITIONAL_ENCODINGS,
            f"unknown positional encoding {self.positional_encoding!r}; "
            f"choose one of {', '.join(POSITIONAL_ENCODINGS)}",
        )
        require(self.norm_position in NORM_POSITIONS, "the layer norm goes before (pre) or after (post) a sub-layer")
        integer("warmup", 1, 10_000)
        require(
            isinstance(self.lr_factor, int | float) and 0.01 <= self.lr_factor <= 10,
            "the learning-rate factor must be between 0.01 and 10",
        )
        require(
            isinstance(self.label_smoothing, int | float) and 0 <= self.label_smoothing <= 0.5,
            "label smoothing must be between 0 and 0.5",
        )
        integer("batch_size", 8, 256)
        integer("seed", 0, 2**31 - 1)

    @property
    def toy_task(self) -> ToyTask:
        return get_toy_task(self.task)

    def config(self) -> TransformerConfig:
        """The model: the paper's (§3) at this size, with one vocabulary (the task's pieces) for both sides, no
        dropout (a toy task has no noise to resist), and as many positions as the task's longest pair needs."""
        task = self.toy_task
        return TransformerConfig(
            src_vocab_size=task.vocab_size,
            tgt_vocab_size=task.vocab_size,
            d_model=self.d_model,
            n_heads=self.heads,
            n_encoder_layers=self.layers,
            n_decoder_layers=self.layers,
            d_ff=4 * self.d_model,
            norm_position=self.norm_position,
            positional_encoding=self.positional_encoding,
            max_positions=task.positions,
            share_embeddings=True,
            dropout=0.0,
            pad_id=PAD,
            eos_id=EOS,
            decoder_start_id=BOS,
        )

    def learning_rate(self, step: int) -> float:
        """The learning rate of step `step` (1, 2, …): the paper's schedule for this d_model and warm-up."""
        return learning_rate(step, self.d_model, self.warmup, self.lr_factor)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> LiveSetup:
        """A setup from `to_json`'s text (a shared link's); what it leaves out takes its default. Anything else is
        a ValueError."""
        try:
            values = json.loads(text)
        except (TypeError, ValueError, RecursionError):  # RecursionError: nested thousands deep
            raise ValueError("the training setup cannot be read") from None
        known = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(values, dict) or set(values) - known:
            raise ValueError("the training setup holds unknown settings")
        return cls(**values)


@dataclass(frozen=True)
class Snapshot:
    """A run at one step: its weights (on the CPU), its numbers and the probe as the model saw it then."""

    step: int
    seconds: float  # of training, up to this step
    weights: dict[str, Tensor]
    probe: Probe
    metrics: dict[str, float] = field(default_factory=dict)


class LiveRun:
    """A run of the Train tab: the model, Adam and the schedule, stepped one batch at a time."""

    def __init__(self, setup: LiveSetup, device: str | torch.device = "cpu"):
        self.setup, self.task, self.device = setup, setup.toy_task, torch.device(device)
        self.tokenizer = self.task.tokenizer
        torch.manual_seed(setup.seed)
        self.model = Transformer.on_cpu(setup.config()).to(self.device)  # the seed's weights on every device
        self.recipe = Recipe(self.model, setup.d_model, setup.warmup, setup.lr_factor, CLIP_NORM)
        self.step = 0  # steps taken
        self.held_out = self.encoded(draw(self.task, "dev", HELD_OUT, seed=setup.seed, unique=True))
        self.probe_example = probe_example(self.task, setup.seed)

    def encoded(self, pairs: list[tuple[str, str]]) -> list[Example]:
        return [(self.tokenizer.encode_source(s), self.tokenizer.encode_target(t)) for s, t in pairs]

    def batch(self, step: int) -> list[Example]:
        """The training batch of step `step` (1, 2, …): a function of the seed and the step alone."""
        return self.encoded(draw(self.task, "train", self.setup.batch_size, seed=f"{self.setup.seed}/{step}"))

    def train_step(self) -> dict[str, float]:
        """One update. Returns the batch's loss per target token, the share of its sequences the model got
        entirely right before the update (teacher-forced: each piece predicted from the correct ones before it),
        its target tokens, and the learning rate used."""
        self.model.train()
        examples = self.batch(self.step + 1)
        src, tgt_in, labels = collate(examples, self.device)
        logits = self.model(src, tgt_in).logits
        n_tokens = int((labels != PAD).sum())
        loss = token_loss(logits, labels, self.setup.label_smoothing) / n_tokens
        lr = self.recipe.learning_rate
        self.recipe.update(loss)
        self.step += 1
        right = ((logits.argmax(-1) == labels) | (labels == PAD)).all(dim=1)
        return {"loss": float(loss.detach()), "exact": float(right.float().mean()), "tokens": n_tokens, "lr": lr}

    def evaluate(self) -> dict[str, float]:
        """The held-out loss per token (teacher-forced, without smoothing) and exact match (the share of held-out
        sequences whose greedy translation is entirely right)."""
        numbers = measured(self.model, self.held_out)
        return {"held_out_loss": numbers["loss"], "held_out_exact": numbers["exact"]}

    def probe(self) -> Probe:
        """The probe, as the model sees it now (`replay.Probe`)."""
        return look(self.model, self.tokenizer, *self.probe_example, step=self.step,
                    max_new_tokens=self.task.positions - 1)  # fmt: skip

    def snapshot(self, seconds: float, metrics: dict[str, float]) -> Snapshot:
        weights = {name: tensor.detach().to("cpu", copy=True) for name, tensor in self.model.state_dict().items()}
        return Snapshot(self.step, seconds, weights, self.probe(), dict(metrics))

    # ---- pausing and resuming -----------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything a resumed run needs to go on exactly (the batches follow from the seed and the step)."""
        return {
            "setup": self.setup.to_json(),
            "step": self.step,
            "model": self.model.state_dict(),
            **self.recipe.state_dict(),  # the optimizer and the schedule
        }

    def load_state_dict(self, state: dict) -> None:
        if LiveSetup.from_json(state["setup"]) != self.setup:
            raise ValueError("this state belongs to a run with another setup")
        self.model.load_state_dict(state["model"])
        self.recipe.load_state_dict(state)
        self.step = state["step"]

    def checkpoint(self, weights: dict[str, Tensor] | None = None, name: str = "") -> Checkpoint:
        """A model to explore, with the task's tokenizer: this run's weights now, or a snapshot's."""
        model = Transformer.on_cpu(self.setup.config())
        model.load_state_dict(weights if weights is not None else self.model.state_dict())
        model.eval().requires_grad_(False)
        return Checkpoint(model, self.tokenizer, name or self.setup.task, {"max_length": self.task.positions - 1})


def to_bytes(state: dict) -> bytes:
    """A run's state (`LiveRun.state_dict`) as bytes, to hand to another process."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def from_bytes(data: bytes) -> dict:
    """`to_bytes`'s state back; tensors and plain values only (`weights_only`): nothing is unpickled that could run
    code."""
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def probe_example(task: ToyTask, seed: int) -> tuple[str, str]:
    """The probe: of 20 held-out (test) examples drawn with the seed, the one with the longest source, whose
    attention has the most to show."""
    return max(draw(task, "test", 20, seed=seed, unique=True), key=lambda pair: len(pair[0]))
