"""The stages of the Inside a step view: the blocks of the architecture diagram (the paper's Figure 1), by stack.

A stage's key is what the state (`ExplorerState.stage`) and so a shared link hold; its label names it in the
diagram (`explorer.figures.architecture_diagram`) and in the list of stages.
"""

from __future__ import annotations

from dataclasses import dataclass

from .i18n import N_


@dataclass(frozen=True)
class Block:
    """A block of the architecture diagram: its stage key, its label, and which stack it is in.

    A line break in the label is where the diagram breaks it when it is too long for one line ("Add & Norm\nafter
    self-attention"); elsewhere (`name`) the label reads on one line."""

    key: str
    label: str
    stack: str  # "encoder", "decoder" or "" (outside the stacks)

    @property
    def name(self) -> str:
        return " ".join(self.label.split("\n"))


# A block's label names it in the diagram and, on one line, in the list of stages (`stage_choices`); each Add & Norm
# by the sub-layer it follows, as the same name would not tell the three of a decoder layer apart. The labels are
# English, marked for the catalogs: the diagram translates them where it draws them (`explorer.inside.diagram`).
ENCODER_BLOCKS = (
    Block("encoder.embedding", N_("Input embedding\n+ positions"), ""),
    Block("encoder.self_attention", N_("Self-attention"), "encoder"),
    Block("encoder.self_attention_add_norm", N_("Add & Norm\nafter self-attention"), "encoder"),
    Block("encoder.ffn", N_("Feed forward"), "encoder"),
    Block("encoder.ffn_add_norm", N_("Add & Norm\nafter feed forward"), "encoder"),
)
DECODER_BLOCKS = (
    Block("decoder.embedding", N_("Output embedding\n+ positions"), ""),
    Block("decoder.self_attention", N_("Masked self-attention"), "decoder"),
    Block("decoder.self_attention_add_norm", N_("Add & Norm\nafter self-attention"), "decoder"),
    Block("decoder.cross_attention", N_("Cross-attention"), "decoder"),
    Block("decoder.cross_attention_add_norm", N_("Add & Norm\nafter cross-attention"), "decoder"),
    Block("decoder.ffn", N_("Feed forward"), "decoder"),
    Block("decoder.ffn_add_norm", N_("Add & Norm\nafter feed forward"), "decoder"),
    Block("stacks", N_("The stacks:\nresidual stream"), ""),
    Block("output", N_("Linear + softmax"), ""),
    Block("layers", N_("What each layer\nwould say"), ""),
)
STAGES = tuple(block.key for block in ENCODER_BLOCKS + DECODER_BLOCKS)  # in the diagram's order, bottom to top
