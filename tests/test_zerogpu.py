"""The page on a ZeroGPU Space: every handler that runs a model runs in a worker process, on pickled copies of its
arguments, and answers with pickled values (`tests.zerogpu`, a stand-in for `spaces`). Its answers must be those of
the page without ZeroGPU, and the page's own process must never touch a packed weight."""

from __future__ import annotations

import pickle
import subprocess
import sys

import plotly.graph_objects as go
import pytest
import torch
from gradio.blocks import Block

from explorer import Explorer, ExplorerState, ModelRegistry, recorded
from explorer.figures.base import Figure
from explorer.registry import PersonalRegistry
from tests import zerogpu
from tests.conftest import CHECKPOINTS, ROOT
from ui import gradio_patch, runtime
from ui.page import build_page
from ui.settings import DEFAULTS, NAMES
from ui.tabs import TrainTab, TwinsTab

SOURCE = "three hundred and forty-two"


def values(**changes) -> list:
    settings = DEFAULTS | {"model": "numbers-de", "source": SOURCE} | changes
    return [settings[name] for name in NAMES]


@pytest.fixture(scope="module")
def pages():
    """The same page twice: without ZeroGPU, and on the stand-in, its models packed. One thread, as in the workers
    (`tests.zerogpu`) and the app: sums made by two threads may differ in their last bit."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    plain = build_page(ModelRegistry(CHECKPOINTS))
    registry = ModelRegistry(CHECKPOINTS)
    registry.preload(["numbers-de", "en-de"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "GPU", zerogpu.GPU)
        patch.setattr(runtime, "APART", True)
        apart = build_page(registry)
    zerogpu.pack(registry)
    yield plain, apart
    zerogpu.unpack_all()
    torch.set_num_threads(threads)
    plain.close()
    apart.close()


def handler(page, api_name: str):
    """The page's handler of the event named `api_name`."""
    return next(fn.fn for fn in page.demo.fns.values() if fn.api_name == api_name)


def wired(page, component, event: str = "click", inputs: int | None = None):
    """The page's handler of `event` on `component` (the one with `inputs` inputs, where it has several)."""
    return next(
        fn.fn
        for fn in page.demo.fns.values()
        if (component._id, event) in fn.targets and fn.fn is not None and inputs in (None, len(fn.inputs))
    )


def comparable(page, updates) -> dict:
    """An answer in terms that two pages share: each component by its place in the page, figures as JSON, an explorer
    as its state, a tab opened by its key (`Page.opening` counts the openings of each page)."""
    if isinstance(updates, tuple):
        return {i: comparable(page, value) for i, value in enumerate(updates)}
    places = {block_id: i for i, block_id in enumerate(sorted(page.demo.blocks))}

    def value_of(value):
        if isinstance(value, Explorer):
            return value.state
        if isinstance(value, (go.Figure, Figure)):
            return value.to_json()
        if isinstance(value, Block):
            return type(value).__name__, {key: getattr(value, key, None) for key in ("selected", "label", "open")}
        if isinstance(value, dict):  # gr.update(value=…, …)
            return {key: value_of(item) for key, item in value.items()}
        return value

    def opened(component, value):
        return value.split(" ")[0] if component is page.tab_opener else value_of(value)

    return {places[component._id]: opened(component, value) for component, value in updates.items()}


def both(pages, act):
    """`act(page)` on both pages, answered alike."""
    plain, apart = pages
    zerogpu.calls.clear()
    answer = act(apart)
    assert comparable(apart, answer) == comparable(plain, act(plain))
    return answer


def test_the_page_process_cannot_compute_with_a_packed_model(pages):
    """The check can fail: the weights of the packed models are not in the page's process."""
    _plain, apart = pages
    with pytest.raises((NotImplementedError, RuntimeError)):
        Explorer(apart.registry, ExplorerState(model="numbers-de", source=SOURCE)).snapshot().cross.sum().item()


def test_steps_back_forcing_and_reset_answer_on_zerogpu_as_without_it(pages):
    explorers = {}

    def act(name, *extra):
        def on(page):
            answer = handler(page, name)(explorers.get(page), *extra, *values())
            explorers[page] = answer[page.explorer]
            return answer

        return both(pages, on)

    act("apply")
    for name in ("step", "step", "back", "step", "step"):
        act(name)
        assert zerogpu.calls == [("handler", runtime.QUICK_GPU_S)]  # each ran in a worker
    _plain, apart = pages
    assert explorers[apart].state.choices == (None, None, None)
    assert explorers[apart]._decoding is None  # the page's process holds no decoding: it cannot compute one
    both(pages, lambda page: page.panels[2].force_typed(explorers[page], "zwei", *values()))
    assert explorers[apart].state.choices[-1] is not None
    act("reset")


