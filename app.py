"""Transformer Explorer: watch an encoder–decoder Transformer translate, step by step. Run `python app.py`.

The page is built by `ui.page.build_demo`, one module of `ui/` per panel; the models (the built-in ones in
`checkpoints/`, and opus-mt models from the Hugging Face Hub on demand) are loaded once and shared read-only by
every user.
"""

from __future__ import annotations

# On a ZeroGPU Space, `spaces` must be imported before anything initialises CUDA (torch included); it is optional
# everywhere else, where its decorator does nothing (docs/deployment.md).
try:
    import spaces  # type: ignore[import-not-found]

    spaces.disable_gradio_auto_wrap()  # the page puts on the GPU the handlers that run a model, and only those
except ImportError:
    pass

import contextlib
import ctypes
import os
from pathlib import Path

from explorer.config import Config, ConfigError

# Every setting of the server, read from the environment once (explorer/config.py lists them, docs/deployment.md too);
# a value the server cannot take stops it with a message naming the variable, before Gradio is imported (2 s).
try:
    CONFIG = Config.from_environ(os.environ)
except ConfigError as error:
    raise SystemExit(str(error)) from None

import gradio as gr
import torch

from explorer import ModelRegistry, cache
from explorer.classroom import Classroom
from explorer.training import TrainingPool
from ui import (
    browser_internals,
    class_events,
    class_follow,
    class_panel,
    decoding,
    fonts,
    handout,
    i18n,
    plot,
    runtime,
    web,
)
from ui.page import build_demo

ROOT = Path(__file__).resolve().parent


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Like `MALLOC_ARENA_MAX=2`: glibc gives threads that allocate at once their own memory arenas (up to 8 per
    core), and the fragments left in them made the app grow under many users, about 20 KB per request with no
    end in sight. With two arenas it levels off (see docs/loadtest.json). Nothing happens without glibc."""
    if CONFIG.malloc_arena_max is not None:  # glibc read it itself
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # -8 is M_ARENA_MAX in malloc.h


limit_malloc_arenas()
# One thread per request by default: a class sends many requests at once, and the built-in models are small. With two
# threads a Step was no faster and cost more CPU (the classroom benchmark, one student alone: 23.2 against 17.3 ms of
# server CPU, 22.5 against 17.8 ms to the answer; docs/classroom/), the second core spinning; that core serves another
# student instead. TORCH_NUM_THREADS=2 for one user with a large model.
torch.set_num_threads(CONFIG.torch_threads)
# A GPU where there is one (a GPU Space, ZeroGPU included); EXPLORER_DEVICE overrides.
DEVICE = runtime.chosen_device(CONFIG.device)
# float32 unless EXPLORER_PRECISION asks for bfloat16 or float16 (docs/deployment.md: what it changes, by how much).
PRECISION = runtime.chosen_precision(DEVICE, CONFIG.precision)
if PRECISION is not torch.float32:
    runtime.PRECISION = (torch.device(DEVICE).type, PRECISION)

cache.SHARED.max_bytes = int(CONFIG.cache_mb * 2**20)  # EXPLORER_CACHE_MB
REGISTRY = ModelRegistry(ROOT / "checkpoints", device=DEVICE, failed_load_s=CONFIG.failed_load_s)
if runtime.APART:
    # ZeroGPU: the models must be on the GPU when the app starts (packed then, and sent to every worker); a model
    # loaded later is loaded again by each worker that needs it.
    REGISTRY.preload()
# The classes of this server (explorer/classroom.py), in the SQLite file EXPLORER_CLASS_DB (var/classes.db), which
# every app process of one machine shares; one stream per following page, woken by one poller per process.
CLASSROOM = Classroom.at(config=CONFIG)
HUB = class_events.Hub(CLASSROOM)
# The Train tab's runs: EXPLORER_TRAIN_SLOTS worker processes (1 by default), each a fresh interpreter.
POOL = TrainingPool(slots=CONFIG.train_slots, budget_s=CONFIG.train_budget_s, max_waiting=CONFIG.train_queue)
demo = build_demo(REGISTRY, POOL, CLASSROOM, CONFIG)
# Gradio 6: theme and css go to launch(). Each open session keeps its explorer (about 1 MB with a built-in model);
# the least recently used sessions beyond 1,000 are forgotten (Gradio's default keeps 10,000).
# The text in Noto Sans, served from assets/fonts (ui/fonts.py), not Montserrat; plotly.js (ui/plot.py).
gr.set_static_paths([fonts.FOLDER, plot.PLOTLY_JS])
CSS = fonts.font_faces() + "\n" + (ROOT / "assets" / "style.css").read_text(encoding="utf-8")
# Soft's indigo one shade darker where it is text or under white text: every label, button and chosen option meets
# WCAG's contrast minimum of 4.5:1 (the accessibility audit, tests/test_browser.py).
THEME = gr.themes.Soft(font=list(fonts.STACK)).set(
    block_label_text_color="*primary_700",
    block_title_text_color="*primary_700",
    block_info_text_color="*neutral_600",
    body_text_color_subdued="*neutral_600",
    button_primary_background_fill="*primary_600",
    button_primary_background_fill_hover="*primary_700",
    checkbox_label_background_fill_selected="*primary_600",
)
# The page in the reader's language (ui/i18n.py): gradio's translation tables of the fixed text.
LAUNCH_OPTIONS = {
    "theme": THEME,
    "css": CSS,
    "state_session_capacity": 1000,
    "max_file_size": runtime.MAX_UPLOAD_BYTES,  # an upload larger than a model file may be is refused at the door
    # a request body over 64 KB refused before it is read whole; security headers on every answer (ui/web.py)
    # and the routes of a class (ui/class_events.py: a following page's stream; ui/class_panel.py: the teacher's view;
    # ui/class_follow.py: the teacher's view for a following page;
    # ui/handout.py: a lesson's handout to print)
    "app_kwargs": {
        "middleware": web.middleware(),
        "routes": [
            *class_events.routes(HUB),
            *class_panel.routes(CLASSROOM),
            *class_follow.routes(demo.follows),
            *handout.routes(REGISTRY),
        ],
    },
    "i18n": i18n.translations(),
    # Step, Back and Run from the keyboard; each figure drawn once; every answer read (ui/browser_internals.py)
    "head": decoding.SHORTCUTS_JS + browser_internals.STREAM_KEEPER_JS,
}


if __name__ == "__main__":
    POOL.warm()  # a worker takes about 3 s to start: not on the first Train
    try:
        demo.queue(default_concurrency_limit=2).launch(**LAUNCH_OPTIONS)
    finally:
        POOL.close()  # its workers end with the app
