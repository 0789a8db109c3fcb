"""Train a Transformer on a parallel corpus or a synthetic task: `python -m transformer.training.train --help`.

The recipe of the paper (§5): Adam with β = (0.9, 0.98), the warm-up + inverse-square-root learning rate
schedule, label smoothing, residual dropout, batches of about the same number of tokens. Around it:

* a sentencepiece vocabulary trained on the training split (shared or one per side);
* progress bars with loss, learning rate and tokens/s; periodic dev BLEU/chrF (sacrebleu) or exact match;
  a JSON-lines log and a plot next to the run; the best checkpoint on dev exported in our format;
* exact resumption: the run folder holds the model, optimizer, schedule, data position and random state,
  saved every few minutes (atomically), so an interrupted run continues as if it had never stopped;
* CUDA with bf16 autocast when there is a GPU; data parallel across processes with `torchrun`
  (DistributedDataParallel, gloo on CPU, nccl on GPU): every process builds the same global batches and
  trains on its share, and gradients are averaged so the update equals single-process training.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm
import torch
import torch.distributed as dist
from torch import Tensor
from torch.nn import functional as F
from tqdm import tqdm

from ..checkpoint import Checkpoint, load_checkpoint, save_checkpoint, unique_state_dict
from ..model import Transformer, TransformerConfig
from ..tokenizer import Tokenizer
from .evaluate import score, translate_sentences

PAD, UNK, BOS, EOS = 0, 1, 2, 3  # the special ids of every sentencepiece model we train


# --------------------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------------------


# The model a run trains unless its command line says otherwise: the paper's base model (§6.2) at half its width
# and depth, with one vocabulary. Its vocabulary sizes are those asked of sentencepiece (the trained tokenizer may
# hold fewer pieces, and then its sizes are the model's); the special ids are those of our sentencepiece models.
DEFAULT_MODEL = TransformerConfig(
    src_vocab_size=8000,
    tgt_vocab_size=8000,
    d_model=256,
    n_heads=4,
    n_encoder_layers=3,
    n_decoder_layers=3,
    d_ff=1024,
    max_positions=128,
    share_embeddings=True,
    pad_id=PAD,
    eos_id=EOS,
    decoder_start_id=BOS,
)

# The fields of the model a run may choose, by their command-line and settings.json names, each with the config
# field(s) it sets; the others are DEFAULT_MODEL's in every run. The vocabulary has names of its own: one
# sentencepiece size for both sides, and one vocabulary (with shared embeddings) or one per side.
MODEL_OPTIONS = {
    "vocab_size": ("src_vocab_size", "tgt_vocab_size"),
    "shared_vocab": ("share_embeddings",),
    **{name: (name,) for name in ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff")},
    **{name: (name,) for name in ("activation", "norm_position", "positional_encoding")},
    **{name: (name,) for name in ("dropout", "attention_dropout", "activation_dropout", "max_positions")},
}


@dataclass(frozen=True)
class TrainSettings:
    """Everything that defines a run; stored in the run folder, and a resumed run must match it.

    On the command line and in `settings.json` the settings are flat (`--d-model 256`, `"d_model": 256`): the
    model's options (`MODEL_OPTIONS`) sit among the run's, and `from_dict`/`to_dict` convert."""

    out: str
    corpus: str | None = None  # a folder with train/dev/test.tsv.gz (see transformer.training.corpus)
    task: str | None = None  # or a synthetic task (see transformer.training.synthetic)
    task_train_size: int | None = None  # synthetic: how many training items (None = all)
    export: str | None = None  # where to write the best checkpoint (our format)
    init_from: str | None = None  # start from this checkpoint's weights and tokenizer (to train a model further)
    model: TransformerConfig = DEFAULT_MODEL
    # optimisation
    batch_tokens: int = 4000
    steps: int = 10000
    warmup: int = 4000
    lr_scale: float = 1.0  # multiplies the paper's schedule d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
    label_smoothing: float = 0.1
    subword_alpha: float = 0.0  # > 0: each batch samples new segmentations of its sentences (subword regularisation)
    clip_norm: float = 1.0
    seed: int = 0
    max_len: int = 64  # training pairs longer than this many tokens (either side) are skipped
    # evaluation and saving
    eval_every: int = 1000
    dev_size: int = 400  # dev sentences translated at each evaluation
    log_every: int = 50
    save_every_minutes: float = 5.0
    keep_snapshots: int = 5  # the weights at the last N evaluations, for checkpoint averaging (§6.1)

    def to_dict(self) -> dict:
        """The flat settings, in the order of the command line's options (the model's where `model` stands)."""
        values = {}
        for f in dataclasses.fields(self):
            if f.name == "model":
                values |= {option: getattr(self.model, fields[0]) for option, fields in MODEL_OPTIONS.items()}
            else:
                values[f.name] = getattr(self, f.name)
        return values

    @classmethod
    def from_dict(cls, values: Mapping) -> TrainSettings:
        """Settings from their flat form; what it leaves out takes its default, as in a run folder written before
        the option existed. An unknown name is an error."""
        run, model = dict(values), {}
        for option, fields in MODEL_OPTIONS.items():
            if option in run:
                model |= dict.fromkeys(fields, run.pop(option))
        unknown = sorted(set(run) - {f.name for f in dataclasses.fields(cls) if f.name != "model"})
        if unknown:
            raise ValueError(f"unknown training setting(s) {', '.join(unknown)}")
        return cls(**run, model=dataclasses.replace(DEFAULT_MODEL, **model))

    def model_for(self, tokenizer: Tokenizer) -> TransformerConfig:
        """The model to train with this tokenizer: its vocabulary sizes, which sentencepiece may have made smaller
        than asked for."""
        return dataclasses.replace(
            self.model, src_vocab_size=tokenizer.source.size, tgt_vocab_size=tokenizer.target.size
        )


# --------------------------------------------------------------------------------------------------------
# Data: pairs -> token ids -> batches of about `batch_tokens` tokens
# --------------------------------------------------------------------------------------------------------

Pairs = list[tuple[str, str]]


def load_pairs(settings: TrainSettings) -> dict[str, Pairs]:
    """The train/dev/test pairs of the corpus or synthetic task the settings name."""
    if (settings.corpus is None) == (settings.task is None):
        raise ValueError("give exactly one of --corpus and --task")
    if settings.corpus is not None:
        from .corpus.tsv import load_corpus

        return load_corpus(settings.corpus)
    from .synthetic import make_split

    return {
        "train": make_split(settings.task, "train", settings.task_train_size, seed=settings.seed),
        "dev": make_split(settings.task, "dev", seed=settings.seed),
        "test": make_split(settings.task, "test", seed=settings.seed),
    }


def train_sentencepiece(sentences: list[str], path: Path, vocab_size: int) -> None:
    """Train a unigram sentencepiece model with our special ids (<pad>=0, <unk>=1, <s>=2, </s>=3)."""
    spm.set_random_generator_seed(1)  # the same sentences always give the same model
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_prefix=str(path.with_suffix("")),
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        pad_id=PAD,
        unk_id=UNK,
        bos_id=BOS,
        eos_id=EOS,
        hard_vocab_limit=False,  # tiny synthetic vocabularies have fewer pieces than asked for
        input_sentence_size=2_000_000,
        num_threads=1,  # deterministic
        minloglevel=2,
    )
    path.with_suffix(".model").rename(path)
    path.with_suffix(".vocab").unlink(missing_ok=True)


def prepare_tokenizer(run: Path, train: Pairs, settings: TrainSettings, start: Checkpoint | None = None) -> Tokenizer:
    """The run's tokenizer, trained on the training split the first time (by rank 0), then reused."""
    source, target = run / "source.spm", run / "target.spm"
    if is_main_process() and not source.exists():
        if start is not None:  # keep the tokenizer the weights were trained with
            source.write_bytes(start.tokenizer.source.processor.serialized_model_proto())
            target.write_bytes(start.tokenizer.target.processor.serialized_model_proto())
        elif settings.model.share_embeddings:
            train_sentencepiece([s for pair in train for s in pair], source, settings.model.src_vocab_size)
            target.write_bytes(source.read_bytes())
        else:
            train_sentencepiece([en for en, _ in train], source, settings.model.src_vocab_size)
            train_sentencepiece([de for _, de in train], target, settings.model.tgt_vocab_size)
    barrier()
    return Tokenizer.from_files(source, target)


