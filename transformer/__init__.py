"""Transformer Explorer's from-scratch encoder–decoder Transformer library (no UI code here)."""

from .checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from .decoding import BeamSearch, Decoding, Greedy, Sampling, Step, generate, translate
from .hub import load_pretrained
from .marian import load_marian
from .model import ModelSwitches, Transformer, TransformerConfig, sinusoidal_position_encoding
from .tokenizer import Tokenizer

__all__ = [
    "BeamSearch",
    "Checkpoint",
    "CheckpointError",
    "Decoding",
    "Greedy",
    "ModelSwitches",
    "Sampling",
    "Step",
    "Tokenizer",
    "Transformer",
    "TransformerConfig",
    "generate",
    "load_checkpoint",
    "load_marian",
    "load_pretrained",
    "save_checkpoint",
    "sinusoidal_position_encoding",
    "translate",
]
