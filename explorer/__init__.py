"""The explorer: everything the app computes for a user, in plain Python (no gradio).

* `state` — `ExplorerState`, one immutable value holding every choice a user made (what a shared link carries);
* `registry` — `ModelRegistry`, the built-in and Hub models, loaded once and shared read-only;
* `session` — `Explorer`, one user's translation in progress: a state paired with a live decoding, and its views;
* `cache` — what two users would compute alike (forward passes, worked steps), computed once for both;
* `figures` — the Plotly figure builders, from arrays and token lists;
* `render` — from an `Explorer` to what the page shows: figures, token chips, choices, tables;
* `stages` — the blocks of the paper's architecture diagram, which name the stages of a step;
* `inside` — the Inside a step view: every stage of the computation of the next token, on the paper's diagram;
* `walkthrough` — the guided tour of those stages, from tokens to next-token probabilities, on the live model.
"""

from .registry import ModelRegistry
from .session import Explorer, StepSnapshot, shuffle_words
from .state import MAX_BEAM_WIDTH, MAX_OUTPUT_TOKENS, MAX_SOURCE_CHARS, ExplorerError, ExplorerState

__all__ = [
    "MAX_BEAM_WIDTH",
    "MAX_OUTPUT_TOKENS",
    "MAX_SOURCE_CHARS",
    "Explorer",
    "ExplorerError",
    "ExplorerState",
    "ModelRegistry",
    "StepSnapshot",
    "shuffle_words",
]
