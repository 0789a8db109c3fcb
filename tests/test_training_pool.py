"""Training off the request path (explorer.training): runs trained by worker processes, one slot at a time, a queue
with places, pause and resume, a time budget, and runs that stop when their page is closed or their worker dies."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import pytest

from explorer.training import FAILED, FINISHED, PAUSED, QUEUED, STOPPED, TRAINING, TrainingPool, TrainingRun
from transformer.training.live import LiveSetup

pytestmark = pytest.mark.slow  # each pool starts worker processes

SETUP = LiveSetup(task="reverse", layers=1, heads=2, d_model=32, batch_size=32)


def wait_for(condition: Callable[[], bool], runs: list[TrainingRun], timeout: float = 60.0) -> None:
    """Wait until `condition` holds, keeping the runs' pages "open" meanwhile."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, [(run.status, run.step, run.message) for run in runs]
        for run in runs:
            run.last_seen = time.monotonic()
        time.sleep(0.05)


@pytest.fixture(scope="module")
def pool():
    """One worker, and a time budget that no test reaches but the one that spends a budget of its own: how many steps
    a second depends on the machine, and on what else it runs (a step count is never a timing here)."""
    pool = TrainingPool(slots=1, budget_s=120.0)
    yield pool
    pool.close()


def test_a_run_trains_in_a_worker_until_its_budget_is_spent(pool):
    run = pool.new_run(SETUP)
    run.budget_s = 3.0
    pool.start(run)
    wait_for(lambda: not run.active, [run])
    assert run.status == FINISHED and "time budget of 3 s" in run.message, run.message
    assert run.seconds >= 3.0 and run.step >= 5 and run.state is not None
    steps = [snapshot.step for snapshot in run.snapshots]
    assert steps[:5] == [0, 1, 2, 3, 4] and steps[-1] == run.step and steps == sorted(set(steps))
    kinds = {record["kind"] for record in run.records}
    assert kinds == {"train", "held_out"}
    assert [r["step"] for r in run.records] == sorted(r["step"] for r in run.records)
    assert run.probe is not None and run.probe.step == run.step
    with pytest.raises(ValueError, match="spent its time budget"):
        pool.start(run)


def test_one_run_trains_at_a_time_the_next_waits_its_turn_and_a_paused_run_resumes(pool):
    first, second = pool.new_run(SETUP), pool.new_run(dataclasses.replace(SETUP, seed=1))
    pool.start(first)
    pool.start(second)
    assert (pool.place(first), pool.place(second)) == (0, 1) and second.status == QUEUED
    wait_for(lambda: first.step >= 10, [first, second])
    pool.pause(first)
    wait_for(lambda: first.status == PAUSED and second.status == TRAINING, [first, second])
    paused_at, records = first.step, len(first.records)
    assert first.snapshots[-1].step == paused_at and first.state is not None
    pool.start(first)  # resumes behind the run now training
    assert pool.place(first) == 1
    pool.stop(second)
    wait_for(lambda: second.status == STOPPED and first.step > paused_at + 10, [first, second])
    resumed = [record["step"] for record in first.records[records:]]
    assert resumed and min(resumed) > paused_at  # it went on from where it was, not from the start
    pool.stop(first)
    wait_for(lambda: first.status == STOPPED, [first])


def test_a_run_whose_worker_dies_fails_and_the_queue_goes_on(pool):
    doomed, next_one = pool.new_run(SETUP), pool.new_run(SETUP)
    pool.start(doomed)
    pool.start(next_one)
    wait_for(lambda: doomed.step > 0, [doomed, next_one])
    next(worker for worker in pool.workers if worker.run is doomed).process.kill()
    wait_for(lambda: doomed.status == FAILED and next_one.step > 0, [doomed, next_one])
    assert "stopped unexpectedly" in doomed.message
    pool.stop(next_one)
    wait_for(lambda: next_one.status == STOPPED, [next_one])


def test_a_run_stops_when_its_page_is_closed():
    pool = TrainingPool(slots=1, budget_s=60.0, leave_after_s=1.5)
    try:
        run = pool.new_run(SETUP)
        pool.start(run)
        wait_for(lambda: run.step > 0, [run])  # the page asks for news while the worker starts
        deadline = time.monotonic() + 30
        while run.status != STOPPED:  # then nobody asks any more
            assert time.monotonic() < deadline, (run.status, run.message)
            time.sleep(0.1)
        assert run.message == "the page was closed"
    finally:
        pool.close()


def test_a_run_beyond_the_waiting_places_is_refused_with_a_message():
    """Issue 36 §5: the queue had no end; scripts that asked for news held the one slot 180 s each, in turn."""
    pool = TrainingPool(slots=1, budget_s=60.0, max_waiting=1)
    try:
        training, waiting, refused = (pool.new_run(dataclasses.replace(SETUP, seed=i)) for i in range(3))
        pool.start(training)
        wait_for(lambda: training.status == TRAINING, [training])
        pool.start(waiting)
        with pytest.raises(ValueError, match=r"every place to train is taken \(1 runs are waiting"):
            pool.start(refused)
        assert refused.status != QUEUED and pool.place(waiting) == 1
        pool.stop(waiting)
        pool.start(refused)  # a place came free
        assert pool.place(refused) == 1
    finally:
        pool.close()


def test_a_pages_train_clicks_run_one_at_a_time():
    """Issue 36 §5: four quick clicks of Train started four runs of one page (each click saw no run yet)."""
    import app

    start = next(fn for fn in app.demo.fns.values() if getattr(fn.fn, "__name__", "") == "start" or
                 fn.api_name == "start")  # fmt: skip
    assert (start.concurrency_id, start.concurrency_limit) == ("train-start", 1)
