"""From sentence pairs to training batches: the pairs of a corpus or a synthetic task, the sentencepiece vocabulary
trained on them, their token ids, and batches of about `batch_tokens` tokens as tensors.

The batches are a function of (seed, epoch, index) alone, so every process of a distributed run forms the same
global batches, and a resumed run continues with the batch it would have taken next. `load_data` gathers what a run
trains on and evaluates with (`RunData`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm
import torch
from torch import Tensor

from ..checkpoint import Checkpoint
from ..tokenizer import Tokenizer
from .distributed import barrier, is_main_process
from .settings import BOS, EOS, PAD, UNK, TrainSettings

Pairs = list[tuple[str, str]]
Example = tuple[list[int], list[int]]  # (source ids ending with </s>, target ids ending with </s>)
Resample = Callable[[list[int], int, int], list[Example]]  # (example indices, epoch, index) -> the batch


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


# --------------------------------------------------------------------------------------------------------
# The vocabulary
# --------------------------------------------------------------------------------------------------------


def train_sentencepiece(sentences: list[str], path: Path, vocab_size: int, character_coverage: float = 1.0) -> None:
    """Train a unigram sentencepiece model with our special ids (<pad>=0, <unk>=1, <s>=2, </s>=3)."""
    spm.set_random_generator_seed(1)  # the same sentences always give the same model
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_prefix=str(path.with_suffix("")),
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=character_coverage,
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
            sentences = [s for pair in train for s in pair]
            train_sentencepiece(sentences, source, settings.model.src_vocab_size, settings.character_coverage)
            target.write_bytes(source.read_bytes())
        else:
            coverage = settings.character_coverage
            train_sentencepiece([first for first, _ in train], source, settings.model.src_vocab_size, coverage)
            train_sentencepiece([second for _, second in train], target, settings.model.tgt_vocab_size, coverage)
    barrier()
    return Tokenizer.from_files(source, target)


# --------------------------------------------------------------------------------------------------------
# Token ids
# --------------------------------------------------------------------------------------------------------


def fits(example: Example, max_len: int) -> bool:
    """Short enough to train on: at most `max_len` source ids (with `</s>`), fewer target ids."""
    return len(example[0]) <= max_len and len(example[1]) < max_len


def encoded_pairs(tokenizer: Tokenizer, pairs: Pairs, max_len: int) -> list[tuple[tuple[str, str], Example]]:
    """Each pair with its ids, for the pairs short enough to train on (`fits`)."""
    encoded = [(pair, (tokenizer.encode_source(pair[0]), tokenizer.encode_target(pair[1]))) for pair in pairs]
    return [(pair, example) for pair, example in encoded if fits(example, max_len)]


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


# --------------------------------------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------------------------------------


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


def collate(examples: list[Example], device: torch.device | str = "cpu") -> tuple[Tensor, Tensor, Tensor]:
    """-> source (B, S), decoder input (B, T) starting with <s>, and labels (B, T) ending with </s>."""
    width_s = max(len(s) for s, _ in examples)
    width_t = max(len(t) for _, t in examples)

    def padded(rows: list[list[int]], width: int) -> Tensor:  # padded as lists, then one copy to the device
        return torch.tensor([row + [PAD] * (width - len(row)) for row in rows], dtype=torch.long, device=device)

    src = padded([list(s) for s, _ in examples], width_s)
    tgt_in = padded([[BOS, *t[:-1]] for _, t in examples], width_t)
    labels = padded([list(t) for _, t in examples], width_t)
    return src, tgt_in, labels


# --------------------------------------------------------------------------------------------------------
# What a run trains on
# --------------------------------------------------------------------------------------------------------


@dataclass
class RunData:
    """What a run trains on and evaluates with, once tokenized."""

    tokenizer: Tokenizer
    examples: list[Example]  # the training pairs short enough to train on
    resample: Resample | None  # subword regularisation, when asked for
    dev_pairs: Pairs  # translated and scored at every evaluation
    everyday_pairs: Pairs  # the everyday dev set, where the corpus has one
    dev_examples: list[Example]  # the whole dev split, for the dev loss


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
        dev_examples=[example for _, example in encoded_pairs(tokenizer, pairs["dev"], settings.model.max_positions)],
    )
