"""The stateless API endpoint `/translate`, for `gradio_client` and scripts."""

from __future__ import annotations

import logging
from collections.abc import Callable

import gradio as gr

from explorer import Explorer, ExplorerError, ExplorerState, ModelRegistry
from explorer.state import is_whole

from . import admission
from .settings import DEFAULT_STATE as DEFAULT
from .settings import NAMES, shown, state_fields

MAX_CANDIDATES = 50
LOG = logging.getLogger(__name__)


def make_translate(registry: ModelRegistry) -> Callable[..., dict]:
    # The parameters are settings of `ExplorerState` (its defaults, its checks), by the same names; a silenced head
    # is written as the page writes it or as "cross:0:1" (`ui.settings.parse_head_ref`).
    def translate(
        source: str,
        model: str = DEFAULT.model,
        strategy: str = DEFAULT.strategy,
        temperature: float = DEFAULT.temperature,
        top_k: int = DEFAULT.top_k,
        top_p: float = DEFAULT.top_p,
        seed: int = DEFAULT.seed,
        beam_width: int = DEFAULT.beam_width,
        max_output_tokens: int = DEFAULT.max_output_tokens,
        causal_mask: bool = DEFAULT.causal_mask,
        padding_mask: bool = DEFAULT.padding_mask,
        silenced: list[str] | None = None,
        candidates: int = 5,
    ) -> dict:
        """Translate `source` with one model and one set of switches; no state is kept between calls.

        Returns the translation, the source and output tokens, and for every step the chosen token and the
        top `candidates` next-token candidates with their probabilities.
        """
        settings = {name: value for name, value in locals().items() if name in NAMES}
        settings["source"] = source if isinstance(source, str) else ""
        try:
            state = ExplorerState(**state_fields(settings))
            if not (is_whole(candidates) and 1 <= candidates <= MAX_CANDIDATES):
                raise ExplorerError(f"candidates must be a whole number 1…{MAX_CANDIDATES}, not {shown(candidates)}")
            explorer = Explorer(registry, state)
            steps = []
            for step in explorer.run():
                steps.append(step)
                admission.give_way()  # the page's events first (`ui.admission`)
        except (ExplorerError, TypeError, ValueError) as error:
            # The caller's mistake: its message goes back to it, and the server's log has one line, not a traceback.
            LOG.warning("/translate refused a request: %s", error)
            raise gr.Error(str(error), print_exception=False) from None
        piece = explorer.piece
        return {
            "translation": explorer.output_text,
            "source_tokens": explorer.source_pieces,
            "output_tokens": explorer.output_pieces,
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
