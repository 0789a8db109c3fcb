"""The decoding panel: the strategy and its settings, Step / Run / Back / Reset / Stop, the message line, the
output so far, the next-token candidates and forcing a token."""

from __future__ import annotations

import json
import time
import weakref
from typing import Any

import gradio as gr
from gradio.components import Component

from explorer import MAX_BEAM_WIDTH, MAX_OUTPUT_TOKENS, Explorer, ExplorerError, render
from explorer.i18n import N_, _, ngettext
from explorer.state import STRATEGIES, is_whole

from . import gradio_patch, runtime
from .i18n import T
from .panel import Frame, PageAccess, Panel, Updates, escaped
from .plot import Plot
from .runtime import QUICK, one_at_a_time, uses_gpu
from .settings import DEFAULTS, Settings, shown
from .switches import SwitchedOffPanel

TEXT_EVERY_S = 0.1  # a Run sends its text this often, at most (its first token at once)
# The strategies as the page names them (`STRATEGIES`: the values it sends).
# Step, Back and Run from the keyboard: a letter alone, never while the reader types (in a text box, a number box, a
# dropdown's search) or holds a modifier (the browser's and the screen reader's own keys), and never twice at once
# (a key held down repeats). The letters are the same in every language; the hint under the buttons says them. It goes
# in the page's head (app.py's `LAUNCH_OPTIONS`).
SHORTCUTS = {"s": "step-btn", "b": "back-btn", "r": "run-btn"}
KEYS_HINT = N_("Keys: **S** Step · **B** Back · **R** Run (not while typing in a box)")
SHORTCUTS_JS = """<script>
if (!window.stepShortcuts) {
    window.stepShortcuts = __SHORTCUTS__;
    document.addEventListener("keydown", (event) => {
        if (event.repeat || event.ctrlKey || event.altKey || event.metaKey || event.isComposing) return;
        const target = event.target;
        const typing = target.closest && target.closest("input, textarea, select, [contenteditable=true]");
        const id = window.stepShortcuts[event.key.toLowerCase()];
        if (typing || !id) return;
        const button = document.getElementById(id);
        if (!button || button.disabled) return;
        event.preventDefault();
        button.click();
    });
}
</script>""".replace("__SHORTCUTS__", json.dumps(SHORTCUTS))
STRATEGY_LABELS = {"greedy": N_("greedy"), "sampling": N_("sampling"), "beam": N_("beam")}


class Runs:
    """Which Run may step each user's explorer: the one started last, until Stop.

    A Run takes a ticket when it starts and steps only while its ticket is the explorer's current one. Stop takes the
    ticket away (or, for a Run still waiting in the queue, stops it before it starts), and a new Run replaces it.
    Every call is made holding the explorer's lock, and a Run looks at its ticket under that lock before each token:
    once Stop has had the lock, the Run steps no more, and it ends its stream with the page drawn for that step.

    Gradio's own cancel is not used: it stopped the page listening, not the server decoding, and the page, still
    handling the Run's last messages after the cancel, went back to an older text ("Running…" for ever, and an
    output shorter than the server's).
    """

    def __init__(self):
        self._tickets: weakref.WeakKeyDictionary[Explorer, object] = weakref.WeakKeyDictionary()
        self._stopped_early: weakref.WeakSet[Explorer] = weakref.WeakSet()  # stopped while its Run was queued

    def start(self, explorer: Explorer) -> object | None:
        """The new Run's ticket, or None when Stop was pressed while it waited in the queue."""
        if explorer in self._stopped_early:
            self._stopped_early.discard(explorer)
            return None
        ticket = self._tickets[explorer] = object()
        return ticket

    def may_step(self, explorer: Explorer, ticket: object) -> bool:
        return self._tickets.get(explorer) is ticket

    def end(self, explorer: Explorer, ticket: object) -> None:
        if self.may_step(explorer, ticket):
            del self._tickets[explorer]

    def stop(self, explorer: Explorer, queued: bool) -> bool:
        """Stop the explorer's Run, or the one waiting in the queue (`queued`); whether there was one."""
        if self._tickets.pop(explorer, None) is not None:
            return True
        if queued:
            self._stopped_early.add(explorer)
        return queued


RUNS = Runs()


