"""The stateless API endpoint `/translate`, for `gradio_client` and scripts."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr

from explorer import Explorer, ExplorerError, ExplorerState, ModelRegistry


def parse_silenced(items: list[str] | None) -> frozenset[tuple[str, int, int]]:
    """["cross:0:1", "encoder:2:3"] -> {("cross", 0, 1), ("encoder", 2, 3)}."""
    heads = set()
    for item in items or []:
        try:
            family, layer, head = str(item).split(":")
            heads.add((family.strip(), int(layer), int(head)))
        except ValueError:
            raise ExplorerError(
                f"a silenced head is written family:layer:head (e.g. cross:0:1), got {item!r}"
            ) from None
    return frozenset(heads)


def make_translate(registry: ModelRegistry) -> Callable[..., dict]:
    def translate(
        source: str,
        model: str = "en-de",
        strategy: str = "greedy",
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int = 0,
        beam_width: int = 4,
        max_output_tokens: int = 64,
        causal_mask: bool = True,
        padding_mask: bool = True,
        silenced: list[str] | None = None,
        candidates: int = 5,
    ) -> dict:
        """Translate `source` with one model and one set of switches; no state is kept between calls.

        Returns the translation, the source and output tokens, and for every step the chosen token and the
        top `candidates` next-token candidates with their probabilities.
        """
        try:
            state = ExplorerState(
                model=str(model).strip(),
                source=source if isinstance(source, str) else "",
                strategy=strategy,
                temperature=float(temperature),
                top_k=int(top_k),
                top_p=float(top_p),
                seed=int(seed),
                beam_width=int(beam_width),
                max_output_tokens=int(max_output_tokens),
                causal_mask=bool(causal_mask),
                padding_mask=bool(padding_mask),
                silenced=parse_silenced(silenced),
            )
            if not 1 <= int(candidates) <= 50:
                raise ExplorerError("candidates must be 1…50")
            explorer = Explorer(registry, state)
            steps = list(explorer.run())
        except (ExplorerError, TypeError, ValueError) as error:
            raise gr.Error(str(error)) from None
        tokenizer = explorer.checkpoint.tokenizer
        piece = tokenizer.target_piece
        return {
            "translation": tokenizer.decode_target(explorer.decoding.output_ids),
            "source_tokens": [tokenizer.source_piece(i) for i in explorer.source_ids()],
            "output_tokens": [piece(i) for i in explorer.decoding.output_ids],
            "steps": [
                {
                    "token": piece(step.token_id),
                    "token_id": step.token_id,
                    "prob": round(step.prob, 6),
                    "candidates": [
                        {"token": piece(c.token_id), "token_id": c.token_id, "prob": round(c.prob, 6)}
                        for c in step.candidates[: int(candidates)]
                    ],
                }
                for step in steps
            ],
        }

    return translate
