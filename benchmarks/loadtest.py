"""A load test: simulated users against the real app on loopback, through gradio_client.

    python -m benchmarks.loadtest            # 20 users for 3 minutes (the figures in the README)
    python -m benchmarks.loadtest --quick    # 4 users for 15 seconds (CI)

The app runs in its own process (`python app.py`, as a user starts it). Each simulated user is its own
`gradio_client.Client`, so it has its own session and its own explorer on the server, and does what a student
does: pick a model and a sentence, step, toggle the masks and positions, look at another attention family, run to
the end, step back, reset, again and again, through the same events the page uses (`/apply`, `/step`, `/run`,
`/back`, `/reset`). Every answer is checked: the output text a user sees must be exactly what the same actions
give alone (computed beforehand, one user at a time), so crossed sessions count as errors too.

Reported: requests served, errors (target 0), median and p95 latency per kind of request, and the app's resident
memory before, during (a timeline, every tenth of the test) and after: it must level off, not grow by a little
with every request.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

from .app_bench import App, percentile

SENTENCES = {
    "en-de": ["The weather is nice today.", "Where is the train station?", "Can you help me?"],
    "numbers-de": ["twenty-one", "ninety-seven", "three hundred and forty-two"],
}

# Where an event's answer holds the message line and the output so far: the page lists its outputs panel by panel
# (`ui.page.Page.outputs`), the sentence panel's pieces, examples, model, model description and sentence before the
# decoding panel's message line and output; the user's explorer (a gr.State) is not sent to clients.
# tests/test_app.py checks them.
STATUS, OUTPUT = 5, 6


@dataclass(frozen=True)
class Settings:
    """The page's settings, in the order its events take them (`ui.settings.Settings`)."""

    model: str
    source: str
    causal: bool = True
    padding: bool = True
    positions: bool = True
    family: str = "cross"

    def values(self) -> list:
        return [self.model, self.source, "greedy", 1.0, 0, 1.0, 0, 4, 64, self.causal, self.padding, self.positions,
                0, [], self.family, 0, "average", "heatmap", False, "decoder.self_attention", 0, 0, 0]  # fmt: skip


def output_text(result: tuple) -> str:
    """The "output so far" textbox among an event's outputs (`OUTPUT`)."""
    return result[OUTPUT]


class User(threading.Thread):
    """One student: a loop of the page's actions until the deadline; every answer checked against `expected`."""

    def __init__(self, url: str, index: int, deadline: float, expected: dict, record):
        super().__init__(daemon=True)
        self.url, self.deadline, self.expected, self.record = url, deadline, expected, record
        self.rng = random.Random(index)

    def call(self, endpoint: str, settings: Settings, check: str | None = None) -> tuple | None:
        start = time.perf_counter()
        try:
            result = self.client.predict(*settings.values(), api_name=endpoint)
        except Exception as error:  # any failure is what a load test counts
            self.record(endpoint, time.perf_counter() - start, f"{type(error).__name__}: {error}")
            return None
        problem = None
        if check is not None and output_text(result) != check:
            problem = f"{endpoint}: expected {check!r}, got {output_text(result)!r}"
        self.record(endpoint, time.perf_counter() - start, problem)
        return result

    def run(self) -> None:
        from gradio_client import Client

        self.client = Client(self.url, verbose=False)
        while time.time() < self.deadline:
            model = self.rng.choice(list(SENTENCES))
            settings = Settings(model, self.rng.choice(SENTENCES[model]))
            first, full = self.expected[(settings.model, settings.source)]
            self.call("/apply", settings, check="")
            self.call("/step", settings, check=first)
            toggled = Settings(settings.model, settings.source, causal=False, positions=self.rng.random() < 0.5,
                               family=self.rng.choice(["encoder", "decoder_self", "cross"]))  # fmt: skip
            self.call("/apply", toggled)  # the decoding itself is causal: the output stays the same
            self.call("/back", toggled, check="")
            self.call("/run", settings, check=full)
            self.call("/reset", settings, check="")


def expected_outputs() -> dict[tuple[str, str], tuple[str, str]]:
    """(model, sentence) -> (the text after one step, the whole translation), one user at a time, in-process."""
    from pathlib import Path

    from explorer import Explorer, ExplorerState, ModelRegistry

    registry = ModelRegistry(Path(__file__).resolve().parent.parent / "checkpoints")
    expected = {}
    for model, sentences in SENTENCES.items():
        for sentence in sentences:
            explorer = Explorer(registry, ExplorerState(model=model, source=sentence))
            explorer.step()
            first = explorer.views().output_text
            list(explorer.run())
            expected[(model, sentence)] = (first, explorer.views().output_text)
    return expected


def load_test(*, users: int, seconds: float) -> dict:
    """Start the app, run `users` simulated users for `seconds`, and return the numbers."""
    expected = expected_outputs()
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    lock = threading.Lock()

    def record(endpoint: str, seconds_taken: float, problem: str | None) -> None:
        with lock:
            latencies[endpoint].append(seconds_taken)
            if problem:
                errors.append(problem)

    app = App()
    try:
        ready_s = app.start()
        from gradio_client import Client

        warm = Client(app.url, verbose=False)  # load the built-in models before measuring memory
        for model, sentences in SENTENCES.items():
            warm.predict(*Settings(model, sentences[0]).values(), api_name="/step")
        before = app.memory_mb()
        deadline = time.time() + seconds
        crowd = [User(app.url, i, deadline, expected, record) for i in range(users)]
        started = time.perf_counter()
        timeline = [(0.0, before["VmRSS"])]
        for user in crowd:
            user.start()
        while any(user.is_alive() for user in crowd) and time.perf_counter() - started < seconds + 300:
            time.sleep(min(1.0, seconds / 20))
            if time.perf_counter() - started >= timeline[-1][0] + seconds / 10:
                timeline.append((round(time.perf_counter() - started, 1), app.memory_mb()["VmRSS"]))
        elapsed = time.perf_counter() - started
        after = app.memory_mb()
        if any(user.is_alive() for user in crowd):
            errors.append("a user was still waiting for an answer long after the deadline")
    finally:
        app.close()

    every = [t for values in latencies.values() for t in values]
    return {
        "users": users,
        "seconds": round(elapsed, 1),
        "ready_s": round(ready_s, 2),
        "requests": len(every),
        "requests_per_s": round(len(every) / elapsed, 2),
        "errors": len(errors),
        "first_errors": errors[:5],
        "latency_ms": {
            endpoint: {
                "requests": len(values),
                "median": round(1000 * statistics.median(values), 1),
                "p95": round(1000 * percentile(values, 95), 1),
            }
            for endpoint, values in sorted(latencies.items())
        },
        "rss_before_mb": before["VmRSS"],
        "rss_after_mb": after["VmRSS"],
        "peak_mb": after["VmHWM"],
        "rss_timeline_mb": timeline,  # (seconds into the test, resident MiB): does it level off?
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loadtest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 users for 15 seconds")
    parser.add_argument("--users", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=None)
    args = parser.parse_args(argv)
    users = args.users or (4 if args.quick else 20)
    seconds = args.seconds or (15 if args.quick else 180)
    print(json.dumps(load_test(users=users, seconds=seconds), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