Example = tuple[list[int], list[int]]  # (source ids ending with </s>, target ids ending with </s>)


def encode_pairs(tokenizer: Tokenizer, pairs: Pairs, max_len: int) -> list[Example]:
    return [example for _, example in encoded_pairs(tokenizer, pairs, max_len)]


def fits(example: Example, max_len: int) -> bool:
    """Short enough to train on: at most `max_len` source ids (with `</s>`), fewer target ids."""
    return len(example[0]) <= max_len and len(example[1]) < max_len


def encoded_pairs(tokenizer: Tokenizer, pairs: Pairs, max_len: int) -> list[tuple[tuple[str, str], Example]]:
    """Each pair with its ids, for the pairs short enough to train on (`fits`)."""
    encoded = [(pair, (tokenizer.encode_source(pair[0]), tokenizer.encode_target(pair[1]))) for pair in pairs]
    return [(pair, example) for pair, example in encoded if fits(example, max_len)]


def make_batches(examples: list[Example], batch_tokens: int, seed: int, epoch: int) -> list[list[int]]:
    """Indices of examples grouped into batches of at most `batch_tokens` (padded) tokens, in a seeded order.

    Similar lengths go together (sorted by length, ties broken at random), so there is little padding;
    the batches themselves are then shuffled. The same (seed, epoch) always gives the same batches.
    """
    rng = random.Random(seed * 100_003 + epoch)
    keys = [(max(len(s), len(t) + 1), rng.random()) for s, t in examples]
    order = sorted(range(len(examples)), key=keys.__getitem__)
    batches, current, longest = [], [], 0
    for i in order:
        length = keys[i][0]
        if current and (len(current) + 1) * max(longest, length) > batch_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, length)
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def collate(examples: list[Example], device: torch.device | str = "cpu") -> tuple[Tensor, Tensor, Tensor]:
    """-> source (B, S), decoder input (B, T) starting with <s>, and labels (B, T) ending with </s>."""
    width_s = max(len(s) for s, _ in examples)
    width_t = max(len(t) for _, t in examples)
    src = torch.full((len(examples), width_s), PAD, dtype=torch.long)
    tgt_in = torch.full((len(examples), width_t), PAD, dtype=torch.long)
    labels = torch.full((len(examples), width_t), PAD, dtype=torch.long)
    for row, (s, t) in enumerate(examples):
        src[row, : len(s)] = torch.tensor(s)
        tgt_in[row, : len(t)] = torch.tensor([BOS, *t[:-1]])
        labels[row, : len(t)] = torch.tensor(t)
    return src.to(device), tgt_in.to(device), labels.to(device)


