"""Transformer Explorer: watch an encoder–decoder Transformer translate, step by step. Run `python app.py`.

The page is built in `ui/layout.py`; the models (the built-in ones in `checkpoints/`, and opus-mt models from
the Hugging Face Hub on demand) are loaded once and shared read-only by every user.
"""

from __future__ import annotations

import os
from pathlib import Path

import gradio as gr
import torch

from transformer.explorer import ModelRegistry
from ui.layout import CSS, build_demo

torch.set_num_threads(int(os.environ.get("TORCH_NUM_THREADS", min(4, os.cpu_count() or 1))))
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # a GPU Space (ZeroGPU included) runs the models there

REGISTRY = ModelRegistry(Path(__file__).resolve().parent / "checkpoints", device=DEVICE)
LAUNCH_OPTIONS = {"theme": gr.themes.Soft(), "css": CSS}  # Gradio 6: theme and css go to launch()

demo = build_demo(REGISTRY)

if __name__ == "__main__":
    demo.queue(default_concurrency_limit=2, max_size=64).launch(**LAUNCH_OPTIONS)
