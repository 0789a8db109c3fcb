"""How every benchmark times and summarises: warmed-up repeats, ours and theirs taking turns, medians, percentiles."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch


def synchronize() -> None:
    """Wait until the GPU has done the work queued on it, where one is in use: a GPU's calls return before their work
    is done, so a timing ends here (on the CPU alone this does nothing)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def measure(run: Callable[[], object], repeats: int, warmup: int = 1) -> list[float]:
    """Seconds per call of `run` after warm-up; a `run` that returns a float has timed itself (to leave out its
    own set-up), and that number is used instead."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        inner = run()
        synchronize()
        times.append(inner if isinstance(inner, float) else time.perf_counter() - start)
    return times


def measure_pair(ours: Callable[[], object], theirs: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median seconds per call of each, taking turns (ours, theirs, ours, …) after one warm-up of each, so that a
    noisy minute on this shared virtual machine slows both sides alike instead of one."""
    ours_times, theirs_times = [], []
    for _ in range(repeats):
        ours_times += measure(ours, 1, warmup=0 if ours_times else 1)
        theirs_times += measure(theirs, 1, warmup=0 if theirs_times else 1)
    return statistics.median(ours_times), statistics.median(theirs_times)


def ratio(ours: float, theirs: float) -> float:
    """Ours / theirs, as the report writes it: below 1, ours is faster."""
    return round(ours / theirs, 3)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0…100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def summarise(name: str, values: list[float]) -> dict[str, Any]:
    """`name_median`, `name_p95` and the raw values `name_each`, rounded to 0.1."""
    if not values:
        return {f"{name}_median": None, f"{name}_p95": None, f"{name}_each": []}
    return {
        f"{name}_median": round(statistics.median(values), 1),
        f"{name}_p95": round(percentile(values, 95), 1),
        f"{name}_each": [round(v, 1) for v in values],
    }


def median_of(results: list[dict[str, Any]], key: str, digits: int = 1) -> float | None:
    """The median of `key` over the results that have it."""
    values = [r[key] for r in results if r.get(key) is not None]
    return round(statistics.median(values), digits) if values else None
