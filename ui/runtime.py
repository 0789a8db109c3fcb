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

from explorer import Explorer
from explorer.i18n import DEFAULT, speaking

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
