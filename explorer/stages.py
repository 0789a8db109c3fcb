"""The stages of the Inside a step view: the blocks of the architecture diagram (the paper's Figure 1), by stack.

A stage's key is what the state (`ExplorerState.stage`) and so a shared link hold; its label names it in the
diagram (`explorer.figures.architecture_diagram`) and in the list of stages.
"""

from __future__ import annotations

from dataclasses import dataclass


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
# by the sub-layer it follows, as the same name would not tell the three of a decoder layer apart.
ENCODER_BLOCKS = (
    Block("encoder.embedding", "Input embedding\n+ positions", ""),
    Block("encoder.self_attention", "Self-attention", "encoder"),
    Block("encoder.self_attention_add_norm", "Add & Norm\nafter self-attention", "encoder"),
    Block("encoder.ffn", "Feed forward", "encoder"),
    Block("encoder.ffn_add_norm", "Add & Norm\nafter feed forward", "encoder"),
)
DECODER_BLOCKS = (
    Block("decoder.embedding", "Output embedding\n+ positions", ""),
    Block("decoder.self_attention", "Masked self-attention", "decoder"),
    Block("decoder.self_attention_add_norm", "Add & Norm\nafter self-attention", "decoder"),
    Block("decoder.cross_attention", "Cross-attention", "decoder"),
    Block("decoder.cross_attention_add_norm", "Add & Norm\nafter cross-attention", "decoder"),
    Block("decoder.ffn", "Feed forward", "decoder"),
    Block("decoder.ffn_add_norm", "Add & Norm\nafter feed forward", "decoder"),
    Block("stacks", "The stacks:\nresidual stream", ""),
    Block("output", "Linear + softmax", ""),
    Block("layers", "What each layer\nwould say", ""),
)
STAGES = tuple(block.key for block in ENCODER_BLOCKS + DECODER_BLOCKS)  # in the diagram's order, bottom to top
