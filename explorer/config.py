"""The server's configuration: every setting its owner may change with an environment variable, with its default and
its check, in one place (`Config`). `app.py` reads the environment once (`Config.from_environ`) and hands what it read
to the page, the models' registry, the training pool and the classes; a module used without `app.py` (the tests, the
benchmarks) has the defaults.

docs/deployment.md lists the variables in a table made by `table()` (a test checks that the two agree).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class ConfigError(ValueError):
    """An environment variable the server cannot take: the message names it and says what it takes."""


@dataclass(frozen=True)
class Setting:
    """What a field of `Config` is read from: its variable, what it sets, the kind of value and the least one."""

    variable: str
    about: str
    kind: type  # int, float or str
    least: float | None = None  # the smallest value taken (None: any)
    default_said: str = ""  # the default as the docs say it, where it is not the field's default as it is


def setting(variable: str, default: Any, about: str, *, kind: type | None = None, least: float | None = None,
            default_said: str = "") -> Any:  # fmt: skip
    """A field of `Config`, read from `variable`."""
    meta = Setting(variable, about, kind or type(default), least, default_said)
    return field(default=default, metadata={"setting": meta})


@dataclass(frozen=True)
class Config:
    """Every setting of the server; `Config()` is the defaults."""

    # The page's queues (`ui.runtime`, `ui.admission`) and its sessions (`ui.gradio_patch`).
    quick_concurrency: int = setting(
        "EXPLORER_QUICK_CONCURRENCY", 2, "quick events (a Step, a view) a process runs at once", least=1
    )
    long_concurrency: int = setting(
        "EXPLORER_LONG_CONCURRENCY",
        1,
        "long events (a Run, a whole-sentence comparison) a process runs at once",
        least=1,
    )
    run_budget_s: float = setting("EXPLORER_RUN_BUDGET_S", 30.0, "seconds a Run may take; then it stops", least=0)
    run_chunk_s: float | None = setting(
        "EXPLORER_RUN_CHUNK_S",
        None,
        "seconds of a Run's steps taken in one call (on ZeroGPU, one call on the GPU)",
        kind=float,
        least=0,
        default_said="0.5 on ZeroGPU, else 0 (one token)",
    )
    session_pending: int = setting("EXPLORER_SESSION_PENDING", 8, "events of one page waiting or running", least=1)
    address_pending: int = setting(
        "EXPLORER_ADDRESS_PENDING", 96, "events of one address waiting or running (a class shares one)", least=1
    )
    api_pending: int = setting("EXPLORER_API_PENDING", 8, "public API calls waiting or running, in all", least=1)
    api_per_address: int = setting(
        "EXPLORER_API_PER_ADDRESS", 4, "public API calls waiting or running, per address", least=1
    )
    api_seconds_per_minute: float = setting(
        "EXPLORER_API_SECONDS_PER_MINUTE",
        15.0,
        "seconds of server time on the public API per address and minute",
        least=0,
    )
    queue_size: int = setting("EXPLORER_QUEUE_SIZE", 256, "every event together (gradio's `max_size`)", least=1)
    proxy_hops: int = setting(
        "EXPLORER_PROXY_HOPS",
        0,
        "proxies in front of the app that uvicorn does not know (the client's address is the one the last saw)",
        least=0,
        default_said="0; 1 on a Hugging Face Space (`SPACE_ID` set)",
    )
    session_idle_s: float = setting(
        "EXPLORER_SESSION_IDLE_S",
        3600.0,
        "seconds a page may go without an event before its session is forgotten",
        least=0,
    )
    # The models (`app.py`, `explorer.registry`, `explorer.cache`).
    device: str = setting(
        "EXPLORER_DEVICE", "", "the device the models run on: cpu, cuda, cuda:1", default_said="a GPU if any, else cpu"
    )
    precision: str = setting(
        "EXPLORER_PRECISION", "float32", "what the page decodes in: float32, bfloat16 (bf16), float16 (fp16, a GPU's)"
    )
    torch_threads: int = setting("TORCH_NUM_THREADS", 1, "torch threads per request", least=1)
    malloc_arena_max: int | None = setting(
        "MALLOC_ARENA_MAX",
        None,
        "glibc's memory arenas (glibc reads it; unset, `app.py` limits them to 2)",
        kind=int,
        least=1,
        default_said="2",
    )
    failed_load_s: float = setting(
        "EXPLORER_FAILED_LOAD_S", 300.0, "seconds a model that failed to load is not tried again", least=0
    )
    cache_mb: float = setting("EXPLORER_CACHE_MB", 128.0, "megabytes of the cache every user shares", least=0)
    # The Train tab (`explorer.training`).
    train_slots: int = setting("EXPLORER_TRAIN_SLOTS", 1, "Train runs training at once (worker processes)", least=1)
    train_budget_s: float = setting(
        "EXPLORER_TRAIN_BUDGET_S", 180.0, "seconds of training a Train run may have", least=0
    )
    train_queue: int = setting("EXPLORER_TRAIN_QUEUE", 8, "Train runs that may wait for a worker", least=0)
    # Classes (`explorer.classroom`).
    class_db: str = setting(
        "EXPLORER_CLASS_DB", "", "the SQLite file that holds the classes", default_said="`var/classes.db`"
    )
    classes: int = setting("EXPLORER_CLASSES", 20, "classes at once on one server", least=0)
    class_students: int = setting("EXPLORER_CLASS_STUDENTS", 120, "pages in one class", least=1)
    class_idle_s: float = setting(
        "EXPLORER_CLASS_IDLE_S", 4 * 3600.0, "seconds after which a class whose teacher does nothing ends", least=0
    )

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Config:
        """The configuration `environ` sets (a variable unset or empty keeps its default). A value that cannot be
        taken raises `ConfigError`, naming its variable."""
        values = {}
        for name, meta in settings().items():
            text = environ.get(meta.variable, "").strip()
            if text:
                values[name] = _read(meta, text)
        if "proxy_hops" not in values and environ.get("SPACE_ID"):
            values["proxy_hops"] = 1  # a Space's own proxy is in front of the app
        return cls(**values)


DEFAULTS = Config()


def settings() -> dict[str, Setting]:
    """The fields of `Config` and what each is read from, in their order."""
    return {f.name: f.metadata["setting"] for f in dataclasses.fields(Config)}


def _read(meta: Setting, text: str) -> Any:
    if meta.kind is str:
        return text
    whole = meta.kind is int
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        value = None
    if value is None or value != value or (meta.least is not None and value < meta.least):  # value != value: NaN
        least = "" if meta.least is None else f", at least {meta.least:g}"
        raise ConfigError(f"{meta.variable}={text!r}: it takes {'a whole number' if whole else 'a number'}{least}")
    return value


def table() -> str:
    """The variables as a Markdown table (docs/deployment.md holds it)."""
    rows = ["| Variable | Default | What it sets |", "|---|---|---|"]
    for name, meta in settings().items():
        value = getattr(DEFAULTS, name)
        default = meta.default_said or (value if isinstance(value, str) else f"{value:g}")
        rows.append(f"| `{meta.variable}` | {default} | {meta.about} |")
    return "\n".join(rows)
