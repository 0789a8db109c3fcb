"""Training off the request path: the users' runs of the Train tab, trained by worker processes, at most a few at a
time on the whole server.

A user's run (`TrainingRun`) lives in the server; it is trained by a worker process (`work`) that keeps the model,
the optimizer and the batches to itself and sends back what the page shows: the numbers of every few steps, the
probe's attention every few seconds, and snapshots. A worker runs at a lower priority than the server (`nice`), so
the students who step through a translation are served first, and with one thread.

`TrainingPool` holds `slots` workers (the most runs that train at once) and a queue of at most `max_waiting` runs: a
user whose run waits sees its place in it, and a run beyond it is refused with a message. A page has one run: a new
one stops its earlier one (`ui.tabs.train`, whose Train events run one at a time). Each run has a time budget; it
stops when the budget is spent, when the user pauses (its state comes back to the server, and any free worker resumes
it exactly), and when the user leaves: a page that has not asked for news of its run for `leave_after_s` seconds has
been closed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from transformer.training.live import NORM_POSITIONS as NORM_POSITIONS
from transformer.training.live import POSITIONAL_ENCODINGS as POSITIONAL_ENCODINGS
from transformer.training.live import (
    SNAPSHOT_LIMIT,
    LiveRun,
    LiveSetup,
    Snapshot,
    from_bytes,
    to_bytes,
)
from transformer.training.model_file import MAX_FILE_BYTES as MAX_FILE_BYTES
from transformer.training.model_file import SUFFIX as SUFFIX
from transformer.training.model_file import ModelFileError as ModelFileError
from transformer.training.model_file import read_model_path as read_model_path
from transformer.training.recipe import Probe, snapshot_steps, thinned
from transformer.training.toy_tasks import TOY_TASKS as TOY_TASKS

from .config import DEFAULTS
from .i18n import N_, _

# The names imported `as` themselves are the page's, taken from the training library through here: `ui/` imports no
# module of `transformer`.
ROOT = Path(__file__).resolve().parent.parent  # where `python -m explorer.training` finds the packages
# The pool's defaults; `app.py` gives it the server's configuration (`EXPLORER_TRAIN_SLOTS`, …).
SLOTS = DEFAULTS.train_slots  # runs that train at once, on the whole server
BUDGET_S = DEFAULTS.train_budget_s  # seconds of training a run may have
LEAVE_AFTER_S = 30.0  # a run whose page has not asked for news for this long has been left: it stops
# Runs that may wait for a worker at once: one more is refused with a message, not queued for an hour (a queue with
# no end let scripts that asked for news keep the one slot busy for 180 s each, in turn, for as long as they liked).
MAX_WAITING = DEFAULTS.train_queue
LOG_EVERY = 10  # steps a record of the training numbers sums up
EVAL_EVERY = 50  # steps between two evaluations on the held-out sequences (and at every snapshot)
PROBE_EVERY_S = 2.0  # seconds between two looks at the probe while training
WEIGHTS_BYTES = 32 * 2**20  # a run keeps the weights of as many snapshots as this holds (the last always)

READY, QUEUED, TRAINING, PAUSED = "ready", "queued", "training", "paused"
FINISHED, STOPPED, FAILED = "finished", "stopped", "failed"

# Why a run stopped, as the worker and the pool say it: a template and its values (a `Reason`), put into words where
# the page shows it (`TrainingRun.said`), in the language of the user who reads it. The worker process and the pool's
# threads speak no user's language.
Reason = tuple[str, dict]
BUDGET_SPENT = N_("the time budget of {seconds:.0f} s is spent")
CRASHED = N_("training failed: {error}")
WORKER_LOST = N_("the training process stopped unexpectedly")
PAGE_CLOSED = N_("the page was closed")


def worded(reason: Reason) -> str:
    """A reason in English (the run's `message`: the logs, the tests)."""
    template, values = reason
    return template.format(**values) if values else template


@dataclass
class TrainingRun:
    """A user's run, as the server holds it: its setup, where it is, and everything the page shows of it."""

    setup: LiveSetup
    budget_s: float = BUDGET_S
    status: str = READY
    step: int = 0
    seconds: float = 0.0  # of training so far
    records: list[dict] = field(default_factory=list)  # "train" and "held_out" numbers, in the order of steps
    snapshots: list[Snapshot] = field(default_factory=list)  # at most SNAPSHOT_LIMIT, spaced logarithmically
    probe: Probe | None = None  # the latest look at the probe
    state: bytes | None = None  # what resumes a paused run (`LiveRun.state_dict`)
    message: str = ""  # why the run stopped, when it did not finish on its own (in English)
    reason: Reason = ("", {})  # the same, to put into the reader's words (`said`)
    last_seen: float = field(default_factory=time.monotonic)
    version: int = 0  # counts the changes: a page redraws only what changed since it last looked
    id: int = field(default_factory=itertools.count(1).__next__)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def title(self) -> str:
        """What the run learns."""
        return self.setup.toy_task.title

    @property
    def look_for(self) -> str:
        """What to watch in its replay."""
        return self.setup.toy_task.look_for

    @property
    def shape(self) -> tuple[int, int]:
        """Its model's layers (a side) and heads."""
        return self.setup.layers, self.setup.heads

    downloadable = True  # its snapshots can be downloaded as model files

    def tell(self, template: str, **values) -> None:
        """Say why the run stopped: a template marked for the catalogs (`N_`) and its values."""
        self.reason = (template, values)
        self.message = worded(self.reason)

    def said(self) -> str:
        """Why the run stopped, in the language of the user who reads it; empty when it did not say."""
        template, values = self.reason
        if not template:
            return ""
        return _(template).format(**values) if values else _(template)

    @property
    def active(self) -> bool:
        """Waiting for a worker or training: the page keeps asking for news."""
        return self.status in (QUEUED, TRAINING)

    def receive(self, kind: str, payload: dict) -> None:
        """Take in a worker's message about this run."""
        with self.lock:
            self.version += 1
            self.step = payload.get("step", self.step)
            self.seconds = payload.get("seconds", self.seconds)
            if kind == "record":
                self.records.append(payload)
            elif kind == "probe":
                self.probe = payload["probe"]
            elif kind == "snapshot":
                self.probe = payload["probe"]
                weights = from_bytes(payload["weights"])
                self.add_snapshot(
                    Snapshot(payload["step"], payload["seconds"], weights, payload["probe"], payload["metrics"])
                )
            elif kind == "ended":
                self.state, self.status = payload["state"], payload["status"]
                if payload["message"]:  # else why it was stopped (`TrainingPool.halt`)
                    self.reason, self.message = payload.get("reason") or (payload["message"], {}), payload["message"]

    def add_snapshot(self, snapshot: Snapshot) -> None:
        """Keep `snapshot`: at most `SNAPSHOT_LIMIT` snapshots, spaced logarithmically, and the weights of as many
        of them as `WEIGHTS_BYTES` holds, spaced the same way (the others keep their probe, for the replay)."""
        snapshots = [s for s in self.snapshots if s.step != snapshot.step] + [snapshot]
        kept = set(thinned(sorted(s.step for s in snapshots), SNAPSHOT_LIMIT))
        snapshots = sorted((s for s in snapshots if s.step in kept), key=lambda s: s.step)
        size = sum(tensor.nbytes for tensor in snapshot.weights.values())
        weighed = [s.step for s in snapshots if s.weights]
        heavy = set(thinned(weighed, max(2, WEIGHTS_BYTES // max(size, 1))))
        self.snapshots = [s if s.step in heavy else dataclasses.replace(s, weights={}) for s in snapshots]


# --------------------------------------------------------------------------------------------------------
# The worker: a process of its own
# --------------------------------------------------------------------------------------------------------


def work(connection: Connection, threads: int = 1, niceness: int = 10) -> None:
    """A worker process: train the runs it is sent, one at a time, until told to quit."""
    os.nice(niceness)
    torch.set_num_threads(threads)
    while True:
        try:
            message = connection.recv()
        except EOFError:  # the server is gone
            return
        if message[0] == "quit":
            return
        if message[0] != "train":  # a pause or stop that crossed the end of its run
            continue
        _, run_id, setup, state, budget_s, seconds = message
        try:
            status, why, state = train(connection, run_id, LiveSetup.from_json(setup), state, budget_s, seconds)
        except Exception as error:  # the server must hear of any failure, or the user would wait forever
            status, why, state = FAILED, (CRASHED, {"error": f"{type(error).__name__}: {error}"}), state
        payload = {"status": status, "message": worded(why), "reason": why, "state": state}
        connection.send(("ended", run_id, payload))


def train(
    connection: Connection, run_id: int, setup: LiveSetup, state: bytes | None, budget_s: float, seconds: float
) -> tuple[str, Reason, bytes]:
    """Train one run until its budget is spent or the server says pause or stop; send its numbers, probes and
    snapshots on the way. Returns how it ended, why (a `Reason`), and its state."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    run = LiveRun(setup, device)
    if state is not None:
        run.load_state_dict(from_bytes(state))

    def send(message: str, **payload) -> None:
        connection.send((message, run_id, {"step": run.step, "seconds": round(seconds, 2), **payload}))

    schedule = (step for step in snapshot_steps() if step > run.step or step == run.step == 0)
    next_snapshot, window = next(schedule), []
    started = last_probe = window_start = time.perf_counter()
    before = seconds
    while True:
        seconds = before + time.perf_counter() - started
        if run.step == next_snapshot:
            snapshot(run, send, seconds)
            next_snapshot, last_probe = next(schedule), time.perf_counter()
        elif run.step % EVAL_EVERY == 0:
            send("record", kind="held_out", **run.evaluate())
        if time.perf_counter() - last_probe > PROBE_EVERY_S:
            send("probe", probe=run.probe())
            last_probe = time.perf_counter()
        order = connection.recv() if connection.poll() else None
        if order is not None and order[1] == run_id and order[0] in ("pause", "stop"):
            snapshot(run, send, seconds)  # the scrubber reaches the step it stopped at
            return (PAUSED if order[0] == "pause" else STOPPED), ("", {}), to_bytes(run.state_dict())
        if seconds >= budget_s:
            snapshot(run, send, seconds)
            return FINISHED, (BUDGET_SPENT, {"seconds": budget_s}), to_bytes(run.state_dict())
        window.append(run.train_step())
        if len(window) == LOG_EVERY:
            now = time.perf_counter()
            send("record", kind="train", **summed(window, now - window_start))
            window, window_start = [], now


def summed(window: list[dict], seconds: float) -> dict:
    """The training numbers of the steps in `window`, which took `seconds`: the mean loss and exact match, the
    learning rate of the last, and tokens a second (all the worker's time counted, evaluations and probes too)."""
    return {
        "loss": sum(record["loss"] for record in window) / len(window),
        "exact": sum(record["exact"] for record in window) / len(window),
        "lr": window[-1]["lr"],
        "tokens_per_s": sum(record["tokens"] for record in window) / max(seconds, 1e-9),
    }


def snapshot(run: LiveRun, send: Callable, seconds: float) -> None:
    """Evaluate on the held-out sequences, and send the numbers and a snapshot of this step."""
    evaluation = run.evaluate()
    send("record", kind="held_out", **evaluation)
    taken = run.snapshot(seconds, evaluation)
    send("snapshot", weights=to_bytes(taken.weights), probe=taken.probe, metrics=taken.metrics)


# --------------------------------------------------------------------------------------------------------
# The pool: the server's side
# --------------------------------------------------------------------------------------------------------


class Worker:
    """A worker process (`python -m explorer.training`, a fresh interpreter, never a copy of the server), its end of
    their pipe, and a thread that reads what it sends."""

    def __init__(self, pool: TrainingPool):
        self.pool, self.run = pool, None
        self.connection, child = Pipe()
        command = [sys.executable, "-m", "explorer.training", str(child.fileno())]
        self.process = subprocess.Popen(command, pass_fds=(child.fileno(),), cwd=ROOT)
        child.close()
        self.reader = threading.Thread(target=self.read, daemon=True, name="explorer-trainer")
        self.reader.start()

    def read(self) -> None:
        while True:
            try:
                kind, run_id, payload = self.connection.recv()
            except (EOFError, OSError):  # the worker is gone: its run failed
                self.pool.lost(self)
                return
            run = self.run
            if run is None or run.id != run_id:
                continue
            run.receive(kind, payload)
            if kind == "ended":
                self.pool.freed(self)

    def send(self, message: tuple) -> None:
        with contextlib.suppress(OSError):  # a worker that is gone: `read` hears of it
            self.connection.send(message)


class TrainingPool:
    """At most `slots` runs training at once, the others queued; see the module's docstring."""

    def __init__(
        self,
        slots: int = SLOTS,
        budget_s: float = BUDGET_S,
        leave_after_s: float = LEAVE_AFTER_S,
        max_waiting: int = MAX_WAITING,
    ):
        self.slots, self.budget_s, self.leave_after_s = max(1, slots), budget_s, leave_after_s
        self.max_waiting = max_waiting
        self.workers: list[Worker] = []
        self.queue: deque[TrainingRun] = deque()
        self.lock = threading.RLock()
        self.closed = False
        threading.Thread(target=self.watch, daemon=True, name="explorer-trainer-watch").start()

    def new_run(self, setup: LiveSetup) -> TrainingRun:
        return TrainingRun(setup, budget_s=self.budget_s)

    def start(self, run: TrainingRun) -> None:
        """Queue the run (a new one, or a paused one to resume) and start it when a worker is free."""
        with self.lock:
            if run.status in (QUEUED, TRAINING):
                return
            if run.seconds >= run.budget_s:
                spent = _("this run has spent its time budget ({seconds:.0f} s): reset it to start again")
                raise ValueError(spent.format(seconds=run.budget_s))
            if len(self.queue) >= self.max_waiting and not any(w.run is None for w in self.workers):
                full = _(
                    "every place to train is taken ({waiting} runs are waiting for the server's {slots}): try again "
                    "in a few minutes"
                )
                raise ValueError(full.format(waiting=len(self.queue), slots=self.slots))
            run.status, run.last_seen = QUEUED, time.monotonic()
            run.tell("")
            self.queue.append(run)
            self.dispatch()

    def pause(self, run: TrainingRun) -> None:
        self.halt(run, "pause", PAUSED)

    def stop(self, run: TrainingRun, message: str = "") -> None:
        """Stop the run for good (a reset, or the user left); `message`, why, is marked for the catalogs (`N_`)."""
        self.halt(run, "stop", STOPPED, message)

    def halt(self, run: TrainingRun, order: str, status: str, message: str = "") -> None:
        with self.lock:
            if run in self.queue:
                self.queue.remove(run)
                run.status = status
                run.tell(message)
                run.version += 1
                return
            worker = next((w for w in self.workers if w.run is run), None)
            if worker is not None:
                worker.send((order, run.id))
                run.tell(message)

    def place(self, run: TrainingRun) -> int:
        """The run's place in the queue (1 = next), 0 when it is not waiting."""
        with self.lock:
            return self.queue.index(run) + 1 if run in self.queue else 0

    def dispatch(self) -> None:
        """Give waiting runs to free workers, starting a worker where there are fewer than `slots`."""
        with self.lock:
            while self.queue and not self.closed:
                worker = next((w for w in self.workers if w.run is None), None)
                if worker is None and len(self.workers) < self.slots:
                    worker = Worker(self)
                    self.workers.append(worker)
                if worker is None:
                    return
                run = self.queue.popleft()
                worker.run, run.status = run, TRAINING
                run.version += 1
                message = ("train", run.id, run.setup.to_json(), run.state, run.budget_s, run.seconds)
                worker.send(message)

    def freed(self, worker: Worker) -> None:
        with self.lock:
            worker.run = None
            self.dispatch()

    def lost(self, worker: Worker) -> None:
        """A worker died (killed, or out of memory): its run failed, and a new worker takes the queue."""
        with self.lock:
            if worker.run is not None:
                worker.run.status = FAILED
                worker.run.tell(WORKER_LOST)
                worker.run.version += 1
            if worker in self.workers:
                self.workers.remove(worker)
            self.dispatch()

    def watch(self) -> None:
        """Stop the runs of users who left: their page stopped asking for news."""
        while not self.closed:
            time.sleep(min(5.0, self.leave_after_s / 3))
            now = time.monotonic()
            with self.lock:
                running = [w.run for w in self.workers if w.run is not None] + list(self.queue)
            for run in running:
                if now - run.last_seen > self.leave_after_s:
                    self.stop(run, PAGE_CLOSED)

    def warm(self) -> None:
        """Start the workers now, so that the first Train does not wait for a process to start."""
        with self.lock:
            while len(self.workers) < self.slots:
                self.workers.append(Worker(self))

    def close(self) -> None:
        with self.lock:
            self.closed = True
            workers = list(self.workers)
        for worker in workers:
            worker.send(("quit",))
        for worker in workers:
            try:
                worker.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                worker.process.kill()


if __name__ == "__main__":  # a worker: python -m explorer.training <its end of the pipe, inherited>
    work(Connection(int(sys.argv[1])))