# --------------------------------------------------------------------------------------------------------
# Distributed helpers (single process: all no-ops)
# --------------------------------------------------------------------------------------------------------


def world() -> tuple[int, int]:
    """(rank, world size)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_main_process() -> bool:
    return world()[0] == 0


def barrier() -> None:
    if world()[1] > 1:
        dist.barrier()


def setup_device() -> torch.device:
    """Join the process group when started by torchrun; pick CUDA when there is one."""
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    return torch.device("cpu")


# --------------------------------------------------------------------------------------------------------
# Schedule and loss
# --------------------------------------------------------------------------------------------------------


def learning_rate(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)  (§5.3), for step = 1, 2, …"""
    step = max(step, 1)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def batch_loss(model: torch.nn.Module, batch: tuple[Tensor, Tensor, Tensor], smoothing: float, n_tokens: int):
    """Summed label-smoothed cross-entropy over the batch's target tokens, divided by `n_tokens`.

    `n_tokens` is the token count of the *global* batch, so that the gradients averaged over processes equal
    the gradient of single-process training (each process multiplies by the world size to undo the average).
    """
    src, tgt_in, labels = batch
    logits = model(src, tgt_in).logits  # (B, T, V)
    loss = F.cross_entropy(
        logits.float().reshape(-1, logits.size(-1)),
        labels.reshape(-1),
        ignore_index=PAD,
        label_smoothing=smoothing,
        reduction="sum",
    )
    return loss / n_tokens


