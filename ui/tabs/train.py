"""The Train tab: train a tiny Transformer on a toy task, watch it learn, replay how its attention formed, then
explore the model with every view of the page, download it, or load one from a file.

The run itself is trained by a worker process (`explorer.training.TrainingPool`, shared by the whole server). The
page asks for news once a second (`gr.Timer`) while its run waits or trains, and draws only what changed. The
replay's slider, Play and a click on the curves move in the browser alone (`REPLAY_JS`).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import gradio as gr

from explorer import Explorer, ExplorerError, ExplorerState, recorded, training_view
from explorer.i18n import N_, _, current, speaking
from explorer.recorded import RecordedRun
from explorer.registry import OwnModel, PersonalRegistry
from explorer.render import FAMILY_NAMES
from explorer.training import (
    NORM_POSITIONS,
    POSITIONAL_ENCODINGS,
    SUFFIX,
    TOY_TASKS,
    LiveSetup,
    ModelFileError,
    TrainingRun,
    read_model_path,
)

from ..browser_internals import with_internals
from ..i18n import T, with_browser_words
from ..panel import PageAccess, Panel, Updates, escaped
from ..plot import Plot
from ..runtime import LONG, LONG_GPU_S, QUICK, uses_gpu
from ..settings import control_values

INTRODUCTION = N_(
    "Train a small Transformer here, in a minute, and watch it learn: the loss falls, and the attention of one "
    "example it never trains on, the *probe*, forms out of noise. Then explore the model you trained with every "
    "view of the page."
)
# The formula is the same in every language: it is typeset apart from the words, which the browser translates (gradio
# cannot translate a text that holds a line break or a backslash: it showed its raw key, the formula in pieces).
FORMULA_WORDS = N_("The paper's learning rate (§5.3), with warm-up:")
DISPLAY_MATH = [{"left": "$$", "right": "$$", "display": True}]
FORMULA = (
    r"$$\text{lrate} = \text{factor} \cdot d_{\text{model}}^{-0.5} \cdot "
    r"\min(\text{step}^{-0.5},\ \text{step} \cdot \text{warmup}^{-1.5})$$"
)
SETUP_FIELDS = ("task", "layers", "heads", "d_model", "positional_encoding", "norm_position", "warmup", "lr_factor",
                "label_smoothing", "batch_size", "seed")  # fmt: skip
D_MODELS = (32, 48, 64, 96, 128)
POLL_S = 1.0  # how often a page asks for news of its run
POLL = {"show_progress": "hidden", "concurrency_id": "train-poll", "concurrency_limit": 2}
FILES = Path(tempfile.gettempdir()) / "explorer-models"  # the files a Download button hands out
AVERAGE = "average"
# The message under the model row, brought into sight when it says something (no smooth scrolling: some readers
# ask their browser for less motion).
IN_SIGHT_JS = """() => {
    const message = document.querySelector("#train-message");
    if (message && message.innerText.trim()) message.scrollIntoView({block: "nearest"});
}"""
PLAY, STOP_PLAY = N_("Play the replay"), N_("Stop the replay")
SHIPPED = N_("Replay how {model} learned")

# The replay moves in the browser: `replayTo(i)` shows snapshot i (its map, its prediction, the slider's place);
# a click on the curves shows the last snapshot at or before the step clicked; Play steps through every snapshot.
REPLAY_JS = with_internals("""
if (!window.replayTo) {
    const graph = (id) => document.querySelector(`#${id} .js-plotly-plot`);
    const steps = () => { const gd = graph("train-replay"); return gd?.layout?.sliders?.[0]?.steps || []; };
    window.replayTo = (index) => {
        const gd = graph("train-replay"), all = steps();
        if (!all.length || !window.Plotly) return false;
        const i = Math.max(0, Math.min(index, all.length - 1));
        const [data, layout] = all[i].args;
        window.Plotly.update(gd, data, Object.assign({}, layout, {"sliders[0].active": i}));
        return true;
    };
    document.addEventListener("click", (event) => {
        if (!event.target.closest("#train-curves")) return;
        const hover = __HOVERED_POINTS__(graph("train-curves"));
        if (!hover.length) return;
        let chosen = 0;
        steps().forEach((step, i) => { if (Number(step.label) <= hover[0].x) chosen = i; });
        window.replayTo(chosen);
    }, true);
}
""")
# Play steps through the replay, the button saying so in the page's language (`play_js`).
PLAY_JS = """() => {
    const button = document.querySelector("#train-play");
    const words = __WORDS__;
    const stop = () => {
        clearInterval(window.replayTimer); window.replayTimer = null; button.innerText = words.play;
    };
    if (window.replayTimer) return stop();
    const gd = document.querySelector("#train-replay .js-plotly-plot");
    const last = (gd?.layout?.sliders?.[0]?.steps?.length || 0) - 1;
    let i = 0;
    if (last < 1 || !window.replayTo || !window.replayTo(i)) return;
    button.innerText = words.stop;
    window.replayTimer = setInterval(() => { i += 1; if (!window.replayTo(i) || i >= last) stop(); }, 400);
}"""


def play_js() -> str:
    """`PLAY_JS` with its words in the page's language."""
    return with_browser_words(PLAY_JS, {"play": PLAY, "stop": STOP_PLAY})


