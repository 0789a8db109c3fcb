"""What two users would compute alike, computed once: a bounded cache shared by every session of the app.

The models are shared read-only, so the expensive part of a view depends only on its inputs: the model, the
source ids, the decoder's input so far and the switches (masks, silenced heads, positions). A class that steps
through the same example sentences asks for the same forward passes and worked steps again and again; the cache
answers them from memory. It is bounded by memory (`EXPLORER_CACHE_MB`, default 128 MB; 0 switches it off), drops
the least recently used entries first, and counts its hits and misses (the classroom benchmark reports them).

Every value in it is shared by every user who asks for the same key: it must never be changed after it is made
(the tensors of a `StepSnapshot` or a `WorkedStep` are only read).
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import torch

from .config import DEFAULTS

T = TypeVar("T")


def size_of(value: Any, _depth: int = 0) -> int:
    """About how many bytes `value` holds: its tensors and arrays, its strings, and what its dataclasses, tuples,
    lists and dicts hold (to a depth of 6), plus 64 bytes for every object."""
    if isinstance(value, torch.Tensor):
        return value.element_size() * value.nelement() + 64
    if hasattr(value, "nbytes") and not isinstance(value, type):  # numpy arrays
        return int(value.nbytes) + 64
    if isinstance(value, str | bytes):
        return len(value) + 64
    if _depth > 6:
        return 64
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return 64 + sum(size_of(getattr(value, f.name), _depth + 1) for f in dataclasses.fields(value))
    if isinstance(value, dict):
        return 64 + sum(size_of(k, _depth + 1) + size_of(v, _depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return 64 + sum(size_of(item, _depth + 1) for item in value)
    return 64


class SharedCache:
    """A thread-safe least-recently-used cache bounded by the bytes its values hold (`size_of`)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value for `key`, computed by `compute()` the first time (outside the lock: two users asking at the
        same moment may both compute it, which is harmless, and nobody waits for another's computation)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[0]
            self.misses += 1
        value = compute()
        size = size_of(value)
        if size > self.max_bytes:
            return value
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, size)
                self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.bytes -= dropped
        return value

    def stats(self) -> dict[str, float]:
        """Hits, misses, the hit rate, the number of entries and the megabytes they hold."""
        with self._lock:
            asked = self.hits + self.misses
            return {
                "hits": self.hits,
                "misses": self.misses,
                "hit_rate": round(self.hits / asked, 4) if asked else 0.0,
                "entries": len(self._entries),
                "mb": round(self.bytes / 2**20, 2),
                "max_mb": round(self.max_bytes / 2**20, 2),
            }


_identities: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_next_identity = itertools.count()
_identity_lock = threading.Lock()


def identity(model: Any) -> int:
    """A number for `model` that no other object is ever given, for the keys of the cache: two models of the same
    name (a model loaded again, or two registries) are different computations, and `id()` is reused once an object
    is gone."""
    with _identity_lock:
        if model not in _identities:
            _identities[model] = next(_next_identity)
        return _identities[model]


# Its size is the server's configuration's (`app.py` sets `max_bytes` from `EXPLORER_CACHE_MB` before the first use).
SHARED = SharedCache(int(DEFAULTS.cache_mb * 2**20))
