"""Shared fixtures: tiny models, tiny sentencepiece models, tiny Marian checkpoints — all built locally — the
shipped models as the explorer reads them, the devices a model runs on (`device`: the CPU, and the GPU where there
is one) and a stand-in for a GPU's tensors (`Elsewhere`). The markers (`slow`, `browser`, `cuda`) are declared in
pyproject.toml."""

from __future__ import annotations

import functools
import io
import json
import os
import sys
from pathlib import Path

import pytest
import sentencepiece as spm
import torch

os.environ["HF_HUB_OFFLINE"] = "1"  # tests never touch the network
# Two threads, or the cores shared among pytest-xdist's workers: more threads than cores make PyTorch's threads spin
# waiting for each other (two workers of two threads each on two cores ran the fast tests 6 times slower).
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 1))
torch.set_num_threads(max(1, min(2, (os.cpu_count() or 1) // WORKERS)))

from tests import artifacts  # noqa: E402
from transformer.model import Transformer, TransformerConfig  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINTS = ROOT / "checkpoints"  # the shipped models
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]  # where the tests that run a model run it
MAX_WORKERS = 4  # each worker that runs browser tests starts an app and a Chromium: about 1 GB


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--screenshots",
        action="store_true",
        help="keep a screenshot of each view the browser tests look at, in test-artifacts/ (a failed browser test's "
        "pages are kept always)",
    )


def pytest_configure(config) -> None:
    artifacts.KEEP["views"] = config.getoption("screenshots")


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pyproject.toml): one pytest-xdist worker per core, at most `MAX_WORKERS`."""
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


def in_running_order(items: list, workers: int) -> list:
    """`items` with the tests marked `long` first. pytest-xdist (`--dist worksteal`) gives the first worker the first
    `len(items) // workers` tests and the next worker the next, and a worker with nothing left takes the last of
    another's: a long test late in the order ran alone at the end of the run (the accessibility audits, half a minute
    each, left a core idle for most of the run's last minute). So the long tests that work (a browser's pages, a
    benchmark) open the first worker's share, and those that mostly wait (a class in real time, `long(waits=True)`)
    open the second's, beside them; the others keep their order."""
    working, waiting, rest = [], [], []
    for item in items:
        long = item.get_closest_marker("long")
        (rest if long is None else waiting if long.kwargs.get("waits") else working).append(item)
    if workers < 2:
        return working + waiting + rest
    first = max(0, len(items) // workers - len(working))  # the rest of the first worker's share
    return working + rest[:first] + waiting + rest[first:]


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` are skipped where there is no GPU, so that one command runs the suite everywhere; the
    tests are put in their running order (`in_running_order`)."""
    items[:] = in_running_order(items, WORKERS)
    if torch.cuda.is_available():
        return
    no_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(no_gpu)


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """The device a test puts its model on. A test that asks for it runs once per device present: `test_x[cpu]`
    everywhere and `test_x[cuda]` where PyTorch sees a GPU, so the suite run on a GPU machine covers the GPU path,
    and run on the CPU alone (CI) runs each test once, as before. The test's own tensors go where the model is."""
    return request.param


class Elsewhere(torch.Tensor):
    """A CPU tensor that NumPy refuses to read until it is brought to the CPU (`.cpu()`, `.to("cpu")`), as it refuses
    a GPU's: a second device for a machine that has none. What is computed from it is `Elsewhere` too (PyTorch keeps
    the subclass); `float()`, `.tolist()` and formatting read it, as they read a GPU tensor."""

    def numpy(self, *args, **kwargs):
        raise TypeError("can't convert a tensor on another device to numpy: use Tensor.cpu() first")

    __array__ = numpy

    def cpu(self, *args, **kwargs) -> torch.Tensor:
        return super().cpu(*args, **kwargs).as_subclass(torch.Tensor)

    def to(self, *args, **kwargs) -> torch.Tensor:
        moved = super().to(*args, **kwargs)
        to_a_device = "device" in kwargs or any(isinstance(a, str | torch.device) for a in args)
        return moved.as_subclass(torch.Tensor) if to_a_device else moved

    def __format__(self, spec: str) -> str:
        return self.as_subclass(torch.Tensor).__format__(spec)


def moved_elsewhere(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with its weights and buffers made `Elsewhere` in place (tied weights stay one): what it computes is."""
    moved: dict[int, torch.nn.Parameter] = {}
    for module in model.modules():
        for name, p in module._parameters.items():
            if p is not None:
                if id(p) not in moved:
                    moved[id(p)] = torch.nn.Parameter(p.detach().as_subclass(Elsewhere), requires_grad=p.requires_grad)
                module._parameters[name] = moved[id(p)]
        for name, buffer in module._buffers.items():
            if buffer is not None:
                module._buffers[name] = buffer.as_subclass(Elsewhere)
    return model


ENGLISH = [
    "The weather is nice today.",
    "Where is the train station?",
    "I would like a cup of coffee.",
    "She reads a book in the garden.",
    "We are going home now.",
    "Better late than never.",
    "The children play in the park.",
    "How much does the ticket cost?",
]
CHINESE = [  # ENGLISH in Chinese
    "今天天气很好。",
    "火车站在哪儿？",
    "我想要一杯咖啡。",
    "她在花园里看书。",
    "我们现在回家。",
    "晚到总比不到好。",
    "孩子们在公园里玩。",
    "这张票多少钱？",
]
GERMAN = [
    "Das Wetter ist heute schön.",
    "Wo ist der Bahnhof?",
    "Ich hätte gern eine Tasse Kaffee.",
    "Sie liest ein Buch im Garten.",
    "Wir gehen jetzt nach Hause.",
    "Besser spät als nie.",
    "Die Kinder spielen im Park.",
    "Wie viel kostet die Fahrkarte?",
]


def tiny_config(**overrides) -> TransformerConfig:
    """d_model 16, 2 heads, 2+2 layers, vocabulary 30, no dropout: the size every unit test uses. The rest, the
    special ids included (<pad> 0, start 1, </s> 2), is TransformerConfig's default."""
    sizes = dict(src_vocab_size=30, tgt_vocab_size=30, d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=2)
    return TransformerConfig(**(sizes | dict(d_ff=32, dropout=0.0, max_positions=64) | overrides))


def tiny_model(seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(tiny_config(**overrides)).eval()


def train_sentencepiece(sentences: list[str], vocab_size: int, **special) -> bytes:
    """A sentencepiece model trained in memory on `sentences` (a second at most)."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences * 10),
        model_writer=model,
        vocab_size=vocab_size,
        model_type="unigram",
        hard_vocab_limit=False,
        minloglevel=2,
        **special,
    )
    return model.getvalue()


@pytest.fixture(scope="session")
def own_spm(tmp_path_factory) -> Path:
    """A sentencepiece model with our own special ids: <pad>=0, <unk>=1, <s>=2, </s>=3."""
    path = tmp_path_factory.mktemp("spm") / "shared.spm"
    path.write_bytes(train_sentencepiece(ENGLISH + GERMAN, 80, pad_id=0, unk_id=1, bos_id=2, eos_id=3))
    return path


def marian_vocab(model_bytes: bytes) -> dict[str, int]:
    """Marian's layout: </s>=0, <unk>=1, then the pieces, and <pad> as the last id."""
    processor = spm.SentencePieceProcessor(model_proto=model_bytes)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    vocab = {"</s>": 0, "<unk>": 1}
    for piece in pieces:
        if piece not in ("<unk>", "<s>", "</s>", "<pad>"):
            vocab.setdefault(piece, len(vocab))
    vocab["<pad>"] = len(vocab)
    return vocab


def build_marian(
    folder: Path,
    *,
    shared: bool,
    seed: int = 0,
    activation: str = "swish",
    source: list[str] = ENGLISH,
    target: list[str] = GERMAN,
    union: bool = False,
    language_codes: tuple[str, ...] = (),
):
    """A tiny random MarianMTModel saved with `save_pretrained`, with its tokenizer files. Returns the HF model.

    `shared`: one sentencepiece model and vocabulary for both sides. `union`: two sentencepiece models and one
    vocabulary of both sides' pieces, as opus-mt-zh-en and opus-mt-en-zh have; `language_codes` (`>>cmn_Hans<<`)
    open that vocabulary, as in a model that writes several target languages."""
    from transformers import MarianConfig, MarianMTModel

    folder.mkdir(parents=True, exist_ok=True)
    special = dict(unk_id=0, bos_id=-1, eos_id=1, pad_id=-1)
    source_bytes = train_sentencepiece(source, 60, **special)
    target_bytes = source_bytes if shared else train_sentencepiece(target, 50, **special)
    (folder / "source.spm").write_bytes(source_bytes)
    (folder / "target.spm").write_bytes(target_bytes)
    source_vocab = marian_vocab(source_bytes)
    target_vocab = marian_vocab(target_bytes)
    if union:
        pieces = [*language_codes, *source_vocab, *target_vocab]
        source_vocab = {"</s>": 0, "<unk>": 1} | {
            piece: 0 for piece in pieces if piece not in ("</s>", "<unk>", "<pad>")
        }
        source_vocab = {piece: i for i, piece in enumerate([*source_vocab, "<pad>"])}
    if shared or union:  # one vocabulary: all pieces of both sides
        target_vocab = source_vocab
    # Marian keeps <pad> as the last id of the *source* vocabulary and uses it on both sides.
    pad = source_vocab["<pad>"]
    if not (shared or union):
        del target_vocab["<pad>"]
        while len(target_vocab) < pad:
            target_vocab[f"<filler{len(target_vocab)}>"] = len(target_vocab)
        target_vocab["<pad>"] = pad
        for extra in range(5):  # and a different size from the source vocabulary
            target_vocab[f"<extra{extra}>"] = len(target_vocab)
    (folder / "vocab.json").write_text(json.dumps(source_vocab, ensure_ascii=False), encoding="utf-8")
    if not (shared or union):
        (folder / "target_vocab.json").write_text(json.dumps(target_vocab))

    torch.manual_seed(seed)
    config = MarianConfig(
        vocab_size=len(source_vocab),
        decoder_vocab_size=len(target_vocab),
        share_encoder_decoder_embeddings=shared or union,
        d_model=16,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        activation_function=activation,
        max_position_embeddings=64,
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        forced_eos_token_id=0,
        scale_embedding=True,
        init_std=0.5,  # large weights: varied, confident outputs, so greedy and beam search differ
    )
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_()
        model.final_logits_bias[0, 0] += 1.5  # make </s> likely enough that hypotheses end at varied lengths
        model.final_logits_bias[0, pad] = 0.0
    model.save_pretrained(folder)
    model.set_attn_implementation("eager")
    return model


@pytest.fixture(scope="session", params=["shared", "separate"])
def marian(request, tmp_path_factory):
    """(folder, MarianMTModel) for a tiny Marian model with a shared or with separate vocabularies."""
    folder = tmp_path_factory.mktemp(f"marian-{request.param}")
    model = build_marian(folder, shared=request.param == "shared")
    return folder, model


@pytest.fixture(scope="module")
def registry():
    """The shipped models (`checkpoints/`), loaded once for the test module and only read, as the app shares them."""
    from explorer import ModelRegistry

    return ModelRegistry(CHECKPOINTS)


class Chromium:
    """Debian's Chromium for the browser tests. Pages open in one profile on disk (one for each pytest worker) and
    share its caches: the scripts of the page (Gradio's and plotly.js's, 5 MB), compiled once, come from V8's code
    cache for the pages after, which then open in 1.7 s instead of 3 s (a context of its own for each page, as
    Playwright's `new_page` makes, keeps no cache on disk, and so no compiled code). The app's state is not shared:
    Gradio gives each page load a session of its own, and the app sets no cookie. What is shared is the browser's six
    connections to a server: a page holds two open (its heartbeat, its stream of answers), so pages that stay open
    together (a class: a teacher and three students) take contexts of their own (`own_context=True`), as does a page
    for another language of the browser, or an emulated phone; they come from a second Chromium, started when first
    needed. The pages a test leaves open are closed after it (`close_pages`).

    A tab is also kept for the next test (`tab`, `put_back`): its page left for a blank one (the app's session ends as
    if it had been closed), and the next test's page opened in it, the tab brought to the front first. A page opened
    in a new tab cost the machine 4.1 s of CPU, in a tab kept 3.2 s: no new renderer process, no new tab in the
    browser."""

    LOCALE = "en-US"

    def __init__(self, playwright, profile: Path) -> None:
        from benchmarks.real_app import CHROMIUM, CHROMIUM_ARGS

        self.playwright, self.executable, self.args = playwright, CHROMIUM, CHROMIUM_ARGS
        self.shared = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, locale=self.LOCALE
        )
        self._own_contexts = None
        self._scripts: dict = {}  # each kept tab (`tab`): the scripts it runs before the page's own
        self._idle: list = []  # the kept tabs that no test holds

    def tab(self, viewport: dict, scripts: tuple[str, ...] = ()):
        """A tab of the shared profile, `viewport` in size, that runs `scripts` before each page's own: one a test put
        back (`put_back`, `close_pages`) with the same scripts, else a new one. Its page is blank: open one with
        `goto`. Only for a page that the test gives no listeners, routes or dialogs of its own (`new_page` then):
        those would stay with the tab."""
        page = next((page for page in self._idle if self._scripts[page] == scripts), None)
        if page is None:
            page = self.shared.new_page()
            for script in scripts:
                page.add_init_script(script)
            self._scripts[page] = scripts
        else:
            self._idle.remove(page)
            page.bring_to_front()  # a tab behind another draws two frames a second, and every wait on a frame waits
        page.set_viewport_size(viewport)
        return page

    def put_back(self, page) -> None:
        """Done with `page`: a kept tab (`tab`) is left blank for the next test, as a new one is (nothing in its
        session storage, the pointer in its corner); any other page is closed."""
        if page in self._idle or page.is_closed():
            return
        if page not in self._scripts:
            page.close()
            return
        try:
            if page.url.startswith("http"):
                page.evaluate("() => sessionStorage.clear()")
            page.mouse.move(0, 0)
            page.goto("about:blank")
            self._idle.append(page)
        except Exception:  # a page that crashed or hangs: not kept
            del self._scripts[page]
            page.close()

    def new_page(self, viewport: dict | None = None, locale: str | None = None, own_context: bool = False, **options):
        """A new page in the shared profile, `viewport` in size; in a context of its own with `own_context`, for
        another `locale`, or with other options (`Browser.new_page`'s)."""
        if own_context or locale not in (None, self.LOCALE) or options:
            return self.own_contexts.new_page(viewport=viewport, locale=locale or self.LOCALE, **options)
        page = self.shared.new_page()
        if viewport:
            page.set_viewport_size(viewport)
        return page

    def new_context(self, **options):
        """A context of its own (`Browser.new_context`): an emulated device, say."""
        return self.own_contexts.new_context(**options)

    @property
    def own_contexts(self):
        """The second Chromium, for pages with contexts of their own."""
        if self._own_contexts is None:
            self._own_contexts = self.playwright.chromium.launch(executable_path=self.executable, args=self.args)
        return self._own_contexts

    def open_pages(self) -> list:
        """The pages a test has open: the shared profile's (but its first, blank) and those of contexts of their
        own."""
        own = [] if self._own_contexts is None else [p for c in self._own_contexts.contexts for p in c.pages]
        return [page for page in self.shared.pages[1:] if page not in self._idle] + own

    def close_pages(self) -> None:
        """Close every page but the profile's first, and put back the kept tabs (a test that failed may have left its
        pages open, holding connections the next test needs)."""
        for page in self.shared.pages[1:]:
            self.put_back(page)
        if self._own_contexts is not None:
            for context in self._own_contexts.contexts:
                context.close()

    def close(self) -> None:
        self.shared.close()
        if self._own_contexts is not None:
            self._own_contexts.close()


POLL_MS = 16  # how often a test's `wait_for_function` asks the page, as often as a page draws frames


@pytest.fixture(scope="session", autouse=True)
def polled_by_time():
    """Playwright's `Page.wait_for_function` asks the page every `POLL_MS` milliseconds instead of at every animation
    frame (its default, `polling="raf"`), unless a test says otherwise: a condition polled by frames keeps the page
    drawing a frame sixty times a second while the test waits (measured on an idle page: 0.26 s of the machine's CPU
    in 4 s, against 0.10 s polled by time), and the browser tests spend most of their time waiting."""
    try:
        from playwright.sync_api import Page
    except ImportError:  # no browser tests here
        yield
        return
    wait = Page.wait_for_function

    def wait_for_function(self, expression, *, arg=None, timeout=None, polling=POLL_MS):
        return wait(self, expression, arg=arg, timeout=timeout, polling=polling)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Page, "wait_for_function", wait_for_function)
        yield


@pytest.fixture(scope="session")
def chromium_profile(tmp_path_factory) -> Path:
    """The Chromium profile of the session, or of each pytest-xdist worker: its code cache outlives each `browser`."""
    return tmp_path_factory.mktemp("chromium-profile")


@pytest.fixture(scope="module")
def browser(chromium_profile):
    """Debian's Chromium (`Chromium`) for a module of browser tests (which skip themselves without it); every test
    opens its own pages in it. Screenshots and logs go to `test-artifacts/` (`tests.artifacts`). One for a module,
    not for the session: while Playwright runs, its event loop is the thread's, and a later test's `asyncio.run`
    would fail."""
    from playwright import sync_api

    artifacts.ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        chromium = Chromium(p, chromium_profile)
        yield chromium
        chromium.close()


@pytest.fixture(autouse=True)
def threads_left_as_they_were():
    """A test that changes PyTorch's thread count sets it back: the tests after it in the same worker would run on
    more threads than the worker's share of the cores, and spin. Importing `app` sets the server's own count (its
    settings: one thread), for the rest of the process, as the suite's collection does."""
    threads, app_imported = torch.get_num_threads(), "app" in sys.modules
    yield
    if "app" in sys.modules and not app_imported:
        return
    assert torch.get_num_threads() == threads, f"the test left PyTorch on {torch.get_num_threads()} threads"


@pytest.fixture(autouse=True)
def close_pages(request):
    """After each test that used the browser, the pages it left open are closed (`Chromium.close_pages`)."""
    yield
    if "browser" in request.fixturenames:
        request.getfixturevalue("browser").close_pages()


@pytest.fixture(scope="session")
def real_app():
    """`python app.py` in its own process, started as the benchmarks start it (`benchmarks.real_app.App`: a free
    port, no network, its output in a log file rather than a pipe nobody reads). One for the session, or for each
    pytest-xdist worker that runs a test needing it (tests are shared out one by one, `-n auto`): the browser tests,
    the class in a browser, the classroom benchmarks. Tests on it leave it as they found it, or as a restart leaves
    it (the class's test restarts it mid-lesson)."""
    from benchmarks.real_app import App

    app = App()
    try:
        app.start()
    except RuntimeError as error:
        output = app.log_tail()
        app.close()
        raise RuntimeError(f"{error}\n--- the app's output ---\n{output}") from None
    yield app
    app.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test on the session's app reports the end of the app's output with its own; a failed browser test
    leaves a screenshot of each page it had open (`tests.artifacts.failed`), and says where."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    fixtures = getattr(item, "funcargs", {})
    app, browser = fixtures.get("real_app"), fixtures.get("browser")
    if app is not None:
        report.sections.append(("the app's output", app.log_tail()))
    if isinstance(browser, Chromium) and report.when == "call":
        kept = artifacts.failed(browser.open_pages(), item.name)
        report.sections.append(("screenshots", "\n".join(str(path) for path in kept) or "no page left open"))


@pytest.fixture
def app_url(real_app):
    """The session app's address, read for each test: a restart may have moved it to another port."""
    return real_app.url


@functools.cache
def registry_on(device: str):
    """The shipped models on `device`, one registry per device for the whole session (its models are only read)."""
    from explorer import ModelRegistry

    return ModelRegistry(CHECKPOINTS, device=device)


@pytest.fixture
def registry_on_device(registry, device):
    """The shipped models on `device`: the module's `registry` on the CPU, `registry_on(device)` elsewhere."""
    return registry if device == "cpu" else registry_on(device)


def explorer_on(registry, source: str, steps: int = 0, model: str = "numbers-de"):
    """An explorer of `model` on `source`, with `steps` tokens written."""
    from explorer import Explorer, ExplorerState

    explorer = Explorer(registry, ExplorerState(model=model, source=source))
    for _ in range(steps):
        explorer.step()
    return explorer


@pytest.fixture
def explorer(registry):
    """numbers-de on "three hundred and forty-two", two tokens written: mid-sentence, with source pieces and layers
    to choose from. A new one for every test, so that a test may step it without changing what the next one sees."""
    return explorer_on(registry, "three hundred and forty-two", steps=2)


@pytest.fixture
def explorer_on_device(registry_on_device):
    """The `explorer` fixture's explorer with its model on `device`."""
    return explorer_on(registry_on_device, "three hundred and forty-two", steps=2)
