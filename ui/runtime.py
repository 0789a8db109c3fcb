"""How the page's handlers run: the queues, the GPU decorator, and one action at a time per user.

Quick events (Step, Back, Reset, a toggle) and long ones (Run and the whole-sentence comparisons) wait in
separate queues, so that many users at once are served fairly: a step never waits behind a long Run. A Run stops
after `RUN_BUDGET_S` seconds with a message.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

from explorer import Explorer
from explorer.config import DEFAULTS, Config
from explorer.i18n import DEFAULT, _, speaking
from explorer.training import MAX_FILE_BYTES

from .gradio_patch import block_id, is_block

# The largest upload the server takes (gradio's `max_file_size`): a model file's own limit. A larger one is refused
# with 413 while it arrives, before it is read whole or kept in the upload folder.
MAX_UPLOAD_BYTES = MAX_FILE_BYTES
# The server's configuration sets these (`configure`); a page built without it has the defaults.
QUICK_CONCURRENCY = DEFAULTS.quick_concurrency
LONG_CONCURRENCY = DEFAULTS.long_concurrency
RUN_BUDGET_S = DEFAULTS.run_budget_s

# A step answers in well under a second: no loading overlay on the outputs (putting it up and taking it down cost
# the browser more than the figures).
QUICK = {"show_progress": "hidden", "concurrency_id": "quick", "concurrency_limit": QUICK_CONCURRENCY}
LONG = {"concurrency_id": "long", "concurrency_limit": LONG_CONCURRENCY}


# How long (seconds) a handler may hold a ZeroGPU GPU: `@spaces.GPU(duration=…)`. A shorter one waits less in a busy
# ZeroGPU queue. Quick: a Step, a view (a GPU does it in milliseconds; the rest is the worker starting). Long: a
# whole-sentence comparison, a trained model explored. A Run asks for its time one chunk at a time (`RUN_CHUNK_S`).
QUICK_GPU_S = 15
LONG_GPU_S = 60


# What puts a handler on the GPU: `spaces.GPU` where the `spaces` package is installed (outside a ZeroGPU Space it
# returns the handler itself), else nothing; and whether a handler runs apart from the page's process, on copies of
# its arguments: on a ZeroGPU Space, which sets `SPACES_ZERO_GPU` (`uses_gpu`). Tests put `tests.zerogpu`'s worker
# here, a stand-in for ZeroGPU's.
try:
    import spaces  # type: ignore[import-not-found]
    from spaces.config import Config as SpacesConfig  # type: ignore[import-not-found]

    GPU: Callable[..., Callable] | None = spaces.GPU
    APART = SpacesConfig.zero_gpu
except ImportError:
    GPU, APART = None, False
# A Run's steps are taken in chunks of this many seconds, each chunk a call on the GPU (`ui.decoding`): on ZeroGPU
# each call has its cost (the GPU is asked for, the worker woken), so a chunk holds many tokens; elsewhere one token.
ZEROGPU_RUN_CHUNK_S = 0.5


def placed_run_chunk_s() -> float:
    """A Run's chunk where `EXPLORER_RUN_CHUNK_S` does not set it: by the place the app runs in."""
    return ZEROGPU_RUN_CHUNK_S if APART else 0.0


RUN_CHUNK_S = placed_run_chunk_s()


def configure(config: Config) -> None:
    """Take the server's configuration (`app.py` reads it, `ui.page.build_page` hands it here before the page's
    events are made): how many quick and long events run at once, a Run's budget and its chunks."""
    global QUICK_CONCURRENCY, LONG_CONCURRENCY, RUN_BUDGET_S, RUN_CHUNK_S
    QUICK_CONCURRENCY = QUICK["concurrency_limit"] = config.quick_concurrency
    LONG_CONCURRENCY = LONG["concurrency_limit"] = config.long_concurrency
    RUN_BUDGET_S = config.run_budget_s
    RUN_CHUNK_S = config.run_chunk_s if config.run_chunk_s is not None else placed_run_chunk_s()


# The page's components by their ids (`gradio_patch.block_id`): a handler that runs apart answers with ids, which
# `uses_gpu` turns back into components (a component cannot be pickled: it belongs to the page).
_COMPONENTS: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def know_components(components: Iterable[Any]) -> None:
    """Remember the page's components by their ids (`build_page` calls this once the page is built)."""
    _COMPONENTS.update({block_id(component): component for component in components})


@dataclass(frozen=True)
class Answer:
    """A handler's answer keyed by its components' ids, which can be pickled (a ZeroGPU worker sends its answer
    back pickled)."""

    values: dict[int, Any]


def portable(result: Any) -> Any:
    """`result` as it can cross from a ZeroGPU worker: a dict of components becomes an `Answer`."""
    if isinstance(result, dict) and result and all(is_block(key) for key in result):
        return Answer({block_id(component): value for component, value in result.items()})
    return result


def restored(result: Any, explorer: Explorer | None = None) -> Any:
    """`portable(result)` as gradio takes it, with the components again. `explorer`: where the handler ran apart, on
    a copy of the user's explorer, that explorer. The copy the handler answers with (in a dict or a tuple) is taken
    into it (`Explorer.adopt`), and it stays the one the page holds: the next action starts where this one ended, and
    Stop finds the Run it stops."""

    def taken_in(value: Any) -> Any:
        if explorer is not None and isinstance(value, Explorer) and value is not explorer:
            explorer.adopt(value)
            return explorer
        return value

    if isinstance(result, tuple):
        return tuple(taken_in(value) for value in result)
    if isinstance(result, Answer):
        return {_COMPONENTS[key]: taken_in(value) for key, value in result.values.items()}
    return result