def test_a_run_streams_and_ends_on_zerogpu_as_without_it(pages):
    """The first token at once, then the page for the end (how many texts come between depends on the time taken)."""
    answers = {page: list(handler(page, "run")(None, *values())) for page in pages}
    plain, apart = pages
    for first_or_last in (0, -1):
        assert comparable(apart, answers[apart][first_or_last]) == comparable(plain, answers[plain][first_or_last])
    assert answers[apart][-1][apart.explorer].state.choices
    assert {name for name, _seconds in zerogpu.calls} >= {"started_run", "steps_taken", "ended_run"}


def test_a_run_at_the_end_of_the_translation_sends_only_the_end(pages):
    """Nothing to run: no "Running…" flashes, on either page."""
    for page in pages:
        explorer = list(handler(page, "run")(None, *values()))[-1][page.explorer]
        again = list(handler(page, "run")(explorer, *values()))
        assert len(again) == 1 and again[0][page.explorer].state == explorer.state


def test_stop_reaches_a_run_on_zerogpu_and_the_page_ends_where_the_run_halted(pages):
    _plain, apart = pages
    explorer = handler(apart, "apply")(None, *values())[apart.explorer]
    run = handler(apart, "run")(explorer, *values())
    first = next(run)
    assert first[apart.explorer] is explorer  # the page keeps its own explorer, the worker's copy taken into it
    assert handler(apart, "stop")(explorer) is not None
    *_, last = run
    tokens = len(explorer.state.choices)
    assert 0 < tokens < 8 and f"Stopped after {tokens} token" in last[apart.status]


def test_every_tab_opens_on_zerogpu_as_without_it(pages):
    explorers = {page: handler(page, "apply")(None, *values())[page.explorer] for page in pages}
    for key in pages[1].tab_by_key:
        both(pages, lambda page, key=key: wired(page, page.tab_by_key[key], "select", inputs=1)(explorers[page]))


def test_links_comparisons_and_the_api_answer_on_zerogpu_as_without_it(pages):
    explorers = {page: handler(page, "apply")(None, *values())[page.explorer] for page in pages}
    link = explorers[pages[0]].state.replace(choices=(None, None)).to_link()
    restore = {page: next(fn.fn for fn in page.demo.fns.values() if fn.name == "restore") for page in pages}
    both(pages, lambda page: restore[page]({"state": link}, None, *values()))
    twins = {page: next(panel for panel in page.panels if isinstance(panel, TwinsTab)) for page in pages}
    both(pages, lambda page: wired(page, twins[page].button)(explorers[page], *values()))
    assert zerogpu.calls == [("handler", runtime.LONG_GPU_S)]
    translated = {page: handler(page, "translate")("twenty-one", "numbers-de") for page in pages}
    assert translated[pages[0]] == translated[pages[1]] and translated[pages[1]]["translation"] == "einundzwanzig"


def test_an_explorer_crosses_to_a_worker_and_back_whole(registry):
    """What `pickle` makes of an explorer: the same state and snapshot, the same registry (not a copy of its models),
    and a decoding replayed where it is next needed; a user's own model goes with it."""
    explorer = Explorer(registry, ExplorerState(model="numbers-de", source=SOURCE))
    for _ in range(3):
        explorer.step()
    snapshot = explorer.snapshot()
    copy = pickle.loads(pickle.dumps(explorer))
    assert copy.registry is registry and copy.state == explorer.state and copy._decoding is None
    torch.testing.assert_close(copy.snapshot().cross, snapshot.cross)
    assert copy.decoding.output_ids == explorer.decoding.output_ids  # replayed
    assert copy.step().token_id == explorer.step().token_id
    explorer.adopt(copy)
    assert explorer.state == copy.state and explorer.lock is not copy.lock
    personal = PersonalRegistry(registry)
    name = personal.add(recorded_snapshot(registry))
    mine = Explorer(personal, ExplorerState(model=name, source=SOURCE))
    copy = pickle.loads(pickle.dumps(mine))  # the user's own model goes whole: it lives nowhere else
    assert copy.registry.shared is registry and copy.registry is not personal
    assert (
        copy.decoding.output_ids == mine.decoding.output_ids
        and copy.snapshot().predictions == mine.snapshot().predictions
    )


def recorded_snapshot(registry):
    """An early snapshot of numbers-de's recorded training, as the Train tab's "Explore it" makes one of the user's
    models."""
    run = recorded.recorded_run(registry, "numbers-de")
    return recorded.snapshot_model(registry, run, next(snapshot.step for snapshot in run.snapshots if snapshot.weights))


