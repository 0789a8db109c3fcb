"""A stand-in for ZeroGPU, as `spaces` 0.51 runs a Space (spaces/zero/wrappers.py and spaces/zero/torch/patching.py),
for the tests: what a handler may and may not do there, checked on a CPU.

- `pack(registry)`: the models loaded before the app starts are packed away. In the page's process their weights
  are then on the "meta" device, so that any computation with them fails, as a disk-offloaded tensor does on ZeroGPU
  ("Cannot apply function … on disk-offloaded Tensor").
- `GPU(duration=…)`: a decorated call runs in a worker process forked for it, which gets the packed weights back.
  Its arguments are pickled into the worker, and its answer pickled back: what the worker changes (a global, a
  model, the explorer it was given) stays there.
"""

from __future__ import annotations

import functools
import multiprocessing
import pickle
import traceback
from collections.abc import Callable

import torch

from explorer import ModelRegistry

_FORK = multiprocessing.get_context("fork")
_in_worker = False
# Each packed weight: (module, "_parameters" or "_buffers", name) -> its values, which workers get back.
_packed: dict[tuple[torch.nn.Module, str, str], torch.Tensor] = {}
calls: list[tuple[str, float | None]] = []  # (handler, duration) of every call made in the page's process


class WorkerError(Exception):
    """A handler failed in the worker (on ZeroGPU: "ZeroGPU worker error")."""


def pack(registry: ModelRegistry) -> None:
    """Pack the registry's loaded models: their weights leave the page's process (each becomes a "meta" tensor)."""
    for checkpoint in registry._loaded.values():
        for module in checkpoint.model.modules():
            for kind in ("_parameters", "_buffers"):
                for name, tensor in getattr(module, kind).items():
                    if tensor is not None and (module, kind, name) not in _packed:
                        _packed[module, kind, name] = tensor
                        empty = torch.empty_like(tensor, device="meta")
                        kept = torch.nn.Parameter(empty, tensor.requires_grad) if kind == "_parameters" else empty
                        getattr(module, kind)[name] = kept


def unpack() -> None:
    """In a worker: the packed weights back in place (on ZeroGPU, moved onto the GPU)."""
    for (module, kind, name), tensor in _packed.items():
        getattr(module, kind)[name] = tensor


def unpack_all() -> None:
    """The end of a test: the weights back in the page's process too."""
    unpack()
    _packed.clear()


def GPU(task: Callable | None = None, *, duration: float | None = None) -> Callable:  # (named as spaces names it)
    """`spaces.GPU`, as it works on a ZeroGPU Space, with a worker forked for each call."""
    if task is None:
        return functools.partial(GPU, duration=duration)

    @functools.wraps(task)
    def on_worker(*args, **kwargs):
        if _in_worker:  # a decorated call inside another: spaces runs it where it is
            return task(*args, **kwargs)
        calls.append((task.__name__, duration))
        sent = pickle.dumps((args, kwargs))
        answer, end = _FORK.Pipe(duplex=False)
        worker = _FORK.Process(target=_work, args=(task, sent, end), daemon=True)
        worker.start()
        end.close()
        ok, value = pickle.loads(answer.recv_bytes())
        worker.join()
        if not ok:
            raise WorkerError(value)
        return value

    return on_worker


def _work(task: Callable, sent: bytes, end) -> None:
    global _in_worker
    _in_worker = True
    torch.set_num_threads(1)  # the parent's OpenMP threads are not in the fork: a pool of one needs none of them
    unpack()
    try:
        args, kwargs = pickle.loads(sent)
        answer = (True, task(*args, **kwargs))
        end.send_bytes(pickle.dumps(answer))
    except Exception:
        end.send_bytes(pickle.dumps((False, traceback.format_exc())))