class Uploads:
    """Which page uploaded each model file: the first session that loads a path owns it (at most `KEPT` kept, the
    oldest forgotten first; gradio deletes its uploads after an hour)."""

    KEPT = 4096

    def __init__(self) -> None:
        self.owners: OrderedDict[str, str] = OrderedDict()
        self.lock = threading.Lock()

    def claim(self, path: str, session: str | None) -> bool:
        """Whether the page `session` may load the upload at `path` (None: called outside gradio, always)."""
        if session is None:
            return True
        with self.lock:
            owner = self.owners.setdefault(str(path), session)
            self.owners.move_to_end(str(path))
            while len(self.owners) > self.KEPT:
                self.owners.popitem(last=False)
        return owner == session


UPLOADS = Uploads()


def in_language(handler: Callable) -> Callable:
    """The handler, speaking the page's language: its last input is the language switch (`page.control("language")`).
    The Train tab's events do not hold the user's explorer (`ui.runtime.one_at_a_time`, which speaks the user's
    language for the other views): its timer asks for news while the user steps through a sentence."""

    def spoken(*values):
        *values, language = values
        with speaking(language):
            return handler(*values)

    spoken.__name__, spoken.__qualname__, spoken.__doc__ = handler.__name__, handler.__qualname__, handler.__doc__
    return spoken


def head_value(choice: str | None) -> int | None:
    """The probe's head control: "average" -> None, "head 2" -> 2."""
    return None if choice in (None, "", AVERAGE) else int(str(choice).removeprefix("head "))


def rate_text(d_model: float, warmup: float, factor: float) -> str:
    """The schedule's peak for the chosen numbers, in words."""
    try:
        setup = LiveSetup(d_model=int(d_model), heads=1, warmup=int(warmup), lr_factor=float(factor))
    except (TypeError, ValueError):
        return ""
    return _(
        "With d_model = {d_model}, {warmup} warm-up steps and factor {factor:g}, the rate climbs for {warmup} steps "
        "to {peak:.2e}, then falls as 1/√step."
    ).format(d_model=setup.d_model, warmup=setup.warmup, factor=setup.lr_factor, peak=setup.learning_rate(setup.warmup))