# --------------------------------------------------------------------------------------------------------
# The run folder: state (for resuming), log, plot
# --------------------------------------------------------------------------------------------------------


def save_state(path: Path, state: dict) -> None:
    """Write atomically: an interruption while saving leaves the previous state intact."""
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as f:
        torch.save(state, f)
    os.replace(f.name, path)


def save_snapshot(run: Path, model: Transformer, step: int, keep: int) -> None:
    """The model's weights at this step as `snapshots/step-NNNNNN.safetensors`; only the newest `keep` stay.

    The paper's base models average the last five checkpoints (§6.1); `python -m transformer.convert average`
    does that with these files.
    """
    from safetensors.torch import save_file

    folder = run / "snapshots"
    folder.mkdir(exist_ok=True)
    weights = {name: t.detach().float().cpu().contiguous() for name, t in unique_state_dict(model).items()}
    target = folder / f"step-{step:06d}.safetensors"
    save_file(weights, str(target.with_suffix(".tmp")))
    os.replace(target.with_suffix(".tmp"), target)
    for old in sorted(folder.glob("step-*.safetensors"))[:-keep]:
        old.unlink()


def append_log(run: Path, record: dict) -> None:
    with open(run / "train_log.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def plot_log(run: Path) -> None:
    """training.png: training loss and dev loss over steps, and the dev metrics."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines() if line]
    train = [r for r in records if r["kind"] == "train"]
    dev = [r for r in records if r["kind"] == "dev"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot([r["step"] for r in train], [r["loss"] for r in train], label="train loss (label-smoothed)")
    left.plot([r["step"] for r in dev], [r["dev_loss"] for r in dev], "o-", label="dev loss")
    left.set_xlabel("step")
    left.set_ylabel("cross-entropy per token")
    left.legend()
    for key in ("bleu", "chrf", "exact_match"):
        right.plot([r["step"] for r in dev], [r[key] for r in dev], "o-", label=key)
    right.set_xlabel("step")
    right.set_ylabel("dev score (%)")
    right.legend()
    fig.tight_layout()
    fig.savefig(run / "training.png", dpi=90)
    plt.close(fig)


# --------------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------------


def batches_from(
    examples: list[Example], settings: TrainSettings, epoch: int, index: int, resample: Resample | None = None
) -> Iterator[tuple]:
    """(epoch, index in epoch, global batch) from a position on, epoch after epoch. Batches are formed from the
    examples' lengths; `resample` (subword regularisation) then gives the batch's examples segmented anew."""
    while True:
        batches = make_batches(examples, settings.batch_tokens, settings.seed, epoch)
        for i in range(index, len(batches)):
            batch = resample(batches[i], epoch, i) if resample else [examples[j] for j in batches[i]]
            yield epoch, i, batch
        epoch, index = epoch + 1, 0


Resample = Callable[[list[int], int, int], list[Example]]


def resampler(tokenizer: Tokenizer, kept: list[tuple[tuple[str, str], Example]], settings: TrainSettings) -> Resample:
    """Subword regularisation (Kudo 2018): each batch's sentences segmented by a random draw (`subword_alpha`),
    seeded by (seed, epoch, batch), so that every process and a resumed run draw the same. A sentence whose draw
    is too long for `max_len` keeps its usual segmentation. `kept` is `encoded_pairs`: each text with its ids."""

    def resample(indices: list[int], epoch: int, index: int) -> list[Example]:
        spm.set_random_generator_seed(settings.seed * 1_000_003 + epoch * 100_003 + index)
        batch = []
        for j in indices:
            (source, target), usual = kept[j]
            drawn = (
                tokenizer.encode_source(source, settings.subword_alpha),
                tokenizer.encode_target(target, settings.subword_alpha),
            )
            batch.append(drawn if fits(drawn, settings.max_len) else usual)
        return batch

    return resample


@dataclass
class Position:
    """Where a run is: steps taken, the next batch (epoch, index in it), the best dev score, seconds of training."""

    step: int = 0
    epoch: int = 0
    index: int = 0
    best: float = -math.inf
    elapsed: float = 0.0


@dataclass
class RunData:
    """What a run trains on and evaluates with, once tokenized."""

    tokenizer: Tokenizer
    examples: list[Example]  # the training pairs short enough to train on
    resample: Resample | None  # subword regularisation, when asked for
    dev_pairs: Pairs  # translated and scored at every evaluation
    everyday_pairs: Pairs  # the everyday dev set, where the corpus has one
    dev_examples: list[Example]  # the whole dev split, for the dev loss


def open_run(settings: TrainSettings) -> Path:
    """The run folder, with the settings it was started with; one that holds a run with other settings is refused."""
    run = Path(settings.out)
    run.mkdir(parents=True, exist_ok=True)
    path = run / "settings.json"
    if path.exists():
        stored = TrainSettings.from_dict(json.loads(path.read_text())).to_dict()
        diff = {name: (stored[name], value) for name, value in settings.to_dict().items() if stored[name] != value}
        if diff:
            raise ValueError(f"{run} holds a run with other settings: {diff}; use another --out")
    elif is_main_process():
        path.write_text(json.dumps(settings.to_dict(), indent=2) + "\n")
    return run


def load_data(settings: TrainSettings, run: Path, start: Checkpoint | None) -> RunData:
    """The run's pairs and tokenizer (`start`'s when training a checkpoint further), and the pairs as token ids."""
    pairs = load_pairs(settings)
    tokenizer = prepare_tokenizer(run, pairs["train"], settings, start)
    kept = encoded_pairs(tokenizer, pairs["train"], settings.max_len)
    return RunData(
        tokenizer=tokenizer,
        examples=[example for _, example in kept],
        resample=resampler(tokenizer, kept, settings) if settings.subword_alpha else None,
        dev_pairs=pairs["dev"][: settings.dev_size],
        everyday_pairs=pairs.get("everyday-dev", []),
        dev_examples=encode_pairs(tokenizer, pairs["dev"], settings.model.max_positions),
    )


class Trainer:
    """A run's model, optimizer and schedule and where the run is: one training step, one evaluation, the state
    saved for resuming."""

    def __init__(
        self, settings: TrainSettings, data: RunData, run: Path, device: torch.device, start: Checkpoint | None = None
    ):
        self.settings, self.data, self.run, self.device = settings, data, run, device
        torch.manual_seed(settings.seed)
        self.config = settings.model_for(data.tokenizer)
        self.model = Transformer(self.config).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
        d_model, warmup, scale = self.config.d_model, settings.warmup, settings.lr_scale
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: learning_rate(step + 1, d_model, warmup, scale)
        )
        self.position = Position()
        self.state_path = run / "state.pt"
        if self.state_path.exists():
            self.resume()
        elif start is not None:
            if not start.model.config.same_architecture(self.config):  # the dropout rates may change between runs
                raise ValueError(f"--init-from {settings.init_from} has another architecture than these settings")
            self.model.load_state_dict(start.model.state_dict())
        self.rank, self.world_size = world()
        parallel = self.world_size > 1
        self.trained = torch.nn.parallel.DistributedDataParallel(self.model) if parallel else self.model
        cuda = self.device.type == "cuda"
        self.autocast = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)

    def state(self) -> dict:
        """Everything a resumed run needs to continue as if it had never stopped."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": self.schedule.state_dict(),
            "rng": torch.get_rng_state(),
            **dataclasses.asdict(self.position),
        }

    def resume(self) -> None:
        state = torch.load(self.state_path, map_location=self.device, weights_only=True)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        self.position = Position(**{f.name: state[f.name] for f in dataclasses.fields(Position)})

    def save(self) -> None:
        save_state(self.state_path, self.state())

    def step(self, batch: list[Example]) -> tuple[Tensor, int]:
        """One update on this process's share of the global batch; returns the batch's loss per target token (a
        tensor: reading it waits for the GPU) and its target tokens."""
        n_tokens = sum(len(t) for _, t in batch)  # the global batch's target tokens, known to every process
        share = collate(batch[self.rank :: self.world_size], self.device)
        with self.autocast:
            loss = batch_loss(self.trained, share, self.settings.label_smoothing, n_tokens) * self.world_size
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.settings.clip_norm)
        self.optimizer.step()
        self.schedule.step()
        self.position.step += 1
        self.position.index += 1
        return loss.detach() / self.world_size, n_tokens

    def dev_metrics(self) -> dict:
        """The dev loss, and the scores of greedy translations of the dev pairs (and the everyday dev pairs)."""
        model, data = self.model, self.data
        with torch.no_grad(), self.autocast:
            dev_loss = sum(
                float(batch_loss(model, collate(data.dev_examples[i : i + 64], self.device), 0.0, 1))
                for i in range(0, len(data.dev_examples), 64)
            ) / sum(len(t) for _, t in data.dev_examples)
        hypotheses = translate_sentences(model, data.tokenizer, [s for s, _ in data.dev_pairs])
        metrics = {"dev_loss": round(dev_loss, 4), **score(hypotheses, [t for _, t in data.dev_pairs])}
        if data.everyday_pairs:  # the everyday dev set counts as much as the dev split for choosing the best weights
            hypotheses = translate_sentences(model, data.tokenizer, [s for s, _ in data.everyday_pairs])
            everyday = score(hypotheses, [t for _, t in data.everyday_pairs])
            metrics |= {f"everyday_{name}": value for name, value in everyday.items()}
            metrics["selection"] = round((metrics["chrf"] + everyday["chrf"]) / 2, 2)
        return metrics

    def evaluate(self) -> dict:
        """Measure on the dev sets, export the weights when they are the best yet, keep a snapshot, log and plot."""
        settings, run = self.settings, self.run
        self.model.eval()
        metrics = self.dev_metrics()
        self.model.train()
        key = metrics["exact_match"] if settings.task else metrics.get("selection", metrics["chrf"])
        record = {"kind": "dev", "step": self.position.step, **metrics, "best": key > self.position.best}
        if key > self.position.best:
            self.position.best = key
            if settings.export:
                save_checkpoint(
                    model=self.model,
                    tokenizer=self.data.tokenizer,
                    folder=settings.export,
                    dtype=torch.float16,
                    generation={"num_beams": 4, "max_length": self.config.max_positions},
                    card=f"# {Path(settings.export).name}\n\nTraining in progress; see the run's log.\n",
                )
        if self.rank == 0 and settings.keep_snapshots > 0:
            save_snapshot(run, self.model, self.position.step, settings.keep_snapshots)
        append_log(run, record)
        plot_log(run)
        if settings.export and Path(settings.export).is_dir():  # the log and plot travel with the checkpoint
            for name in ("train_log.jsonl", "training.png", "settings.json"):
                shutil.copyfile(run / name, Path(settings.export) / name)
        return record


