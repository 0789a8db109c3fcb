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

from ..checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from ..model import Transformer, TransformerConfig
from ..tokenizer import Tokenizer

PAD, UNK, BOS, EOS = 0, 1, 2, 3  # the special ids of every sentencepiece model we train


# --------------------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainSettings:
    """Everything that defines a run; stored in the run folder, and a resumed run must match it."""

    out: str
    corpus: str | None = None  # a folder with train/dev/test.tsv.gz (see transformer.training.corpus)
    task: str | None = None  # or a synthetic task (see transformer.training.synthetic)
    task_train_size: int | None = None  # synthetic: how many training items (None = all)
    export: str | None = None  # where to write the best checkpoint (our format)
    init_from: str | None = None  # start from this checkpoint's weights and tokenizer (to train a model further)
    # vocabulary
    vocab_size: int = 8000
    shared_vocab: bool = True
    # model
    d_model: int = 256
    n_heads: int = 4
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    d_ff: int = 1024
    activation: str = "relu"
    norm_position: str = "post"
    positional_encoding: str = "sinusoidal_interleaved"
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0  # inside the feed-forward network, after its activation
    max_positions: int = 128
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

    def model_config(self, src_vocab: int, tgt_vocab: int) -> TransformerConfig:
        return TransformerConfig(
            src_vocab_size=src_vocab,
            tgt_vocab_size=tgt_vocab,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_encoder_layers=self.n_encoder_layers,
            n_decoder_layers=self.n_decoder_layers,
            d_ff=self.d_ff,
            activation=self.activation,  # type: ignore[arg-type]
            norm_position=self.norm_position,  # type: ignore[arg-type]
            positional_encoding=self.positional_encoding,  # type: ignore[arg-type]
            max_positions=self.max_positions,
            share_embeddings=self.shared_vocab,
            tie_output=True,
            dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            activation_dropout=self.activation_dropout,
            pad_id=PAD,
            eos_id=EOS,
            decoder_start_id=BOS,
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
        elif settings.shared_vocab:
            train_sentencepiece([s for pair in train for s in pair], source, settings.vocab_size)
            target.write_bytes(source.read_bytes())
        else:
            train_sentencepiece([en for en, _ in train], source, settings.vocab_size)
            train_sentencepiece([de for _, de in train], target, settings.vocab_size)
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
# Schedule, loss, evaluation
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


def translate_sentences(
    model: Transformer, tokenizer: Tokenizer, sources: list[str], max_new_tokens: int = 100, batch_size: int = 32
) -> list[str]:
    """Greedy translations of `sources`, decoded in batches of sentences of similar length."""
    from ..decoding import generate_batch

    encoded = [tokenizer.encode_source(text)[: model.config.max_positions] for text in sources]
    # a translation is rarely more than twice as long as its source: stop runaway outputs early
    limits = [min(max_new_tokens, 2 * len(ids) + 10, model.config.max_positions - 1) for ids in encoded]
    order = sorted(range(len(sources)), key=lambda i: len(encoded[i]))
    outputs = [""] * len(sources)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        ids = generate_batch(model, [encoded[i] for i in chunk], max_new_tokens=[limits[i] for i in chunk])
        for i, output in zip(chunk, ids, strict=True):
            outputs[i] = tokenizer.decode_target(output)
    return outputs


def score(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    """BLEU and chrF (sacrebleu, default settings) and exact match, in percent."""
    import sacrebleu

    exact = sum(h.strip() == r.strip() for h, r in zip(hypotheses, references, strict=True))
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
        "exact_match": round(100.0 * exact / max(len(references), 1), 2),
    }


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

    from ..checkpoint import unique_state_dict

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


def train(settings: TrainSettings, *, stop_after: int | None = None, quiet: bool = False) -> dict:
    """Run (or resume) training to `settings.steps`; `stop_after` stops early after that many steps of this call
    (used by tests to simulate an interruption). Returns the final state summary."""
    device = setup_device()
    rank, world_size = world()
    run = Path(settings.out)
    run.mkdir(parents=True, exist_ok=True)
    settings_path = run / "settings.json"
    if settings_path.exists():
        stored = {**dataclasses.asdict(TrainSettings(out="")), **json.loads(settings_path.read_text())}
        if stored != dataclasses.asdict(settings):
            diff = {k: (stored.get(k), v) for k, v in dataclasses.asdict(settings).items() if stored.get(k) != v}
            raise ValueError(f"{run} holds a run with other settings: {diff}; use another --out")
    elif rank == 0:
        settings_path.write_text(json.dumps(dataclasses.asdict(settings), indent=2) + "\n")

    pairs = load_pairs(settings)
    start = load_checkpoint(settings.init_from) if settings.init_from else None
    tokenizer = prepare_tokenizer(run, pairs["train"], settings, start)
    kept = encoded_pairs(tokenizer, pairs["train"], settings.max_len)
    examples = [example for _, example in kept]
    resample = resampler(tokenizer, kept, settings) if settings.subword_alpha else None
    dev_pairs = pairs["dev"][: settings.dev_size]
    everyday_pairs = pairs.get("everyday-dev", [])
    dev_examples = encode_pairs(tokenizer, pairs["dev"], settings.max_positions)

    torch.manual_seed(settings.seed)
    config = settings.model_config(tokenizer.source.size, tokenizer.target.size)
    model = Transformer(config).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: learning_rate(step + 1, settings.d_model, settings.warmup, settings.lr_scale)
    )
    state_path = run / "state.pt"
    step, epoch, index, best, elapsed = 0, 0, 0, -math.inf, 0.0
    if start is not None and not state_path.exists():
        if not start.model.config.same_architecture(config):  # the dropout rates may change between runs
            raise ValueError(f"--init-from {settings.init_from} has another architecture than these settings")
        model.load_state_dict(start.model.state_dict())
    if state_path.exists():
        state = torch.load(state_path, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        step, epoch, index, best, elapsed = (state[k] for k in ("step", "epoch", "index", "best", "elapsed"))
    trained = torch.nn.parallel.DistributedDataParallel(model) if world_size > 1 else model
    autocast = (
        torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else torch.autocast("cpu", enabled=False)
    )

    def snapshot() -> dict:
        return {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(),
            "rng": torch.get_rng_state(),
            "step": step,
            "epoch": epoch,
            "index": index,
            "best": best,
            "elapsed": elapsed,
        }

    def evaluate() -> dict:
        nonlocal best
        model.eval()
        with torch.no_grad(), autocast:
            dev_loss = sum(
                float(batch_loss(model, collate(dev_examples[i : i + 64], device), 0.0, 1))
                for i in range(0, len(dev_examples), 64)
            ) / sum(len(t) for _, t in dev_examples)
        hypotheses = translate_sentences(model, tokenizer, [s for s, _ in dev_pairs])
        metrics = score(hypotheses, [t for _, t in dev_pairs])
        if everyday_pairs:  # the everyday dev set counts as much as the dev split for choosing the best weights
            hypotheses = translate_sentences(model, tokenizer, [s for s, _ in everyday_pairs])
            everyday = score(hypotheses, [t for _, t in everyday_pairs])
            metrics |= {f"everyday_{name}": value for name, value in everyday.items()}
            metrics["selection"] = round((metrics["chrf"] + everyday["chrf"]) / 2, 2)
        model.train()
        key = metrics["exact_match"] if settings.task else metrics.get("selection", metrics["chrf"])
        record = {"kind": "dev", "step": step, "dev_loss": round(dev_loss, 4), **metrics, "best": key > best}
        if key > best:
            best = key
            if settings.export:
                save_checkpoint(
                    model=model,
                    tokenizer=tokenizer,
                    folder=settings.export,
                    dtype=torch.float16,
                    generation={"num_beams": 4, "max_length": config.max_positions},
                    card=f"# {Path(settings.export).name}\n\nTraining in progress; see the run's log.\n",
                )
        if rank == 0 and settings.keep_snapshots > 0:
            save_snapshot(run, model, step, settings.keep_snapshots)
        append_log(run, record)
        plot_log(run)
        if settings.export and Path(settings.export).is_dir():  # the log and plot travel with the checkpoint
            for name in ("train_log.jsonl", "training.png", "settings.json"):
                shutil.copyfile(run / name, Path(settings.export) / name)
        return record

    model.train()
    progress = tqdm(total=settings.steps, initial=step, disable=quiet or rank != 0, dynamic_ncols=True)
    last_save, tokens_seen, t0, steps_this_call = time.time(), 0, time.time(), 0
    data = batches_from(examples, settings, epoch, index, resample)
    while step < settings.steps and (stop_after is None or steps_this_call < stop_after):
        epoch, index, batch = next(data)
        n_tokens = sum(len(t) for _, t in batch)  # the global batch's target tokens, known to every process
        share = collate(batch[rank::world_size], device)
        with autocast:
            loss = batch_loss(trained, share, settings.label_smoothing, n_tokens) * world_size
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), settings.clip_norm)
        optimizer.step()
        schedule.step()
        step, index, steps_this_call = step + 1, index + 1, steps_this_call + 1
        tokens_seen += n_tokens
        if step % settings.log_every == 0 or step == settings.steps:
            now = time.time()
            elapsed += now - t0
            rate = tokens_seen / max(now - t0, 1e-9)
            lr = schedule.get_last_lr()[0]
            true_loss = loss.item() / world_size
            progress.set_postfix(loss=f"{true_loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{rate:,.0f}", epoch=epoch)
            if rank == 0:
                append_log(
                    run,
                    {
                        "kind": "train",
                        "step": step,
                        "epoch": epoch,
                        "loss": round(true_loss, 4),
                        "lr": lr,
                        "tokens_per_s": round(rate),
                        "elapsed_s": round(elapsed),
                    },
                )
            tokens_seen, t0 = 0, now
        progress.update(1)
        if rank == 0 and (step % settings.eval_every == 0 or step == settings.steps):
            record = evaluate()
            if not quiet:
                progress.write(json.dumps(record))
            t0 = time.time()  # evaluation time does not count as training time
        if rank == 0 and (time.time() - last_save > 60 * settings.save_every_minutes or step == settings.steps):
            save_state(state_path, snapshot())
            last_save = time.time()
    progress.close()
    if rank == 0:
        save_state(state_path, snapshot())
    barrier()
    return {"step": step, "epoch": epoch, "index": index, "best": best, "model": model}


