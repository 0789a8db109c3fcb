"""Transformer Explorer — the Gradio app.

This first version is a small front door to the library while the full explorer is being built: translate with
any opus-mt model from the Hugging Face Hub, run through *our* from-scratch Transformer, and look at the
positional encoding the model adds. Run it with `python app.py`.
"""

from __future__ import annotations

import html
import os
import threading

import gradio as gr
import plotly.graph_objects as go
import torch

from transformer.checkpoint import Checkpoint, CheckpointError, load_pretrained
from transformer.decoding import BeamSearch, Greedy, translate
from transformer.model import sinusoidal_position_encoding

torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))

MAX_SOURCE_CHARS = 1000
DEFAULT_REPO = "Helsinki-NLP/opus-mt-en-de"

# The only module-level state: loaded models, read-only once loaded.
_models: dict[str, Checkpoint] = {}
_models_lock = threading.Lock()


def get_model(repo_id: str) -> Checkpoint:
    with _models_lock:  # one download per model, even when several users ask at once
        if repo_id not in _models:
            _models[repo_id] = load_pretrained(repo_id)
        return _models[repo_id]


def translate_text(text: str, repo_id: str, strategy: str) -> tuple[str, str]:
    """Source text, Hub repo id, "greedy" | "beam" -> (translation, source pieces as escaped HTML)."""
    text, repo_id = (text or "").strip(), (repo_id or "").strip()
    if not text:
        return "", "<p>Type a sentence to translate.</p>"
    if len(text) > MAX_SOURCE_CHARS:
        return "", f"<p>The sentence is too long ({len(text)} characters; at most {MAX_SOURCE_CHARS}).</p>"
    try:
        checkpoint = get_model(repo_id)
        method = BeamSearch(width=int(checkpoint.generation.get("num_beams", 4))) if strategy == "beam" else Greedy()
        output = translate(checkpoint, text, method, max_new_tokens=min(256, checkpoint.model.config.max_positions - 1))
    except (CheckpointError, ValueError) as error:
        return "", f"<p><b>Could not translate:</b> {html.escape(str(error))}</p>"
    ids = checkpoint.tokenizer.encode_source(text)
    chips = " ".join(f"<code title='id {i}'>{html.escape(checkpoint.tokenizer.source_piece(i))}</code>" for i in ids)
    return output, f"<p>{chips}</p>"


def positional_encoding_figure(n_positions: int = 50, d_model: int = 128, layout: str = "interleaved") -> go.Figure:
    """Heatmap of the sinusoidal table the model adds: positions down, dimensions across."""
    table = sinusoidal_position_encoding(int(n_positions), int(d_model), layout).numpy()
    figure = go.Figure(go.Heatmap(z=table, colorscale="RdBu", zmin=-1, zmax=1, colorbar={"title": "value"}))
    figure.update_layout(
        title=f"Sinusoidal positional encoding ({layout})",
        xaxis_title="dimension",
        yaxis_title="position",
        yaxis_autorange="reversed",
        height=420,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
    )
    return figure


def build_demo() -> gr.Blocks:
    with gr.Blocks(title="Transformer Explorer") as demo:
        gr.Markdown(
            "# Transformer Explorer\n"
            "A from-scratch encoder–decoder Transformer (*Attention Is All You Need*). "
            "The step-by-step explorer is under construction; meanwhile, translate with an opus-mt model "
            "loaded into our own code, and look at the positional encoding."
        )
        with gr.Tab("Translate"):
            with gr.Row():
                source = gr.Textbox(label="Source sentence", value="The weather is nice today.", elem_id="source-text")
                repo = gr.Textbox(label="opus-mt model (Hub repo id)", value=DEFAULT_REPO, elem_id="model-select")
            strategy = gr.Radio(["greedy", "beam"], value="greedy", label="Decoding")
            button = gr.Button("Translate", variant="primary", elem_id="run-btn")
            output = gr.Textbox(label="Translation", elem_id="output-text", interactive=False)
            pieces = gr.HTML(label="Source pieces")
            button.click(translate_text, [source, repo, strategy], [output, pieces], api_name="translate")
        with gr.Tab("Positional encoding"):
            with gr.Row():
                n_positions = gr.Slider(4, 200, value=50, step=1, label="positions")
                d_model = gr.Slider(4, 512, value=128, step=2, label="d_model")
                layout = gr.Radio(["interleaved", "concat"], value="interleaved", label="layout")
            plot = gr.Plot(positional_encoding_figure(), elem_id="pe-plot")
            for control in (n_positions, d_model, layout):
                control.change(
                    positional_encoding_figure, [n_positions, d_model, layout], plot, api_visibility="private"
                )
    return demo


demo = build_demo()

if __name__ == "__main__":
    demo.queue(default_concurrency_limit=2).launch()
