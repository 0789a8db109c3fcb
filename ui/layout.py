"""The Gradio page: components and events only; the logic lives in `transformer.explorer` and `ui.render`.

Per-user state is one `gr.State` holding that user's `Explorer`; the models in the registry are shared and
read-only. Every handler catches `ExplorerError` and shows its message, so bad input never breaks the page.
"""

from __future__ import annotations

import contextlib
import functools
import html
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from transformer.explorer import (
    MAX_BEAM_WIDTH,
    MAX_OUTPUT_TOKENS,
    MAX_SOURCE_CHARS,
    Explorer,
    ExplorerError,
    ExplorerState,
    ModelRegistry,
    shuffle_words,
)

from . import render, walkthrough
from .api import make_translate

# Queues (see where the events are wired): quick events (Step, Back, Reset, toggles) and long ones (Run and the
# whole-sentence comparisons) wait in separate lines; a Run stops after RUN_BUDGET_S seconds with a message.
QUICK_CONCURRENCY = int(os.environ.get("EXPLORER_QUICK_CONCURRENCY", 2))
LONG_CONCURRENCY = int(os.environ.get("EXPLORER_LONG_CONCURRENCY", 1))
RUN_BUDGET_S = float(os.environ.get("EXPLORER_RUN_BUDGET_S", 30))
HUB_EXAMPLES = ["Helsinki-NLP/opus-mt-en-de", "Helsinki-NLP/opus-mt-en-fr", "Helsinki-NLP/opus-mt-en-zh"]
CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
EXAMPLES = {  # for models whose folder has no examples.json
    "en-de": ["The weather is nice today.", "Where is the train station?", "Better late than never."],
    "numbers-de": ["twenty-one", "ninety-seven", "seven thousand, three hundred and eighty-five"],
}


@functools.cache
def model_examples(model: str) -> tuple[tuple[str, str], ...]:
    """(sentence, label) pairs of a model's examples: its untrained twin shares them, Hub models get en-de's.

    A built-in model's `examples.json` lists sentences it translates correctly and a few instructive failures
    (`"works": false` with a `"why"`), which are labelled as such on the page.
    """
    name = model.removesuffix("-untrained")
    name = name if name in EXAMPLES or (CHECKPOINTS / name / "examples.json").is_file() else "en-de"
    path = CHECKPOINTS / name / "examples.json"
    if not path.is_file():
        return tuple((sentence, sentence) for sentence in EXAMPLES[name])
    entries = json.loads(path.read_text(encoding="utf-8"))["examples"]
    return tuple(
        (e["sentence"], e["sentence"] if e["works"] else f"✗ {e['sentence']} — a failure to study: {e['why']}")
        for e in entries
    )


def example_samples(model: str) -> list[list[str]]:
    """The example sentences of a model, as `gr.Dataset` samples."""
    return [[sentence] for sentence, _ in model_examples(model)]


def example_labels(model: str) -> list[str]:
    """What the page shows for each example: the sentence, or for a failure the sentence and why it fails."""
    return [label for _, label in model_examples(model)]


CSS = """
.token-chips { display: flex; flex-wrap: wrap; gap: 4px; }
.token-chip { font-family: ui-monospace, monospace; background: #eef2f8; border-radius: 4px; padding: 1px 5px; }
"""


def run_gpu(fn: Callable) -> Callable:
    """`@spaces.GPU` on a Hugging Face ZeroGPU Space, a no-op everywhere else."""
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return fn
    return spaces.GPU(fn)


def lock_of(explorer: Any) -> contextlib.AbstractContextManager:
    """One action at a time on a user's explorer: a page's events can run in parallel (quick and long queues)."""
    return explorer.lock if isinstance(explorer, Explorer) else contextlib.nullcontext()


def share_markdown(state: ExplorerState) -> str:
    """A link to this exact view (model, sentence, step, strategy, masks, silenced heads, selected view)."""
    token = state.to_link()
    return (
        f"[Open this exact view](?state={token}) — copy the link to hand it to someone.\n\n"
        f"The state token (add `?state=` and it to the page address): `{token}`"
    )