def test_a_trained_model_is_explored_on_zerogpu_as_without_it(pages):
    """The Train tab takes the model from its run in the page's process; exploring it runs on the GPU."""
    trains = {page: next(panel for panel in page.panels if isinstance(panel, TrainTab)) for page in pages}
    own = recorded_snapshot(pages[0].registry)
    answer = both(pages, lambda page: trains[page].explored_on_gpu(None, own, "en"))
    assert zerogpu.calls == [("explored", runtime.LONG_GPU_S)]
    explorer = answer[pages[1].explorer]
    assert explorer.state.model == own.description.label and explorer._decoding is None


def test_with_spaces_installed_every_model_handler_asks_for_the_gpu_with_a_duration(monkeypatch, registry):
    """The real `spaces.GPU` (outside a Space it returns the handler itself): each handler that runs a model goes
    through it, with its duration, and answers as undecorated."""
    import spaces

    asked = []

    def recorded(task=None, *, duration=None):
        if task is None:
            return lambda task: recorded(task, duration=duration)
        asked.append((task.__name__, duration))
        return spaces.GPU(task, duration=duration)

    monkeypatch.setattr(runtime, "GPU", recorded)
    page = build_page(registry)
    names = {name for name, _duration in asked}
    assert {"handler", "started_run", "steps_taken", "ended_run", "failed_run", "restore", "translate"} <= names
    assert all(duration in (runtime.QUICK_GPU_S, runtime.LONG_GPU_S) for _name, duration in asked)
    monkeypatch.setattr(runtime, "GPU", None)
    undecorated = build_page(registry)
    for api_name in ("apply", "step"):
        answers = [handler(p, api_name)(None, *values()) for p in (page, undecorated)]
        assert comparable(page, answers[0]) == comparable(undecorated, answers[1])
    page.close()
    undecorated.close()


@pytest.mark.slow
@pytest.mark.skipif(torch.version.cuda is None, reason="ZeroGPU's emulation of CUDA needs a CUDA build of torch")
def test_the_app_starts_as_a_zerogpu_space_starts_it():
    """`python app.py` with `SPACES_ZERO_GPU` set, as on a ZeroGPU Space: `spaces` is imported before torch (else it
    refuses to start), the models go to the (emulated) GPU at start, and each model handler is a ZeroGPU one."""
    script = (
        "import app, spaces.zero.torch.patching as patching; from ui import runtime\n"
        "assert app.DEVICE == 'cuda' and runtime.APART and runtime.RUN_CHUNK_S > 0\n"
        "assert {'numbers-de', 'en-de'} <= set(app.REGISTRY._loaded)\n"
        "assert len(patching.cuda_aliases) > 0  # the weights, on the GPU as ZeroGPU emulates it\n"
        "zero = [fn for fn in app.demo.fns.values() if hasattr(getattr(fn.fn, 'on_gpu', None), 'zerogpu')]\n"
        "assert len(zero) > 10, len(zero)  # Step, Back, every tab, every setting, the comparisons, the API…\n"
    )
    environment = {"SPACES_ZERO_GPU": "true", "SPACES_ZERO_DEVICE_API_URL": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env={**environment, "PATH": "/usr/bin:/bin"}, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def requirements(name: str) -> dict[str, str]:
    """The pins of a requirements file, its `-r` includes followed: {package: version}."""
    pins = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            pins |= requirements(line[3:].strip())
        elif "==" in line:
            package, version = line.split("==")
            pins[package.strip().lower().replace("_", "-")] = version.strip()
    return pins


def test_the_space_asks_for_what_zerogpu_supports_and_a_local_install_keeps_its_pins():
    """ZeroGPU runs torch 2.8-2.11 on Python 3.10 or 3.12, and a Space's SDK brings gradio, huggingface_hub and spaces
    (https://huggingface.co/docs/hub/spaces-zerogpu); a machine of yours installs requirements-app.txt."""
    front = ROOT.joinpath("README.md").read_text(encoding="utf-8").split("---")[1]
    settings = dict(line.split(": ", 1) for line in front.splitlines() if ": " in line and not line.startswith(" "))
    assert settings["python_version"].strip('"') in ("3.10", "3.12")
    space, local = requirements("requirements.txt"), requirements("requirements-app.txt")
    assert (2, 8) <= tuple(int(part) for part in space["torch"].split(".")[:2]) <= (2, 11)
    assert not {"gradio", "spaces", "huggingface-hub"} & set(space)
    assert local["torch"] == "2.13.0" and local["gradio"] == settings["sdk_version"] == gradio_patch.GRADIO_VERSION
    assert {package: version for package, version in space.items() if package != "torch"} == {
        package: version for package, version in local.items() if package not in ("torch", "gradio", "huggingface-hub")
    }
    for entry in front.split("preload_from_hub:")[1].split("\n---")[0].strip().splitlines():
        repo, files = entry.strip().removeprefix("- ").split(" ")
        assert "/" in repo and "*" not in files and all(files.split(","))