# --------------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------------


def command_line(settings: TrainSettings | dict) -> str:
    """The `python -m transformer.training.train …` command that reproduces these settings (defaults left out)."""
    values = dataclasses.asdict(settings) if isinstance(settings, TrainSettings) else settings
    defaults = dataclasses.asdict(TrainSettings(out=""))
    parts = ["python -m transformer.training.train"]
    for name, value in values.items():
        if value == defaults.get(name) and name != "out":
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            parts.append(flag if value else "--no-" + flag[2:])
        elif value is not None:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def parse_args(argv: list[str] | None = None) -> TrainSettings:
    parser = argparse.ArgumentParser(prog="python -m transformer.training.train", description=__doc__.split("\n")[0])
    defaults = TrainSettings(out="")
    for f in dataclasses.fields(TrainSettings):
        flag = "--" + f.name.replace("_", "-")
        default = getattr(defaults, f.name)
        if f.name == "out":
            parser.add_argument(flag, required=True, help="run folder (state, log, plot, tokenizer)")
        elif isinstance(default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default)
        else:
            kind = type(default) if default is not None else (int if "size" in f.name else str)
            parser.add_argument(flag, type=kind, default=default, help=f"default: {default}")
    return TrainSettings(**vars(parser.parse_args(argv)))


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
