"""How the page's handlers run: the queues, the GPU decorator, and one action at a time per user.

Quick events (Step, Back, Reset, a toggle) and long ones (Run and the whole-sentence comparisons) wait in
separate queues, so that many users at once are served fairly: a step never waits behind a long Run. A Run stops
after `RUN_BUDGET_S` seconds with a message.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

import torch

from explorer import Explorer
from explorer.i18n import DEFAULT, _, speaking

QUICK_CONCURRENCY = int(os.environ.get("EXPLORER_QUICK_CONCURRENCY", 2))
LONG_CONCURRENCY = int(os.environ.get("EXPLORER_LONG_CONCURRENCY", 1))
RUN_BUDGET_S = float(os.environ.get("EXPLORER_RUN_BUDGET_S", 30))

# A step answers in well under a second: no loading overlay on the outputs (putting it up and taking it down cost
# the browser more than the figures).
QUICK = {"show_progress": "hidden", "concurrency_id": "quick", "concurrency_limit": QUICK_CONCURRENCY}
LONG = {"concurrency_id": "long", "concurrency_limit": LONG_CONCURRENCY}


def uses_gpu(handler: Callable) -> Callable:
    """The handler, decorated with `@spaces.GPU` on a Hugging Face ZeroGPU Space; as it is everywhere else."""
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return handler
    return spaces.GPU(handler)


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


def chosen_device(asked: str | None = None) -> str:
    """The device the models run on: `asked` (by default the environment's `EXPLORER_DEVICE`: "cpu", "cuda",
    "cuda:1") where it is set, else a CUDA GPU where PyTorch sees one, else the CPU. A device that cannot be had
    stops the app with a message saying why, rather than failing at the first Step."""
    asked = (os.environ.get("EXPLORER_DEVICE", "") if asked is None else asked).strip().lower()
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


def device_said(device: str) -> str:
    """Which device the models run on, as the page says it (in the user's language)."""
    if not device.startswith("cuda"):
        return _("Runs on the CPU.")
    return _("Runs on a GPU: {name} ({device}).").format(name=torch.cuda.get_device_name(device), device=device)
