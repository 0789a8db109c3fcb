"""The Train tab's speed, through the page: how soon a run reaches its target after Train is pressed, and how many
target tokens a second the page's worker trains against the same run stepped alone in one process.

    python -m benchmarks.train_tab                      # reverse (3 seeds, ≥ 99%) and numbers-de (≥ 95%)
    python -m benchmarks.train_tab --quick              # one reverse run to 90%

The app runs in its own process (`python app.py`). A client speaks the page's protocol as the browser does
(`benchmarks.classroom`): it opens the Train tab, sets the task and seed, presses Train, and asks for news every second,
as the page's timer does. The time to target is from pressing Train to the first answer whose
numbers show the held-out exact match at or above the target (the worker evaluates it every 50 steps, on 200
sequences, greedy).

Throughput: the first reverse run goes on to `--train-s` seconds of training and is paused; its steps give the
target tokens it trained (the batches follow from the seed and the step, so they are counted here exactly), over
the seconds the worker reports. The same number of steps of the same run (`LiveRun.train_step`, one thread, the same
batches and weights), stepped alone in this process, is the library's own rate: the difference is the page's
overhead (evaluations, looks at the probe, snapshots, and the messages to the server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
import uuid
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx
import torch

from benchmarks.classroom import PageEvents, answer_of, page_cookies
from benchmarks.real_app import App
from transformer.training.batches import collate
from transformer.training.live import LiveRun, LiveSetup
from transformer.training.settings import PAD

POLL_S = 1.0  # as often as the page asks (`ui.tabs.train.POLL_S`)
EXACT = re.compile(r"held-out exact match ([\d.]+)%")
STEP_AND_SECONDS = re.compile(r"step ([\d,]+) · (\d+) s of")


class Session:
    """One browser's session on the page, with the Train tab's task and seed set."""

    def __init__(self, url: str, page: PageEvents, http: httpx.AsyncClient, task: str, seed: int):
        self.url, self.page, self.http = url, page, http
        self.values = {"train-task": task, "train-seed": seed}
        self.session, self.headers = uuid.uuid4().hex, {}

    async def call(self, dependency: dict) -> dict:
        page = self.page
        data = [self.values.get(page.elem_id(i), page.first_value(i)) for i in dependency["inputs"]]
        outputs = await answer_of(self.http, self.url, self.session, dependency, data, self.headers)
        return {page.elem_id(i): value for i, value in zip(dependency["outputs"], outputs, strict=True)}

    async def open(self) -> None:
        self.headers = await page_cookies(self.http, self.url)
        await self.call(self.page.event("source-text", "submit"))
        await self.call(self.page.event("train", "select"))

    async def numbers(self) -> str | None:
        """The run's numbers in words, when the answer to a poll has new ones."""
        numbers = (await self.call(self.page.ticks[0])).get("train-numbers")
        return numbers if isinstance(numbers, str) else None


async def time_to_target(session: Session, target: float, limit_s: float, train_s: float = 0.0) -> dict[str, Any]:
    """Press Train; the seconds until the numbers show the held-out exact match ≥ `target` (%). With `train_s`, go
    on to that many seconds of training, then pause; the step and the seconds the run reached."""
    await session.open()
    started = time.perf_counter()
    await session.call(session.page.event("train-start", "click"))
    result: dict[str, Any] = {"target_pct": target, "reached_s": None}
    step = seconds = 0
    while time.perf_counter() - started < max(limit_s, train_s + 10):
        await asyncio.sleep(POLL_S)
        numbers = await session.numbers()
        if numbers is None:
            continue
        found = STEP_AND_SECONDS.search(numbers)
        if found:
            step, seconds = int(found.group(1).replace(",", "")), int(found.group(2))
        exact = EXACT.search(numbers)
        if result["reached_s"] is None and exact and float(exact.group(1)) >= target:
            result |= {"reached_s": round(time.perf_counter() - started, 1), "step": step, "train_s": seconds}
        if result["reached_s"] is not None and seconds >= train_s:
            break
    await session.call(session.page.event("train-pause", "click"))
    while True:  # the worker hands the run back after the step it is in
        await asyncio.sleep(POLL_S)
        numbers = await session.numbers()
        if numbers and "Paused" in numbers:
            found = STEP_AND_SECONDS.search(numbers)
            step, seconds = (int(found.group(1).replace(",", "")), int(found.group(2))) if found else (step, seconds)
            break
    return result | {"final_step": step, "final_train_s": seconds}


def tokens_of(setup: LiveSetup, steps: int) -> int:
    """The target tokens of the batches of steps 1 … `steps` of a run (they follow from the seed and the step)."""
    run = LiveRun(setup)
    return sum(int((collate(run.batch(k), "cpu")[2] != PAD).sum()) for k in range(1, steps + 1))


def alone(setup: LiveSetup, steps: int) -> dict[str, float]:
    """The same run stepped `steps` times in this process, one thread, nothing else: target tokens a second."""
    torch.set_num_threads(1)
    run = LiveRun(setup)
    tokens, started = 0, time.perf_counter()
    for _ in range(steps):
        tokens += run.train_step()["tokens"]
    seconds = time.perf_counter() - started
    return {"steps": steps, "seconds": round(seconds, 1), "tokens_per_s": round(tokens / seconds)}


async def through_the_page(url: str, runs: list[tuple[str, int, float, float]], train_s: float) -> list[dict]:
    no_cookies = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
    async with httpx.AsyncClient(timeout=httpx.Timeout(120), cookies=no_cookies) as http:
        page = PageEvents((await http.get(f"{url}config")).json())
        results = []
        for i, (task, seed, target, limit_s) in enumerate(runs):
            session = Session(url, page, http, task, seed)
            timed = await time_to_target(session, target, limit_s, train_s if i == 0 else 0.0)
            results.append({"task": task, "seed": seed, **timed})
        return results


def run(runs: list[tuple[str, int, float, float]], train_s: float) -> dict[str, Any]:
    app = App()
    app.start()
    try:
        time.sleep(5)  # the worker the app starts (`TrainingPool.warm`) is ready
        results = asyncio.run(through_the_page(app.url, runs, train_s))
    finally:
        app.close()
    first = results[0]
    setup = LiveSetup(task=first["task"], seed=first["seed"])
    page_rate = tokens_of(setup, first["final_step"]) / max(first["final_train_s"], 1)
    library = alone(setup, first["final_step"])
    return {
        "runs": results,
        "throughput": {
            "task": first["task"],
            "steps": first["final_step"],
            "page_tokens_per_s": round(page_rate),
            "alone_tokens_per_s": library["tokens_per_s"],
            "page_overhead_pct": round(100 * (1 - page_rate / library["tokens_per_s"]), 1),
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.train_tab", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="seeds of the reverse runs")
    parser.add_argument("--train-s", type=float, default=60, help="training seconds of the throughput run")
    parser.add_argument("--quick", action="store_true", help="one reverse run to 90%%, 20 s of training")
    args = parser.parse_args(argv)
    if args.quick:
        runs, train_s = [("reverse", 1, 90.0, 90.0)], 20.0
    else:
        runs = [("reverse", seed, 99.0, 120.0) for seed in args.seeds] + [("numbers-de", 1, 95.0, 240.0)]
        train_s = args.train_s
    print(json.dumps(run(runs, train_s), indent=2))


if __name__ == "__main__":
    main()