def uses_gpu(handler: Callable, seconds: int = QUICK_GPU_S, hold: bool = True) -> Callable:
    """`handler`, a page's handler that runs a model, put on the GPU: on a ZeroGPU Space, `@spaces.GPU(duration=
    seconds)` runs it in a worker process that holds the GPU, on pickled copies of its arguments, and pickles its
    answer back (https://huggingface.co/docs/hub/spaces-zerogpu). There `hold`: the user's explorer is held
    (`Explorer.lock`) from the copy until the answer is taken in, so two events of one user still follow each other;
    a comparison that does not change the explorer need not hold it. Elsewhere `spaces.GPU` (when installed) returns
    the handler itself, and only the answer's round trip through `portable` and `restored` remains.

    A generator is refused: on ZeroGPU it would run whole in the worker, out of reach of Stop (`ui.decoding` runs
    a Run as a generator of GPU calls instead)."""
    if inspect.isgeneratorfunction(handler) or inspect.iscoroutinefunction(handler):
        raise TypeError(f"{handler.__name__}: put the steps of a generator on the GPU, not the generator")

    def apart(*args, **kwargs):
        with reduced():
            return portable(handler(*args, **kwargs))

    functools.update_wrapper(apart, handler)
    on_gpu = GPU(duration=seconds)(apart) if GPU is not None else apart
    ran_apart = APART

    @functools.wraps(handler)
    def gpu_handler(*args, **kwargs):
        explorer = next((arg for arg in args if isinstance(arg, Explorer)), None) if ran_apart else None
        with explorer.lock if explorer is not None and hold else contextlib.nullcontext():
            return restored(on_gpu(*args, **kwargs), explorer)

    gpu_handler.on_gpu = on_gpu  # type: ignore[attr-defined]  (what runs on the GPU: the tests look at it)
    return gpu_handler


@contextlib.contextmanager
def one_at_a_time(explorer: Any, language: str | None = None):
    """Hold the user's explorer for one action, which speaks the user's language (`explorer.i18n.speaking`): a
    page's events can run in parallel (the quick and long queues). `language`: the one the action's settings send
    (the page's switch, which the explorer takes during the action), else the explorer's. Nothing to hold before the
    user has an explorer."""
    if not isinstance(explorer, Explorer):
        with speaking(language or DEFAULT):
            yield
        return
    with explorer.lock, speaking(language or explorer.state.language):
        yield


def chosen_device(asked: str = "") -> str:
    """The device the models run on: `asked` (the configuration's `EXPLORER_DEVICE`: "cpu", "cuda", "cuda:1")
    where it is set, else a CUDA GPU where PyTorch sees one, else the CPU. A device that cannot be had stops the app
    with a message saying why, rather than failing at the first Step."""
    asked = asked.strip().lower()
    if not asked:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(asked)
    except RuntimeError:
        raise SystemExit(
            f"EXPLORER_DEVICE={asked!r} is not a device: choose cpu or cuda (cuda:1 a second GPU)"
        ) from None
    if device.type not in ("cpu", "cuda"):
        raise SystemExit(f"EXPLORER_DEVICE={asked!r}: the app runs on cpu or cuda")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"EXPLORER_DEVICE={asked!r}, but PyTorch sees no CUDA GPU here: unset it to run on the CPU")
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise SystemExit(f"EXPLORER_DEVICE={asked!r}, but there are {torch.cuda.device_count()} CUDA GPUs here")
    return str(device)


# The precisions a user may ask for (`EXPLORER_PRECISION`), by name and by short name.
PRECISIONS = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
SHORT_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
# What the handlers compute in (`reduced`): None for float32, else (device type, dtype). `app.py` sets it.
PRECISION: tuple[str, torch.dtype] | None = None


def chosen_precision(device: str, asked: str = "") -> torch.dtype:
    """The precision the models decode in and draw the views in: `asked` (the configuration's
    `EXPLORER_PRECISION`: float32, bfloat16 or float16, or fp32, bf16, fp16), else float32. Reduced, it is
    `torch.autocast`'s: the weights stay float32, the matrix products are rounded (docs/deployment.md says by how
    much); Inside a step stays float32 (`transformer.worked`). One the device cannot compute in stops the app."""
    asked = asked.strip().lower() or "float32"
    name = SHORT_NAMES.get(asked, asked)
    if name not in PRECISIONS:
        raise SystemExit(f"EXPLORER_PRECISION={asked!r}: choose float32, bfloat16 or float16")
    if name == "float16" and not device.startswith("cuda"):
        raise SystemExit("EXPLORER_PRECISION=float16 is for a GPU: on the CPU choose bfloat16 or float32")
    if name == "bfloat16" and device.startswith("cuda") and not torch.cuda.is_bf16_supported():
        raise SystemExit("EXPLORER_PRECISION=bfloat16: this GPU cannot compute in it; choose float16 or float32")
    return PRECISIONS[name]


def reduced() -> contextlib.AbstractContextManager:
    """Where a handler computes: in `PRECISION` when it is reduced (`torch.autocast`), else as the weights are."""
    if PRECISION is None:
        return contextlib.nullcontext()
    device_type, dtype = PRECISION
    return torch.autocast(device_type, dtype=dtype)


def device_said(device: str) -> str:
    """Which device the model runs on, and in which precision when it is not float32 (`PRECISION`, which reduces
    only what runs on its device type), as the page says it (in the user's language)."""
    if not device.startswith("cuda"):
        said = _("Runs on the CPU.")
    else:
        said = _("Runs on a GPU: {name} ({device}).").format(name=torch.cuda.get_device_name(device), device=device)
    if PRECISION is not None and PRECISION[0] == torch.device(device).type:
        said = _("{said} Computes in {precision}; Inside a step in float32.").format(
            said=said, precision=str(PRECISION[1]).removeprefix("torch.")
        )
    return said