def train(settings: TrainSettings, *, stop_after: int | None = None, quiet: bool = False) -> dict:
    """Run (or resume) training to `settings.steps`; `stop_after` stops early after that many steps of this call
    (used by tests to simulate an interruption). Returns the final state summary."""
    device = setup_device()  # first: a distributed run's processes join their group here
    run = open_run(settings)
    start = load_checkpoint(settings.init_from) if settings.init_from else None
    data = load_data(settings, run, start)
    trainer = Trainer(settings, data, run, device, start)
    position, main = trainer.position, trainer.rank == 0  # rank 0 evaluates, logs and saves
    trainer.model.train()
    progress = tqdm(total=settings.steps, initial=position.step, disable=quiet or not main, dynamic_ncols=True)
    last_save, tokens_seen, t0, steps_this_call = time.time(), 0, time.time(), 0
    batches = batches_from(data.examples, settings, position.epoch, position.index, data.resample)
    while position.step < settings.steps and (stop_after is None or steps_this_call < stop_after):
        position.epoch, position.index, batch = next(batches)
        loss, n_tokens = trainer.step(batch)
        steps_this_call, tokens_seen = steps_this_call + 1, tokens_seen + n_tokens
        if position.step % settings.log_every == 0 or position.step == settings.steps:
            now = time.time()
            position.elapsed += now - t0
            rate, lr, true_loss = tokens_seen / max(now - t0, 1e-9), trainer.schedule.get_last_lr()[0], loss.item()
            progress.set_postfix(loss=f"{true_loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{rate:,.0f}", epoch=position.epoch)
            if main:
                append_log(run, train_record(position, true_loss, lr, rate))
            tokens_seen, t0 = 0, now
        progress.update(1)
        if main and (position.step % settings.eval_every == 0 or position.step == settings.steps):
            record = trainer.evaluate()
            if not quiet:
                progress.write(json.dumps(record))
            t0 = time.time()  # evaluation time does not count as training time
        if main and (time.time() - last_save > 60 * settings.save_every_minutes or position.step == settings.steps):
            trainer.save()
            last_save = time.time()
    progress.close()
    if main:
        trainer.save()
    barrier()
    return {
        "step": position.step,
        "epoch": position.epoch,
        "index": position.index,
        "best": position.best,
        "model": trainer.model,
    }


