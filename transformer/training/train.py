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

This module holds the training loop. Around it: the paper's recipe, its learning rate, loss and update (`recipe`,
which the Train tab's runs use too), what a run is set to and its command line (`settings`), from pairs to batches
(`batches`), the run folder's files (`run_folder`), and the processes of a distributed run (`distributed`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor
from tqdm import tqdm

from ..checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from ..model import Transformer
from .batches import Example, RunData, batches_from, collate, load_data
from .distributed import barrier, cpu_threads, is_main_process, leave_process_group, setup_device, world
from .evaluate import score, translate_sentences
from .recipe import Recipe, batch_loss, steps_until
from .replay import FOLDER as REPLAY_FOLDER
from .run_folder import append_log, open_run, plot_log, save_snapshot, save_state
from .settings import TrainSettings, parse_args

# --------------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------------


@dataclass
class Position:
    """Where a run is: steps taken, the next batch (epoch, index in it), the best dev score, seconds of training."""

    step: int = 0
    epoch: int = 0
    index: int = 0
    best: float = -math.inf
    elapsed: float = 0.0


class Trainer:
    """A run's model, optimizer and schedule and where the run is: one training step, one evaluation, the state
    saved for resuming."""

    def __init__(
        self, settings: TrainSettings, data: RunData, run: Path, device: torch.device, start: Checkpoint | None = None
    ):
        self.settings, self.data, self.run, self.device = settings, data, run, device
        torch.manual_seed(settings.seed)
        self.config = settings.model_for(data.tokenizer)
        self.model = Transformer.on_cpu(self.config).to(self.device)  # the seed's weights on every device
        self.recipe = Recipe(self.model, self.config.d_model, settings.warmup, settings.lr_scale, settings.clip_norm)
        # the exported weights decode as the checkpoint continued from did (its beam's length penalty), else by default
        defaults = {"num_beams": 4, "max_length": self.config.max_positions}
        self.generation = defaults | (start.generation if start is not None else {})
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
            **self.recipe.state_dict(),  # the optimizer and the schedule
            "rng": torch.get_rng_state(),
            **dataclasses.asdict(self.position),
        }

    def resume(self) -> None:
        state = torch.load(self.state_path, map_location=self.device, weights_only=True)
        self.model.load_state_dict(state["model"])
        self.recipe.load_state_dict(state)
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
        self.recipe.update(loss)
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
        key = settings.selection_score(metrics)
        record = {"kind": "dev", "step": self.position.step, **metrics, "best": key > self.position.best}
        if key > self.position.best:
            self.position.best = key
            if settings.export:
                save_checkpoint(
                    model=self.model,
                    tokenizer=self.data.tokenizer,
                    folder=settings.export,
                    dtype=torch.float16,
                    generation=self.generation,
                    card=f"# {Path(settings.export).name}\n\nTraining in progress; see the run's log.\n",
                )
        if settings.keep_snapshots > 0:
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
    replayed = set(steps_until(settings.steps)) if settings.replay and main else set()
    if position.step in replayed:
        save_snapshot(run, trainer.model, position.step, keep=None, folder=REPLAY_FOLDER)
    while position.step < settings.steps and (stop_after is None or steps_this_call < stop_after):
        position.epoch, position.index, batch = next(batches)
        loss, n_tokens = trainer.step(batch)
        steps_this_call, tokens_seen = steps_this_call + 1, tokens_seen + n_tokens
        if position.step in replayed:
            save_snapshot(run, trainer.model, position.step, keep=None, folder=REPLAY_FOLDER)
        if position.step % settings.log_every == 0 or position.step == settings.steps:
            now = time.time()
            position.elapsed += now - t0
            rate, lr, true_loss = tokens_seen / max(now - t0, 1e-9), trainer.recipe.learning_rate, loss.item()
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


def main(argv: list[str] | None = None) -> None:
    settings = parse_args(argv)
    torch.set_num_threads(cpu_threads(os.environ))
    summary = train(settings)
    if is_main_process():
        print(json.dumps({k: v for k, v in summary.items() if k != "model"}))
    leave_process_group()


if __name__ == "__main__":
    main()