def settings_values(state: ExplorerState) -> list:
    """The values of the setting controls that `refreshed` does not set, in the order of `restorable`."""
    return [
        state.source, state.strategy, state.temperature, state.top_k, state.top_p, state.seed,
        state.beam_width, state.max_output_tokens, state.causal_mask, state.padding_mask, state.positions,
        state.pad_to, state.family,
    ]  # fmt: skip


class Blocks(gr.Blocks):
    """`gr.Blocks` that does not keep every replaced component of a session (a leak in Gradio 6.31).

    An event that updates a component (`gr.update(choices=…)`, or any `gr.update`) makes a new component for
    the session, under the original's id. Gradio then also files that new component under its *own* new id the
    next time it reads or writes it, and never removes it: each session's component table (and the config made
    from it) grows by a few entries with every event, about 80 KB of memory per request in the load test. Every
    entry that the page itself does not have is one of those copies; they are dropped after each event.
    """

    async def postprocess_data(self, block_fn, predictions, state):
        outputs = await super().postprocess_data(block_fn, predictions, state)
        if state is not None:  # runs on the event loop, like the code that adds the copies
            page = self.default_config.blocks
            for key in [k for k in state.blocks_config.blocks if k not in page]:
                del state.blocks_config.blocks[key]
                state.config_values.pop(key, None)
        return outputs