def stopped_message(tokens: int, started: bool = True) -> str:
    if started:
        said = ngettext(
            "Stopped after {count} token: Step, Run or Back go on from here.",
            "Stopped after {count} tokens: Step, Run or Back go on from here.",
            tokens,
        )
    else:
        said = ngettext(
            "Stopped before it started, at {count} token: Step, Run or Back go on from here.",
            "Stopped before it started, at {count} tokens: Step, Run or Back go on from here.",
            tokens,
        )
    return said.format(count=tokens)


def limit_message(explorer: Explorer) -> str:
    """Why the output ends where it does, when it is its length limit and not the model's choice: the end token is
    put at the last place allowed (`transformer.decoding`), so an output cut short still looks finished."""
    limit = explorer.output_limit
    if len(explorer.state.choices) < limit:
        return ""
    positions = explorer.config.max_positions
    if limit < explorer.state.max_output_tokens:
        said = _(
            "The output reached its length limit of {limit} tokens (the model reads at most {positions} positions), "
            "where it has to end."
        )
    else:
        said = _("The output reached its length limit of {limit} tokens (Max output tokens), where it has to end.")
    return said.format(limit=limit, positions=positions)


class DecodingPanel(Panel):
    def __init__(self, page: PageAccess):
        super().__init__(page)
        with gr.Row(elem_id="step-buttons"):
            self.step_btn = gr.Button(T("Step"), variant="primary", elem_id="step-btn")
            self.run_btn = gr.Button(T("Run"), elem_id="run-btn")
            self.back_btn = gr.Button(T("Back"), elem_id="back-btn")
            self.reset_btn = gr.Button(T("Reset"), elem_id="reset-btn")
            self.stop_btn = gr.Button(T("Stop"), elem_id="stop-btn", variant="stop", min_width=80, scale=0)
        # The keys of a step, said under the buttons (`SHORTCUTS_JS`, in the page's head, listens for them).
        gr.Markdown(T(KEYS_HINT), elem_id="step-keys", elem_classes="caption")
        self.status = page.message_line()
        self.switched_off = SwitchedOffPanel(page)  # what is switched off, whichever view is open
        self.output_text = gr.Textbox(label=T("Output so far"), interactive=False, elem_id="output-text")
        with gr.Row():
            with gr.Column():
                self.candidates = Plot(label=T("Next-token candidates"), show_label=False, elem_id="candidates-plot")
                gr.Markdown(T(render.CANDIDATES_CAPTION), elem_id="candidates-caption", elem_classes="caption")
            with gr.Column():
                self.force_choice = gr.Radio([], label=T("Force one of the candidates"), elem_id="force-choice")
                self.force_text = gr.Textbox(
                    label=T("…or type a token or a word to force"),
                    elem_id="force-text",
                    info=T("a word that is not one token is split into the model's tokens, forced one after another"),
                )
        self.settings = self.build_settings(page)  # after the step, in the page as for the Tab key
        self.outputs = [self.status, self.output_text, self.candidates, self.force_choice]

    def build_settings(self, page: PageAccess) -> dict[str, Component]:
        """The decoding settings, folded away in the presentation layout (`wire`), by setting name."""
        with gr.Accordion(T("Decoding settings"), open=True, elem_id="decoding-settings") as self.settings_box:
            with gr.Row():
                strategy = gr.Radio(
                    [(T(STRATEGY_LABELS[name]), name) for name in STRATEGIES],
                    value=DEFAULTS["strategy"],
                    label=T("Decoding"),
                    elem_id="strategy",
                )
                max_tokens = gr.Slider(
                    1, MAX_OUTPUT_TOKENS, value=DEFAULTS["max_output_tokens"], step=1, label=T("Max output tokens")
                )
            with gr.Accordion(T("Sampling and beam settings"), open=False), gr.Row():
                temperature = gr.Slider(0.05, 3.0, value=DEFAULTS["temperature"], step=0.05, label=T("Temperature"))
                top_k = gr.Slider(0, 100, value=DEFAULTS["top_k"], step=1, label=T("Top-k (0 = all)"))
                top_p = gr.Slider(0.05, 1.0, value=DEFAULTS["top_p"], step=0.05, label=T("Top-p"))
                seed = gr.Number(DEFAULTS["seed"], precision=0, minimum=0, label=T("Seed"))
                beam_width = gr.Slider(1, MAX_BEAM_WIDTH, value=DEFAULTS["beam_width"], step=1, label=T("Beam width"))
        settings = {"strategy": strategy, "max_output_tokens": max_tokens, "temperature": temperature, "top_k": top_k}
        settings |= {"top_p": top_p, "seed": seed, "beam_width": beam_width}
        return {name: page.setting(name, control) for name, control in settings.items()}

    def refresh(self, frame: Frame) -> Updates:
        snapshot = frame.snapshot
        message = frame.message or limit_message(frame.explorer)
        return {
            self.status: escaped(message),
            self.output_text: snapshot.output_text,
            self.candidates: render.candidates_figure(snapshot),
            self.force_choice: gr.update(choices=render.candidate_radio_choices(snapshot), value=None),
        }

    def cleared(self, message: str) -> Updates:
        return {
            self.status: escaped(message),
            self.output_text: "",
            self.candidates: None,
            self.force_choice: gr.update(choices=[]),
        }

    def wire(self) -> None:
        """Step, Back and Reset answer in one message; Run streams the text and draws the figures at the end. The
        five can be called by gradio_client (undocumented; the load test uses them)."""
        page = self.page
        page.wire_move("step", self.step_btn, self.step)
        page.wire_move("back", self.back_btn, lambda e: e.back())
        self.reset_btn.click(
            page.action(lambda e: e.reset()),
            page.inputs,
            page.outputs,
            api_name="reset",
            api_visibility="undocumented",
            **QUICK,
        )
        # Run pressed again before the last one has drawn its end runs after it ("always_last"; gradio's default
        # drops the click).
        self.run_started, self.advanced = uses_gpu(self.started_run), uses_gpu(self.steps_taken)
        self.run_ended, self.run_failed = uses_gpu(self.ended_run), uses_gpu(self.failed_run)
        self.run_btn.click(
            self.run,
            page.inputs,
            page.moving_outputs,
            api_name="run",
            api_visibility="undocumented",
            show_progress="minimal",
            trigger_mode="always_last",
            concurrency_id="long",
            concurrency_limit=runtime.LONG_CONCURRENCY,
        )
        self.stop_btn.click(
            self.stop, page.explorer, self.status, api_name="stop", api_visibility="undocumented", **QUICK
        )
        page.on_input(*self.settings.values())
        presentation = page.control("presentation")  # on: the settings fold away, off: they open again
        presentation.change(
            lambda on: gr.Accordion(open=not on), presentation, self.settings_box, api_visibility="private", queue=False
        )
        # A candidate chosen, or a token typed: the handlers take it before the settings.
        self.force_candidate = page.action(self.forced_candidate, moves=True, extra=1)
        self.force_typed = page.action(self.forced_typed, moves=True, extra=1)
        self.force_choice.input(
            self.force_candidate, [page.explorer, self.force_choice, *page.inputs[1:]], page.moving_outputs, **QUICK
        )
        self.force_text.submit(
            self.force_typed, [page.explorer, self.force_text, *page.inputs[1:]], page.moving_outputs, **QUICK
        )

    @staticmethod
    def step(explorer: Explorer, force: int | None = None) -> None:
        explorer.step(force=force)

    def forced_candidate(self, explorer: Explorer, choice) -> None:
        """One of the candidates was chosen: it is the next token (a token id; through the API, anything)."""
        if isinstance(choice, str) and choice.strip().isascii() and choice.strip().isdigit():
            choice = int(choice)
        if not is_whole(choice):
            raise ExplorerError(_("the forced token must be a token id (a whole number), not {value}").format(
                value=shown(choice)))  # fmt: skip
        self.step(explorer, force=choice)

    @staticmethod
    def forced_typed(explorer: Explorer, text: str | None) -> str:
        """A token or a word was typed: its pieces are the next tokens (the message says which)."""
        return explorer.force_text(text or "")

    @staticmethod
    def stop(explorer, request: gr.Request | None = None) -> Any:
        """Stop the user's Run: the Run then ends its stream, drawing the page for the step where it halted."""
        if not isinstance(explorer, Explorer):
            return gr.skip()
        with one_at_a_time(explorer):
            if RUNS.stop(explorer, queued=gradio_patch.waiting(request, "run")):
                return gr.skip()
            return _("Nothing is running: the output has {count} tokens.").format(count=len(explorer.state.choices))

    def run(self, explorer, *values):
        """Step to the end, sending the text as it grows (the first token at once, then at most every
        `TEXT_EVERY_S`); the figures are drawn once, at the end (redrawing them for every token kept the browser a
        second behind the server; see BENCHMARKS.md). Each message costs the page about as much as a Step's answer
        without its figures, whatever it holds (every output of the event is handled), so a quick Run sends few.

        The Run itself runs no model: its steps do, each a call on the GPU (`run_started`, `advanced`, `run_ended`),
        and between them it looks at its ticket (`RUNS`). On ZeroGPU, where each call runs in a worker process,
        Stop thus reaches the decoding: a generator put whole on the GPU would decode on in the worker."""
        page = self.page
        language = Settings.from_values(values)["language"]
        explorer, light, at_end, failed = self.run_started(explorer, *values)
        if failed is not None:
            yield self.run_failed(explorer, failed, language)
            return
        with one_at_a_time(explorer, language):
            ticket = RUNS.start(explorer)
            running = _("Running…")
        started, message, sent = time.monotonic(), "", 0.0
        while ticket is not None:
            with one_at_a_time(explorer):  # per chunk, never across a yield: a Run not resumed holds no lock
                if not RUNS.may_step(explorer, ticket):  # Stop, or a newer Run
                    message = stopped_message(len(explorer.state.choices))
                    break
                if at_end:
                    break
                if time.monotonic() - started > runtime.RUN_BUDGET_S:  # a shared machine: nobody holds it long
                    message = _("Run stopped after {seconds:g} s (the time budget); press Run to go on.").format(
                        seconds=runtime.RUN_BUDGET_S
                    )
                    break
                explorer, at_end, text, failed = self.advanced(explorer, runtime.RUN_CHUNK_S)
                if failed is not None:
                    RUNS.end(explorer, ticket)
                    break
                if time.monotonic() - sent < TEXT_EVERY_S:
                    continue
            sent = time.monotonic()
            yield {page.explorer: explorer, self.status: running, self.output_text: text}
        if failed is not None:
            yield self.run_failed(explorer, failed, language)
            return
        with one_at_a_time(explorer):
            if ticket is None:
                message = stopped_message(len(explorer.state.choices), started=False)
            else:
                RUNS.end(explorer, ticket)
        yield self.run_ended(explorer, message, light)

    def started_run(self, explorer, *values) -> tuple[Explorer | None, bool, bool, str | None]:
        """A Run's start (on the GPU): the user's explorer with the page's settings, whether they left it as it
        was (then the Run's end redraws no control), whether it is at its end already, and the error, if the
        settings cannot be applied."""
        try:
            with one_at_a_time(explorer, Settings.from_values(values)["language"]):
                before = explorer.state if isinstance(explorer, Explorer) else None
                explorer, _note = self.page.explorer_with(explorer, values)
                return explorer, explorer.state == before, explorer.at_end, None
        except ExplorerError as error:
            return explorer, False, True, str(error)

    @staticmethod
    def steps_taken(explorer: Explorer, seconds: float) -> tuple[Explorer, bool, str, str | None]:
        """A Run's next steps (on the GPU): one, then more until `seconds` have passed or the translation is at its
        end. The explorer, whether it is at its end, the output so far, and the error that stopped it, if any."""
        with one_at_a_time(explorer):
            deadline = time.monotonic() + seconds
            try:
                while not explorer.at_end:
                    explorer.step()
                    if time.monotonic() >= deadline:
                        break
            except ExplorerError as error:
                return explorer, True, "", str(error)
            return (
                explorer,
                explorer.at_end,
                explorer.output_text,
                None,
            )

    def ended_run(self, explorer: Explorer, message: str, light: bool) -> Updates:
        """The page at a Run's end (on the GPU), for the step where it halted."""
        with one_at_a_time(explorer):
            return self.page.moved(self.page.refreshed(explorer, message, light=light))

    def failed_run(self, explorer, message: str, language: str) -> Updates:
        """The page after a Run that could not go on (on the GPU), with the error."""
        with one_at_a_time(explorer, language):
            return self.page.moved(self.page.refreshed(explorer if isinstance(explorer, Explorer) else None, message))