def train_record(position: Position, loss: float, lr: float, rate: float) -> dict:
    """A line of the training log."""
    return {
        "kind": "train",
        "step": position.step,
        "epoch": position.epoch,
        "loss": round(loss, 4),
        "lr": lr,
        "tokens_per_s": round(rate),
        "elapsed_s": round(position.elapsed),
    }


# --------------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------------


def command_line(settings: TrainSettings) -> str:
    """The `python -m transformer.training.train …` command that reproduces these settings (defaults left out)."""
    defaults = TrainSettings(out="").to_dict()
    parts = ["python -m transformer.training.train"]
    for name, value in settings.to_dict().items():
        if value == defaults[name] and name != "out":
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            parts.append(flag if value else "--no-" + flag[2:])
        elif value is not None:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def parse_args(argv: list[str] | None = None) -> TrainSettings:
    parser = argparse.ArgumentParser(prog="python -m transformer.training.train", description=__doc__.split("\n")[0])
    for name, default in TrainSettings(out="").to_dict().items():
        flag = "--" + name.replace("_", "-")
        if name == "out":
            parser.add_argument(flag, required=True, help="run folder (state, log, plot, tokenizer)")
        elif isinstance(default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default)
        else:
            kind = type(default) if default is not None else (int if "size" in name else str)
            parser.add_argument(flag, type=kind, default=default, help=f"default: {default}")
    return TrainSettings.from_dict(vars(parser.parse_args(argv)))


def cpu_threads(environ: Mapping[str, str]) -> int:
    """Threads for this process: OMP_NUM_THREADS when set (two runs side by side, one thread each), else the
    cores shared among the processes of a distributed run."""
    if environ.get("OMP_NUM_THREADS", "").isdigit() and int(environ["OMP_NUM_THREADS"]) > 0:
        return int(environ["OMP_NUM_THREADS"])
    return max(1, (os.cpu_count() or 1) // int(environ.get("WORLD_SIZE", 1)))


def main(argv: list[str] | None = None) -> None:
    settings = parse_args(argv)
    torch.set_num_threads(cpu_threads(os.environ))
    summary = train(settings)
    if is_main_process():
        print(json.dumps({k: v for k, v in summary.items() if k != "model"}))
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