class TrainTab(Panel):
    tab = "train"

    def __init__(self, page: PageAccess):
        super().__init__(page)
        defaults = LiveSetup()
        with page.tab(T("Train"), self.tab):
            gr.Markdown(T(INTRODUCTION), elem_id="train-intro")
            self.build_setup(defaults)
            with gr.Row(elem_id="train-buttons"):
                # narrow enough for the four to share a row at 1024 px
                self.train = gr.Button(T("Train"), variant="primary", elem_id="train-start", min_width=80)
                self.pause = gr.Button(T("Pause"), interactive=False, elem_id="train-pause", min_width=80)
                self.resume = gr.Button(T("Resume"), interactive=False, elem_id="train-resume", min_width=80)
                self.reset = gr.Button(T("Reset"), interactive=False, elem_id="train-reset", min_width=80)
            self.shipped = self.build_replays(page)
            self.numbers = gr.HTML(elem_id="train-numbers")
            # hidden until there is a run to draw (no empty plot box without a word of why)
            self.curves = Plot(show_label=False, elem_id="train-curves", visible=False, eager=True)
            with gr.Row(elem_id="train-probe-view"):
                families = [(T(name), key) for key, name in FAMILY_NAMES.items()]
                self.family = gr.Radio(families, value="cross", label=T("Probe's attention"), scale=3)
                self.layer = gr.Slider(0, defaults.layers - 1, value=0, step=1, label=T("Layer"), scale=1)
                self.head = gr.Dropdown(self.head_choices(defaults.heads), value=AVERAGE, label=T("Head"), scale=1)
            self.play = gr.Button(T(PLAY), elem_id="train-play", size="sm", visible=False)
            self.replay = Plot(show_label=False, elem_id="train-replay", visible=False, eager=True)
            self.caption = gr.Markdown(elem_id="train-caption", elem_classes="caption")
            gr.HTML("", js_on_load=REPLAY_JS, elem_id="train-replay-js")
            with gr.Row(equal_height=True, elem_id="train-model-row"):
                self.snapshot = gr.Dropdown(
                    [], label=T("The model at"), elem_id="train-snapshot", scale=3, min_width=260
                )
                self.explore = gr.Button(T("Explore it"), elem_id="train-explore", interactive=False, scale=1)
                self.download = gr.DownloadButton(T("Download"), elem_id="train-download", interactive=False, scale=1)
                # Any file reaches `loaded`, which says in the page's language why one cannot be read (with
                # `file_types`, gradio refused a .pt itself, and the last file's message stayed).
                self.upload = gr.UploadButton(T("Load a model file"), type="filepath", elem_id="train-upload", scale=1)
            self.message = gr.Markdown(elem_id="train-message", elem_classes="note")
            self.timer = gr.Timer(POLL_S, active=False)
            # the link's setup; empty, as the state's is when the link has none, so that opening a link changes it
            # only when it has a setup (a change is two more events)
            self.link = page.setting("training", gr.Textbox("", visible=False, elem_id="train-link"))
            # in the tab: gradio numbers the tabs by their place among what the tab bar holds (`ui.page.build_page`)
            self.run = gr.State(None)  # the user's `TrainingRun`
            self.drawn = gr.State(None)  # what the page shows of it: (run id, version) and the replay's key

    @staticmethod
    def build_replays(page: PageAccess) -> dict[str, gr.Button]:
        """A button for each built-in model whose training was recorded: replay how it learned."""
        names = recorded.replays(page.registry)
        if not names:
            return {}
        with gr.Row(elem_id="train-shipped"):
            gr.Markdown(
                T("Or watch a shipped model learn, as it was recorded when it was trained:"), elem_classes="caption"
            )
            return {  # in English until the page speaks another language (`spoken`)
                name: gr.Button(SHIPPED.format(model=name), size="sm", elem_id=f"train-replay-{name}", scale=0)
                for name in names
            }

    def build_setup(self, defaults: LiveSetup) -> None:
        """The task, the model's shape and the recipe: the controls of a `LiveSetup`."""
        with gr.Row():
            tasks = [(T(task.title), name) for name, task in TOY_TASKS.items()]  # marked: `training_view.TASK_TEXTS`
            self.task = gr.Dropdown(tasks, value=defaults.task, label=T("Task"), elem_id="train-task", scale=3)
            self.seed = gr.Number(defaults.seed, label=T("Seed"), precision=0, minimum=0, elem_id="train-seed", scale=1)
        look_for = T(TOY_TASKS[defaults.task].look_for)
        self.look_for = gr.Markdown(look_for, elem_classes="caption", elem_id="train-look")
        with gr.Accordion(T("The model"), open=False, elem_id="train-model-box"):
            with gr.Row():
                self.layers = gr.Slider(1, 3, value=defaults.layers, step=1, label=T("Layers (each side)"))
                self.heads = gr.Slider(1, 4, value=defaults.heads, step=1, label=T("Heads"))
                self.d_model = gr.Dropdown(list(D_MODELS), value=defaults.d_model, label="d_model")
            with gr.Row():
                self.positional = gr.Radio(
                    [(T(training_view.POSITIONAL_NAMES[kind]), kind) for kind in POSITIONAL_ENCODINGS],
                    value=defaults.positional_encoding,
                    label=T("Positions"),
                )
                norms = [(T(training_view.NORM_NAMES[kind]), kind) for kind in NORM_POSITIONS]
                self.norm = gr.Radio(norms, value=defaults.norm_position, label=T("Layer norm"))
        with gr.Accordion(T("The recipe"), open=False, elem_id="train-recipe-box"):
            gr.Markdown(T(FORMULA_WORDS), elem_id="train-formula-words")
            gr.Markdown(
                FORMULA, elem_id="train-formula", latex_delimiters=[{"left": "$$", "right": "$$", "display": True}]
            )
            rate = rate_text(defaults.d_model, defaults.warmup, defaults.lr_factor)  # English until `spoken`
            self.rate = gr.Markdown(rate, elem_classes="caption")
            with gr.Row():
                self.warmup = gr.Number(
                    defaults.warmup, label=T("Warm-up steps"), precision=0, minimum=1, maximum=10_000
                )
                self.factor = gr.Number(defaults.lr_factor, label=T("Factor"), minimum=0.01, maximum=10, step=0.1)
                self.smoothing = gr.Slider(
                    0, 0.5, value=defaults.label_smoothing, step=0.05, label=T("Label smoothing")
                )
                self.batch = gr.Slider(8, 256, value=defaults.batch_size, step=8, label=T("Batch (sequences)"))

    @property
    def setup_controls(self) -> list:
        """The controls of `SETUP_FIELDS`, in their order."""
        return [self.task, self.layers, self.heads, self.d_model, self.positional, self.norm, self.warmup,
                self.factor, self.smoothing, self.batch, self.seed]  # fmt: skip

    @property
    def shown(self) -> list:
        """What a poll may draw."""
        return [self.numbers, self.curves, self.replay, self.play, self.caption, self.snapshot, self.train,
                self.pause, self.resume, self.reset, self.explore, self.download, self.timer, self.drawn]  # fmt: skip

    @staticmethod
    def head_choices(heads: int) -> list[tuple[str, str]]:
        """The probe's head control: (label, value), the labels in the language being spoken."""
        return [(_("average"), AVERAGE), *((_("head {head}").format(head=h), f"head {h}") for h in range(heads))]

    # ---- events ---------------------------------------------------------------------------------------------

    def wire(self) -> None:
        """Every handler that writes words gets the page's language as its last input (`in_language`)."""
        page, view, language = self.page, [self.family, self.layer, self.head], self.page.control("language")
        hidden = {"api_visibility": "private"}
        described = [self.task, self.d_model, self.warmup, self.factor]
        for control in described:
            control.change(in_language(self.described), [*described, language], [self.look_for, self.rate],
                           **hidden, **QUICK)  # fmt: skip
        # One Train at a time on the server: two clicks of a page cannot both see no run and start two
        self.train.click(in_language(self.start), [self.run, *self.setup_controls, language], [self.run, self.link,
                         self.message, self.layer, self.head, *self.shown], **hidden,
                         **(QUICK | {"concurrency_id": "train-start", "concurrency_limit": 1}))  # fmt: skip
        for name, button in self.shipped.items():
            button.click(in_language(self.replay_of(name)), [self.run, language], [self.run, self.message,
                         self.layer, self.head, *self.shown], **hidden, **QUICK)  # fmt: skip
        self.pause.click(self.paused, self.run, self.shown, **hidden, **QUICK)
        self.resume.click(in_language(self.resumed), [self.run, language], [self.message, *self.shown], **hidden,
                          **QUICK)  # fmt: skip
        self.reset.click(self.cleared_run, self.run, [self.run, self.message, *self.shown], **hidden, **QUICK)
        self.timer.tick(in_language(self.poll), [self.run, self.drawn, page.explorer, *view, language], self.shown,
                        **hidden, **POLL)  # fmt: skip
        for control in view:
            control.input(in_language(self.redrawn), [self.run, *view, language], [self.replay, self.drawn],
                          **hidden, **QUICK)  # fmt: skip
        self.play.click(None, None, None, js=play_js(), **hidden)
        self.snapshot.input(in_language(self.prepared), [self.run, self.snapshot, language],
                            [self.download, self.message], **hidden, **QUICK)  # fmt: skip
        explored = list(dict.fromkeys([page.tab_opener, *page.inputs[1:], *page.outputs, page.status, self.message]))
        # The model is taken from the run (or the file) here, and explored on the GPU (`explored`): a run holds its
        # worker process, which cannot cross to a ZeroGPU worker.
        self.explored_on_gpu = uses_gpu(in_language(self.explored), LONG_GPU_S)
        explore = in_language(self.explored_snapshot)

        def load(path: str | None, explorer, language: str, request: gr.Request | None = None) -> Updates:
            with speaking(language):
                return self.loaded(path, explorer, request.session_hash if request is not None else None)

        self.explore.click(explore, [self.run, self.snapshot, page.explorer, language], explored, **hidden, **LONG)
        # Only the current message: the last one goes as a new file is chosen, and the answer is brought into sight
        # (the button sits low in the tab: at 1400×1000 the message fell below the window).
        self.upload.click(lambda: {self.message: "", page.status: ""}, None, [self.message, page.status], **hidden)
        self.upload.upload(load, [self.upload, page.explorer, language], explored, **hidden, **LONG).then(
            None, None, None, js=IN_SIGHT_JS, **hidden
        )
        # A shared link's setup fills the controls; the setup of a new run goes into the link.
        self.link.change(in_language(self.from_link), [self.link, language], [*self.setup_controls, self.message],
                         **hidden)  # fmt: skip
        self.link.change(page.apply_if_changed("training"), page.inputs, page.outputs, **hidden, **QUICK)
        # Another language (the switch, or a page opened in Chinese): the words the server wrote, again in it.
        language.change(in_language(self.spoken), [self.run, *described, self.head, language],
                        [self.look_for, self.rate, self.head, *self.shipped.values(), self.drawn, self.timer],
                        **hidden, **QUICK)  # fmt: skip

    @staticmethod
    def described(task: str, d_model: float, warmup: float, factor: float) -> tuple[str, str]:
        look_for = _(TOY_TASKS[task].look_for) if task in TOY_TASKS else ""
        return look_for, rate_text(d_model, warmup or 0, factor or 0)

    def spoken(
        self, run: TrainingRun | None, task: str, d_model: float, warmup: float, factor: float, head: str
    ) -> Updates:
        """The page's language changed: the tab's words that the server wrote, in it (the fixed words change in the
        browser). The run's numbers and figures wait for the next poll, which draws them whole (and not while the
        tab is hidden)."""
        look_for, rate = self.described(task, d_model, warmup, factor)
        choices = self.head_choices(run.shape[1] if run is not None else LiveSetup().heads)
        head = head if head in {value for _label, value in choices} else AVERAGE
        updates: Updates = {self.look_for: look_for, self.rate: rate, self.head: gr.update(choices=choices, value=head)}
        updates |= {button: _(SHIPPED).format(model=name) for name, button in self.shipped.items()}
        if run is not None:
            updates |= {self.drawn: None, self.timer: gr.Timer(active=True)}
        return updates

    def from_link(self, text: str) -> Updates:
        if not text:
            return {self.message: gr.skip()}
        try:
            setup = LiveSetup.from_json(text)
        except ValueError as error:
            return {self.message: _("The link's training setup cannot be used: {error}").format(error=escaped(error))}
        values = dict(zip(SETUP_FIELDS, self.setup_controls, strict=True))
        return {control: getattr(setup, name) for name, control in values.items()}

    def start(self, run: TrainingRun | None, *values) -> Updates:
        """Train: a new run with the setup on the page (the user's earlier run is stopped)."""
        fields = dict(zip(SETUP_FIELDS, values, strict=True))
        try:
            for name in ("layers", "heads", "d_model", "warmup", "batch_size", "seed"):
                fields[name] = int(fields[name]) if isinstance(fields[name], int | float) else fields[name]
            setup = LiveSetup(**fields)
        except (TypeError, ValueError) as error:
            return {self.message: _("This setup cannot be trained: {error}").format(error=escaped(error))}
        pool = self.page.pool
        if run is not None and run.active:
            pool.stop(run, N_("replaced by a new run"))
        run = pool.new_run(setup)
        try:
            pool.start(run)
        except ValueError as error:  # every place to train is taken
            return {self.run: None, self.message: escaped(error), **self.buttons(None)}
        return {
            self.run: run,
            self.link: setup.to_json(),
            self.message: "",
            self.layer: gr.update(maximum=setup.layers - 1, value=0),
            self.head: gr.update(choices=self.head_choices(setup.heads), value=AVERAGE),
            **self.drawn_run(run, None, "cross", 0, None),
        }

    def replay_of(self, name: str) -> Callable[[TrainingRun | None], Updates]:
        """The handler of the button that replays `name` (a function with a name, as gradio and the tests read it)."""

        def replayed(run: TrainingRun | None) -> Updates:
            return self.replayed(name, run)

        return replayed

    def replayed(self, name: str, run: TrainingRun | None) -> Updates:
        """Replay how the built-in model `name` learned (the user's own run, if any, is stopped)."""
        if run is not None and run.active:
            self.page.pool.stop(run, N_("replaced by a replay"))
        try:
            run = recorded.recorded_run(self.page.registry, name)
        except (OSError, ValueError, ExplorerError) as error:
            cannot = _("The replay of {model} cannot be read: {error}")
            return {self.message: cannot.format(model=escaped(name), error=escaped(error))}
        layers, heads = run.shape
        return {
            self.run: run,
            self.message: "",
            self.layer: gr.update(maximum=layers - 1, value=0),
            self.head: gr.update(choices=self.head_choices(heads), value=AVERAGE),
            **self.drawn_run(run, None, "cross", 0, None),
        }

    def paused(self, run: TrainingRun | None) -> Updates:
        if run is not None and run.active:
            self.page.pool.pause(run)
        return {self.pause: gr.update(interactive=False)}  # the next poll shows it paused

    def resumed(self, run: TrainingRun | None) -> Updates:
        if run is None:
            return {self.message: _("There is no run to resume: press Train.")}
        try:
            self.page.pool.start(run)
        except ValueError as error:
            return {self.message: escaped(error)}
        return {self.message: "", **self.buttons(run), self.timer: gr.Timer(active=True)}

    def cleared_run(self, run: TrainingRun | None) -> Updates:
        """Reset: the run stops and is forgotten (a model explored from it stays in the picker)."""
        if run is not None and run.active:
            self.page.pool.stop(run, N_("reset"))
        return {
            self.run: None,
            self.message: "",
            self.numbers: "",
            self.curves: gr.update(value=None, visible=False),
            self.replay: gr.update(value=None, visible=False),
            self.play: gr.update(visible=False),
            self.caption: "",
            self.snapshot: gr.update(choices=[], value=None),
            self.download: gr.update(value=None, interactive=False),
            **self.buttons(None),
            self.timer: gr.Timer(active=False),
            self.drawn: None,
        }

    def poll(self, run: TrainingRun | None, drawn, explorer, family: str, layer: float, head: str) -> Updates:
        """The page asks for news of its run: what changed since it last drew it, while the Train tab is open."""
        if run is None:
            return {self.timer: gr.Timer(active=False)}
        run.last_seen = time.monotonic()  # the page is open: the run goes on
        if isinstance(explorer, Explorer) and explorer.state.tab != self.tab:  # nobody looks: draw it on return
            return {self.drawn: None} if drawn is not None else {self.drawn: gr.skip()}
        return self.drawn_run(run, drawn, family, int(layer or 0), head_value(head))

    def drawn_run(self, run: TrainingRun, drawn, family: str, layer: int, head: int | None) -> Updates:
        """What changed of the run since `drawn`: its numbers and curves, the replay (when a snapshot or a look at
        the probe came in, or the view changed), the snapshots, the buttons; the timer stops once the run does."""
        version, replay_key = (run.id, run.version), (run.id, len(run.snapshots), run.probe and run.probe.step,
                                                      family, layer, head)  # fmt: skip
        if drawn is not None and drawn[0] == version:  # nothing new
            return {self.drawn: gr.skip()} if run.active else {self.timer: gr.Timer(active=False)}
        choices = training_view.snapshot_choices(run)
        updates: Updates = {
            self.numbers: training_view.numbers_text(run, self.page.pool.place(run)),
            self.curves: gr.update(value=training_view.curves_figure(run), visible=True),
            **self.buttons(run),
            self.snapshot: gr.update(choices=choices, value=choices[0][1] if choices else None),
            self.timer: gr.Timer(active=run.active),
            self.drawn: (version, replay_key),
        }
        if drawn is None or drawn[1] != replay_key:
            replay = training_view.replay_figure(run, family, layer, head)
            updates[self.replay] = gr.update(value=replay, visible=replay is not None)
            updates[self.play] = gr.update(visible=replay is not None)
            updates[self.caption] = training_view.probe_caption(run)
        if not run.active and run.snapshots and run.downloadable:
            updates[self.download] = gr.update(value=self.file_of(run, None), interactive=True)
        return updates

    def redrawn(self, run: TrainingRun | None, family: str, layer: float, head: str) -> Updates:
        """Another family, layer or head of the probe: the replay again (the numbers did not change)."""
        if run is None:
            return {self.replay: gr.skip()}
        layer, head = int(layer or 0), head_value(head)
        return {
            self.replay: training_view.replay_figure(run, family, layer, head),
            self.drawn: None,  # the next poll draws everything again, with this view
        }

    def buttons(self, run: TrainingRun | None) -> Updates:
        active = run is not None and run.active
        resumable = run is not None and not active and run.state is not None and run.seconds < run.budget_s
        done = run is not None and not active
        return {
            self.train: gr.update(interactive=not active),
            self.pause: gr.update(interactive=active),
            self.resume: gr.update(interactive=resumable),
            self.reset: gr.update(interactive=run is not None),
            self.explore: gr.update(interactive=done and any(s.weights for s in run.snapshots)),
            self.download: gr.update(interactive=done and bool(run.snapshots) and run.downloadable),
        }

    # ---- the trained model: download, explore, load -------------------------------------------------------------

    def file_of(self, run: TrainingRun, step: int | None) -> str:
        """The model of the snapshot at `step` (the latest when None) as a file to download (its path)."""
        model, _exact = training_view.chosen_model(run, step)
        folder = FILES / f"{os.getpid()}-{run.id}"
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"*{SUFFIX}"):  # one file a run at a time
            old.unlink(missing_ok=True)
        path = folder / model.file_name()
        path.write_bytes(model.to_bytes())
        return str(path)

    def prepared(self, run: TrainingRun | None, step) -> Updates:
        """Another snapshot chosen: its file for the Download button."""
        if run is None or run.active or not run.downloadable:
            return {self.download: gr.skip()}
        try:
            return {self.download: gr.update(value=self.file_of(run, int(step) if step is not None else None))}
        except ValueError as error:
            return {self.message: escaped(error)}

    def explored_snapshot(self, run: TrainingRun | None, step, explorer) -> Updates:
        """Explore it: the snapshot becomes one of the user's models, and the page opens on it."""
        if run is None:
            return {self.message: _("Train a model first.")}
        step = int(step) if step is not None else None
        try:
            if isinstance(run, RecordedRun):
                own = recorded.snapshot_model(self.page.registry, run, step if step is not None else run.step)
            else:
                model, exact = training_view.chosen_model(run, step)
                own = training_view.own_model(model, exact)
        except ValueError as error:
            return {self.message: escaped(error)}
        return self.explored_on_gpu(explorer, own, current())

    def loaded(self, path: str | None, explorer, session: str | None = None) -> Updates:
        """Load a model file: checked as untrusted input (`read_model_file`), then explored as a trained one. Only a
        file this page uploaded: gradio takes any file of its shared upload folder by its path, so the first page that
        loads a file owns it, and another page that names it is refused (`UPLOADS`)."""
        if not path:
            return {self.message: gr.skip()}
        if not UPLOADS.claim(path, session):
            cannot = _("**{file}** cannot be loaded: it was uploaded by another page; upload it from this one")
            return {self.message: cannot.format(file=escaped(Path(path).name))}
        try:
            model = read_model_path(path)
        except ModelFileError as error:
            cannot = _("**{file}** cannot be loaded: {error}")
            return {self.message: cannot.format(file=escaped(Path(path).name), error=escaped(error))}
        return self.explored_on_gpu(explorer, training_view.own_model(model, origin=training_view.LOADED), current())

    def explored(self, explorer, own: OwnModel) -> Updates:
        """The page on `own`, a model of the user's: in their picker, on its first example, in the Attention tab, in
        the page's language."""
        page = self.page
        base = explorer if isinstance(explorer, Explorer) else None
        registry = PersonalRegistry.of(base.registry if base is not None else page.registry)
        name = registry.add(own)  # numbered when another model of the user's has the same words
        state = (base.state if base is not None else ExplorerState(model=page.default_model)).replace(
            model=name, source=own.examples[0][0], choices=(), silenced=frozenset(), layer=0, head=None, grid=False,
            tab="attention", language=current(),
        )  # fmt: skip
        try:
            explorer = Explorer(registry, state)
        except ExplorerError as error:
            return {self.message: escaped(error)}
        controls = {page.control(key): value for key, value in control_values(explorer.state).items()}
        message = _("Exploring **{model}**, a model of yours: Step through its translation.").format(
            model=escaped(name)
        )
        return page.opening("attention") | {self.message: ""} | controls | page.refreshed(explorer, message)
