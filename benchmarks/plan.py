"""How big and how often: the sizes and repeats of the full run (BENCHMARKS.md) and of the quick one (CI)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """Sizes and repeats of one benchmark run. Stored in the results as they are (`docs/benchmarks.json`)."""

    name: str
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    vocab: int
    lengths: tuple[int, ...]  # output lengths for sections 1 and 3
    repeats: int
    batch_sentences: int  # section 2
    batch_new_tokens: int
    shipped_sentences: int  # section 2, shipped model (0: skip)
    beam_sentences: int  # section 4
    beam_new_tokens: int
    train_batch_tokens: int  # section 5
    train_steps: int

    def sizes(self) -> dict[str, int]:
        """The model's size as `TransformerConfig` fields (one vocabulary, as many decoder layers as encoder ones)."""
        return {
            "src_vocab_size": self.vocab,
            "tgt_vocab_size": self.vocab,
            "d_model": self.d_model,
            "n_heads": self.n_heads,
            "n_encoder_layers": self.n_layers,
            "n_decoder_layers": self.n_layers,
            "d_ff": self.d_ff,
        }


FULL = Plan("full", 512, 6, 8, 2048, 58101, (16, 64, 128), 7, 16, 32, 200, 8, 32, 3000, 8)
QUICK = Plan("quick", 32, 2, 4, 64, 500, (4, 8), 2, 4, 6, 8, 2, 6, 300, 2)