def build_demo(registry: ModelRegistry) -> gr.Blocks:
    default_model = "en-de" if "en-de" in registry.builtin else registry.builtin[0]
    model_choices = [*registry.builtin, *HUB_EXAMPLES]

    with Blocks(title="Transformer Explorer") as demo:
        explorer_state = gr.State(None)
        gr.Markdown(
            "# Transformer Explorer\nType a sentence, then **Step** through the translation token by token and "
            "look inside: every layer's and head's attention, the next-token probabilities, masks, heads, positions."
        )
        with gr.Row():
            model = gr.Dropdown(
                model_choices, value=default_model, allow_custom_value=True, label="Model", elem_id="model-select",
                info="a built-in model, or any opus-mt model id from the Hugging Face Hub",
            )  # fmt: skip
            source = gr.Textbox(
                label="Source sentence", value=example_samples(default_model)[0][0], lines=1,
                max_length=MAX_SOURCE_CHARS, elem_id="source-text", scale=3,
            )  # fmt: skip
        examples = gr.Dataset(
            components=["textbox"], samples=example_samples(default_model), label="Examples",
            sample_labels=example_labels(default_model),
            elem_id="examples",
        )  # fmt: skip
        pieces = gr.HTML(elem_id="source-pieces")

        with gr.Row():
            strategy = gr.Radio(["greedy", "sampling", "beam"], value="greedy", label="Decoding", elem_id="strategy")
            max_tokens = gr.Slider(1, MAX_OUTPUT_TOKENS, value=64, step=1, label="Max output tokens")
        with gr.Accordion("Sampling and beam settings", open=False), gr.Row():
            temperature = gr.Slider(0.05, 3.0, value=1.0, step=0.05, label="Temperature")
            top_k = gr.Slider(0, 100, value=0, step=1, label="Top-k (0 = all)")
            top_p = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label="Top-p")
            seed = gr.Number(0, precision=0, minimum=0, label="Seed")
            beam_width = gr.Slider(1, MAX_BEAM_WIDTH, value=4, step=1, label="Beam width")
        with gr.Row():
            step_btn = gr.Button("Step", variant="primary", elem_id="step-btn")
            run_btn = gr.Button("Run", elem_id="run-btn")
            back_btn = gr.Button("Back", elem_id="back-btn")
            reset_btn = gr.Button("Reset", elem_id="reset-btn")
            stop_btn = gr.Button("Stop", elem_id="stop-btn", variant="stop", min_width=80, scale=0)
        status = gr.Markdown(elem_id="status")
        output_text = gr.Textbox(label="Output so far", interactive=False, elem_id="output-text")
        with gr.Row():
            candidates_plot = gr.Plot(label="Next-token candidates", show_label=False, elem_id="candidates-plot")
            with gr.Column():
                force_choice = gr.Radio([], label="Force one of the candidates", elem_id="force-choice")
                force_text = gr.Textbox(label="…or type a token to force", elem_id="force-text")

        with gr.Tab("Attention"):
            with gr.Row():
                family = gr.Radio(
                    [(name, key) for key, name in render.FAMILY_NAMES.items()], value="cross",
                    label="Attention", elem_id="attention-family",
                )  # fmt: skip
                layer = gr.Slider(0, 5, value=0, step=1, label="Layer", elem_id="attention-layer")
                head = gr.Dropdown(render.head_choices(4), value=render.HEAD_AVERAGE, label="Head", elem_id="head")
            attention_plot = gr.Plot(show_label=False, elem_id="attention-plot")
        with gr.Tab("Masks and heads"):
            with gr.Row():
                causal = gr.Checkbox(True, label="Causal mask (decoder sees only the past)", elem_id="causal-mask")
                padding = gr.Checkbox(True, label="Source padding mask", elem_id="padding-mask")
                pad_to = gr.Slider(0, 64, value=0, step=1, label="Pad the source to this many tokens (0 = off)")
            teacher_text = gr.Markdown(elem_id="teacher-forced")
            silenced = gr.CheckboxGroup([], label="Silenced heads", elem_id="silenced-heads")
            compare_btn = gr.Button("Compare with no heads silenced", elem_id="compare-btn")
            compare_text = gr.Markdown()
            compare_plot = gr.Plot(show_label=False, elem_id="compare-plot")
        with gr.Tab("Positions"):
            with gr.Row():
                positions = gr.Checkbox(True, label="Add positional encodings", elem_id="positions-toggle")
                n_positions = gr.Slider(4, 128, value=50, step=1, label="Positions shown")
                dims = gr.Textbox("0, 1, 10, 11", label="Dimensions for the curves")
            pe_plot = gr.Plot(show_label=False, elem_id="pe-plot")
            with gr.Row():
                pe_curves = gr.Plot(show_label=False, elem_id="pe-curves")
                pe_similarity = gr.Plot(show_label=False, elem_id="pe-similarity")
            shuffle_btn = gr.Button("Translate with the source words shuffled", elem_id="shuffle-btn")
            shuffle_text = gr.Markdown()
        with gr.Tab("Trained vs untrained"):
            twin_btn = gr.Button("Show the same view for the untrained twin", elem_id="twin-btn")
            twin_text = gr.Markdown()
            with gr.Row():
                trained_plot = gr.Plot(show_label=False, elem_id="trained-plot")
                untrained_plot = gr.Plot(show_label=False, elem_id="untrained-plot")
        with gr.Tab("Beam search"):
            beam_plot = gr.Plot(show_label=False, elem_id="beam-plot")
        with gr.Tab("Walkthrough"):
            walk_btn = gr.Button("Walk through the current sentence and step", elem_id="walkthrough-btn")
            walk_outputs = []
            for heading, text in walkthrough.SECTIONS:
                gr.Markdown(f"### {heading}\n{text}", latex_delimiters=[{"left": "$", "right": "$", "display": False}])
                walk_outputs.append(gr.HTML() if not walk_outputs else gr.Plot(show_label=False))
        with gr.Tab("Share"):
            share_link = gr.Markdown(elem_id="share-link")

        settings = [model, source, strategy, temperature, top_k, top_p, seed, beam_width, max_tokens,
                    causal, padding, positions, pad_to, silenced, family, layer, head]  # fmt: skip
        restorable = [c for c in settings if c not in (model, silenced, layer, head)]  # these are in main_outputs
        main_outputs = [explorer_state, pieces, status, output_text, candidates_plot, force_choice, attention_plot,
                        beam_plot, share_link, silenced, layer, head, examples, model, teacher_text]  # fmt: skip

        def refreshed(explorer: Explorer | None, message: str = "", light: bool = False) -> list[Any]:
            """Every main output for the explorer's state. `light`: the settings did not change (Step, Back, Run,
            forcing), so the controls that only depend on them are left alone: fewer components to redraw."""
            if explorer is None:
                return [None, "", message, "", None, gr.update(choices=[]), None, None, "", gr.update(),
                        gr.update(), gr.update(), gr.update(), gr.update(), ""]  # fmt: skip
            views = explorer.views()
            state = explorer.state
            config = explorer.checkpoint.model.config
            limit_note = ""
            if len(state.choices) >= state.max_output_tokens and not views.finished:
                limit_note = f"The output length limit ({state.max_output_tokens} tokens) is reached."
            outputs = [
                explorer,
                render.source_chips(explorer),
                html.escape(message or limit_note),
                views.output_text,
                render.candidates_figure(views),
                gr.update(choices=render.candidate_radio_choices(views), value=None),
                render.attention_figure(views, state),
                render.beam_figure(explorer),
                share_markdown(state),
                gr.update(choices=render.silenced_choices(explorer),
                          value=[render.head_ref_label(h) for h in sorted(state.silenced)]),
                gr.update(maximum=max(config.n_layers(state.family) - 1, 0), value=state.layer),
                gr.update(choices=render.head_choices(config.n_heads), value=render.head_choice(state)),
                gr.update(samples=example_samples(state.model), sample_labels=example_labels(state.model)),
                gr.update(value=state.model),  # after a failed load, back to the model that is in use
                render.teacher_forced_markdown(views, state),
            ]  # fmt: skip
            if light:  # the source chips, the head and layer controls, the examples and the model stay as they are
                for index in (1, 9, 10, 11, 12, 13) + ((7,) if state.strategy != "beam" else ()):
                    outputs[index] = gr.skip()
            return outputs

        def settled(explorer: Explorer | None, *values) -> Explorer:
            """The user's explorer with the settings on the page (a new one when there was none)."""
            (model_v, source_v, strategy_v, temperature_v, top_k_v, top_p_v, seed_v, beam_v, max_v, causal_v,
             padding_v, positions_v, pad_to_v, silenced_v, family_v, layer_v, head_v) = values  # fmt: skip
            head_index, grid = render.parse_head(head_v)
            wanted = dict(
                model=(model_v or "").strip(), source=source_v or "", strategy=strategy_v,
                temperature=float(temperature_v), top_k=int(top_k_v), top_p=float(top_p_v), seed=int(seed_v or 0),
                beam_width=int(beam_v), max_output_tokens=int(max_v), causal_mask=bool(causal_v),
                padding_mask=bool(padding_v), positions=bool(positions_v), pad_to=int(pad_to_v),
                silenced=frozenset(render.parse_head_ref(x) for x in silenced_v or []),
                family=family_v, layer=int(layer_v), head=head_index, grid=grid,
            )  # fmt: skip
            if explorer is None or wanted["model"] != explorer.state.model:
                if explorer is not None:
                    wanted.update(silenced=frozenset(), layer=0, head=None)
                explorer = Explorer(registry, ExplorerState(**wanted))
            else:
                changes = {k: v for k, v in wanted.items() if getattr(explorer.state, k) != v}
                if changes:
                    explorer.update(**changes)
            return explorer

        def guarded(action: Callable[..., Any], *, moves: bool = False) -> Callable[..., list[Any]]:
            """A handler for `action`; `moves`: it only moves through the decoding (Step, Back, forcing)."""

            def handler(explorer, *values):
                try:
                    with lock_of(explorer):
                        before = explorer.state if isinstance(explorer, Explorer) else None
                        explorer = settled(explorer, *values)
                        light = moves and explorer.state == before
                        message = action(explorer) or ""
                        return refreshed(explorer, message, light=light)
                except ExplorerError as error:
                    return refreshed(explorer if isinstance(explorer, Explorer) else None, str(error))

            return run_gpu(handler)

        def do_step(explorer: Explorer) -> str:
            explorer.step()
            return ""

        def streaming(explorer: Explorer) -> list[Any]:
            """What Run sends after each token: the text so far; figures are drawn once, at the end (redrawing
            them for every token kept the browser a second behind the server; see BENCHMARKS.md)."""
            text = explorer.checkpoint.tokenizer.decode_target(explorer.decoding.output_ids)
            updates = [gr.skip()] * len(main_outputs)
            updates[0], updates[2], updates[3] = explorer, "Running…", text
            return updates

        def do_run(explorer, *values):
            try:
                with lock_of(explorer):
                    before = explorer.state if isinstance(explorer, Explorer) else None
                    explorer = settled(explorer, *values)
                    light = explorer.state == before
                started, message = time.monotonic(), ""
                while True:
                    with explorer.lock:  # per token, never across a yield: a cancelled Run holds no lock
                        if explorer.at_end:
                            break
                        if time.monotonic() - started > RUN_BUDGET_S:  # a shared machine: nobody holds it long
                            message = f"Run stopped after {RUN_BUDGET_S:g} s (the time budget); press Run to go on."
                            break
                        explorer.step()
                        update = streaming(explorer)
                    yield update
                with explorer.lock:
                    final = refreshed(explorer, message, light=light)
                yield final
            except ExplorerError as error:
                yield refreshed(explorer if isinstance(explorer, Explorer) else None, str(error))

        # Three queues, so that many users at once are served fairly: quick events (a step, a toggle) never wait
        # behind a long Run or a whole-sentence comparison. A step answers in well under a second: no loading
        # overlay on the fifteen outputs (putting it up and taking it down cost the browser more than the figures).
        # Step, Run, Back, Reset and Apply can be called by gradio_client (undocumented; the load test uses them).
        quick = dict(show_progress="hidden", concurrency_id="quick", concurrency_limit=QUICK_CONCURRENCY)
        step_btn.click(guarded(do_step, moves=True), [explorer_state, *settings], main_outputs, api_name="step",
                       api_visibility="undocumented", **quick)  # fmt: skip
        run_event = run_btn.click(run_gpu(do_run), [explorer_state, *settings], main_outputs, api_name="run",
                                  api_visibility="undocumented", show_progress="minimal", concurrency_id="long",
                                  concurrency_limit=LONG_CONCURRENCY)  # fmt: skip
        stop_btn.click(None, None, None, cancels=[run_event], api_visibility="private")
        back_btn.click(guarded(lambda e: e.back(), moves=True), [explorer_state, *settings], main_outputs,
                       api_name="back", api_visibility="undocumented", **quick)  # fmt: skip
        reset_btn.click(guarded(lambda e: e.reset()), [explorer_state, *settings], main_outputs, api_name="reset",
                        api_visibility="undocumented", **quick)  # fmt: skip
        heavy = dict(concurrency_id="long", concurrency_limit=LONG_CONCURRENCY)
        apply = guarded(lambda e: None)

        def prepare_model(name: str, progress=gr.Progress(track_tqdm=True)) -> str:  # noqa: B008 (gradio's idiom)
            """Load (and for a Hub model, download, with progress) before anything is computed with it."""
            progress(0, desc=f"Loading {name}")
            try:
                registry.get((name or "").strip())
            except ExplorerError as error:
                return html.escape(str(error))
            return ""

        model.input(prepare_model, model, status, api_visibility="private").then(
            apply, [explorer_state, *settings], main_outputs, api_visibility="private"
        )
        for control in (strategy, temperature, top_k, top_p, seed, beam_width, max_tokens, causal,
                        padding, positions, pad_to, silenced, family, layer, head):  # fmt: skip
            control.input(apply, [explorer_state, *settings], main_outputs, api_visibility="private", **quick)
        source.submit(apply, [explorer_state, *settings], main_outputs, api_name="apply", api_visibility="undocumented",
                      **quick)  # fmt: skip
        examples.click(lambda sample: sample[0], examples, source, api_visibility="private").then(
            apply, [explorer_state, *settings], main_outputs, api_visibility="private"
        )

        def link_token(request: gr.Request) -> str:
            return dict(request.query_params).get("state", "") if request is not None else ""

        def restore(token, explorer, *values):
            """On page load: the state of a shared link (?state=…), or the page's own settings."""
            if not token:
                return [gr.update()] * len(restorable) + guarded(lambda e: None)(explorer, *values)
            try:
                explorer = Explorer(registry, ExplorerState.from_link(token))
            except ExplorerError as error:
                outputs = guarded(lambda e: None)(None, *values)
                outputs[2] = html.escape(f"This link cannot be opened: {error}")
                return [gr.update()] * len(restorable) + outputs
            return settings_values(explorer.state) + refreshed(explorer)

        token_state = gr.State("")
        demo.load(link_token, None, token_state, api_visibility="private").then(
            run_gpu(restore), [token_state, explorer_state, *settings], [*restorable, *main_outputs],
            api_visibility="private",
        )  # fmt: skip

        def force_candidate(explorer, choice, *values):
            return guarded(lambda e: e.step(force=int(choice)) and "", moves=True)(explorer, *values)

        def force_typed(explorer, text, *values):
            return guarded(lambda e: e.force_text(text) and "", moves=True)(explorer, *values)

        force_choice.input(force_candidate, [explorer_state, force_choice, *settings], main_outputs, **quick)
        force_text.submit(force_typed, [explorer_state, force_text, *settings], main_outputs, **quick)

        def compare(explorer, *values):
            try:
                with lock_of(explorer):
                    return render.comparison(settled(explorer, *values))
            except ExplorerError as error:
                return None, html.escape(str(error))

        compare_btn.click(run_gpu(compare), [explorer_state, *settings], [compare_plot, compare_text],
                          api_visibility="private", **heavy)  # fmt: skip

        def positional(explorer, n, dims_text, *values):
            try:
                with lock_of(explorer):
                    explorer = settled(explorer, *values)
                chosen = [int(x) for x in dims_text.replace(",", " ").split() if x.strip().lstrip("-").isdigit()]
                return render.positional_figures(explorer, int(n), chosen)
            except ExplorerError:
                return None, None, None

        for control in (n_positions, dims, model):
            control.change(positional, [explorer_state, n_positions, dims, *settings], [pe_plot, pe_curves,
                           pe_similarity], api_visibility="private")  # fmt: skip
        demo.load(positional, [explorer_state, n_positions, dims, *settings], [pe_plot, pe_curves, pe_similarity],
                  api_visibility="private")  # fmt: skip

        def shuffled(explorer, *values):
            try:
                with lock_of(explorer):
                    explorer = settled(explorer, *values)
                mixed = shuffle_words(explorer.state.source, seed=explorer.state.seed)
                text_mixed, _ = explorer.translate_to_end(source=mixed, choices=())
                text_plain, _ = explorer.translate_to_end(choices=())
                text_nopos, _ = explorer.translate_to_end(positions=False, choices=())
                return (
                    f"**Original:** {html.escape(explorer.state.source)} → {html.escape(text_plain)}\n\n"
                    f"**Shuffled:** {html.escape(mixed)} → {html.escape(text_mixed)}\n\n"
                    f"**Original, positions switched off:** → {html.escape(text_nopos)}"
                )
            except ExplorerError as error:
                return html.escape(str(error))

        shuffle_btn.click(run_gpu(shuffled), [explorer_state, *settings], shuffle_text, api_visibility="private",
                          **heavy)  # fmt: skip

        def twins(explorer, *values):
            try:
                with lock_of(explorer):
                    return render.twin_comparison(settled(explorer, *values))
            except ExplorerError as error:
                return None, None, html.escape(str(error))

        twin_btn.click(run_gpu(twins), [explorer_state, *settings], [trained_plot, untrained_plot, twin_text],
                       api_visibility="private", **heavy)  # fmt: skip

        def walk(explorer, *values):
            try:
                with lock_of(explorer):
                    return walkthrough.walkthrough(settled(explorer, *values))
            except ExplorerError:
                return [""] + [None] * (len(walk_outputs) - 1)

        walk_btn.click(run_gpu(walk), [explorer_state, *settings], walk_outputs, api_visibility="private", **heavy)

        gr.api(run_gpu(make_translate(registry)), api_name="translate")
    return demo
