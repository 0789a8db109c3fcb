"""Figures for the explorer: pure functions, arrays and token labels in, a `Figure` (Plotly's JSON, built as plain
data) or HTML out. No gradio and no torch here: arrays may be numpy arrays or torch tensors (converted with
`np.asarray`). One module per view:

* `base` — what every figure shares: the `Figure`, the template and colours, escaped labels, input checks;
* `attention` — heatmap, every head as a grid, the three families side by side, alignment lines, thumbnails;
* `tensors` — the stages of one step as strips, matrices and bars, and the architecture diagram;
* `candidates` — the next-token candidates, and with and without silenced heads;
* `contributions` — what made the next token: each piece's contribution beside the attention, the census of heads;
* `positions` — the positional encoding table, its curves and the similarity of positions;
* `beam` — the beam search tree;
* `tokens` — a sentence's pieces as chips;
* `training` — a run's curves, and the probe's attention replayed across training.
"""

from .attention import (
    AttentionMap,
    alignment_lines,
    attention_grid,
    attention_heatmap,
    attention_side_by_side,
    attention_thumbnails_html,
    thumbnail_png,
)
from .base import (
    ACCENT,
    AXIS_TITLES,
    BAR_COLOR,
    Figure,
    axis_labels,
    enlarged,
    escape_label,
    shorten,
)
from .beam import beam_tree
from .candidates import candidates_bar, compare_candidates
from .contributions import census_grid, contribution_bars
from .positions import position_similarity, positional_curves, positional_heatmap
from .tensors import TensorPanel, architecture_diagram, tensor_panels_html
from .tokens import token_chips_html
from .training import ReplayFrame, probe_replay, training_curves

__all__ = [
    "ACCENT",
    "AXIS_TITLES",
    "BAR_COLOR",
    "AttentionMap",
    "Figure",
    "ReplayFrame",
    "TensorPanel",
    "alignment_lines",
    "architecture_diagram",
    "attention_grid",
    "attention_heatmap",
    "attention_side_by_side",
    "attention_thumbnails_html",
    "axis_labels",
    "beam_tree",
    "candidates_bar",
    "census_grid",
    "compare_candidates",
    "contribution_bars",
    "enlarged",
    "escape_label",
    "position_similarity",
    "positional_curves",
    "positional_heatmap",
    "probe_replay",
    "shorten",
    "tensor_panels_html",
    "thumbnail_png",
    "token_chips_html",
    "training_curves",
]
