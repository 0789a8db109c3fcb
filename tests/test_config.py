"""The server's configuration (`explorer.config`): every variable read once, checked, documented in one table, and
handed by `app.py` to what uses it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.config import DEFAULTS, Config, ConfigError, settings, table

ROOT = Path(__file__).resolve().parent.parent


def test_an_empty_environment_is_the_defaults_and_every_variable_sets_its_field():
    assert Config.from_environ({}) == DEFAULTS
    for name, meta in settings().items():
        text = {str: " chosen ", int: "7", float: "2.5"}[meta.kind]
        read = Config.from_environ({meta.variable: text})
        assert getattr(read, name) == meta.kind(text.strip()), meta.variable
        assert read == Config(**{name: meta.kind(text.strip())})  # that field and no other
    assert Config.from_environ({"EXPLORER_QUEUE_SIZE": ""}).queue_size == DEFAULTS.queue_size  # empty: the default


@pytest.mark.parametrize(
    ("variable", "text", "said"),
    [
        ("EXPLORER_QUEUE_SIZE", "lots", "a whole number, at least 1"),
        ("EXPLORER_TRAIN_SLOTS", "1.5", "a whole number, at least 1"),
        ("EXPLORER_RUN_BUDGET_S", "-1", "a number, at least 0"),
        ("EXPLORER_CACHE_MB", "nan", "a number, at least 0"),
        ("TORCH_NUM_THREADS", "0", "a whole number, at least 1"),
    ],
)
def test_a_value_the_server_cannot_take_is_refused_naming_its_variable(variable, text, said):
    with pytest.raises(ConfigError, match=f"^{variable}='{re.escape(text)}': it takes {said}$"):
        Config.from_environ({variable: text})


def test_on_a_space_the_address_is_the_one_its_proxy_saw_unless_told_otherwise():
    assert Config.from_environ({"SPACE_ID": "someone/explorer"}).proxy_hops == 1
    assert Config.from_environ({"SPACE_ID": "someone/explorer", "EXPLORER_PROXY_HOPS": "2"}).proxy_hops == 2
    assert Config.from_environ({}).proxy_hops == 0


def test_the_deployment_guide_lists_every_variable_as_the_configuration_does():
    guide = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    listed = re.search(r"<!-- the table of explorer\.config\.table\(\) -->\n(.*?)(?:\n\n|\Z)", guide, re.S)
    assert listed, "docs/deployment.md has no table of the variables"
    assert listed[1].strip() == table(), "run: python -c 'from explorer.config import table; print(table())'"


def test_no_module_but_the_configuration_reads_the_servers_variables():
    """Each variable is read once, by `Config.from_environ` (`app.py` calls it); the modules take what it read."""
    variables = {meta.variable for meta in settings().values()} | {"SPACE_ID"}
    reads = re.compile(r"(?:environ|getenv)\b[^\n]*[\"'](" + "|".join(variables) + r")[\"']")
    code = [*(ROOT / "explorer").rglob("*.py"), *(ROOT / "ui").rglob("*.py"), ROOT / "app.py"]
    readers = [path.relative_to(ROOT).as_posix() for path in code if reads.search(path.read_text(encoding="utf-8"))]
    assert readers == ["explorer/config.py"]


def test_the_page_takes_the_configuration_it_is_handed(monkeypatch):
    from ui import admission, gradio_patch, runtime

    for module, names in {
        runtime: ["QUICK_CONCURRENCY", "LONG_CONCURRENCY", "RUN_BUDGET_S", "RUN_CHUNK_S"],
        admission: ["SESSION_PENDING", "ADDRESS_PENDING", "API_PENDING", "API_PER_ADDRESS", "API_SECONDS_PER_MINUTE",
                    "QUEUE_SIZE", "PROXY_HOPS"],
        gradio_patch: ["SESSION_IDLE_S"],
    }.items():  # fmt: skip
        for name in names:
            monkeypatch.setattr(module, name, getattr(module, name))  # put back after the test
    monkeypatch.setitem(runtime.QUICK, "concurrency_limit", runtime.QUICK["concurrency_limit"])
    monkeypatch.setitem(runtime.LONG, "concurrency_limit", runtime.LONG["concurrency_limit"])
    environ = {
        "EXPLORER_QUICK_CONCURRENCY": "3",
        "EXPLORER_LONG_CONCURRENCY": "2",
        "EXPLORER_RUN_BUDGET_S": "12",
        "EXPLORER_RUN_CHUNK_S": "0.25",
        "EXPLORER_SESSION_PENDING": "5",
        "EXPLORER_API_SECONDS_PER_MINUTE": "9",
        "EXPLORER_QUEUE_SIZE": "64",
        "EXPLORER_PROXY_HOPS": "1",
        "EXPLORER_SESSION_IDLE_S": "60",
    }
    config = Config.from_environ(environ)
    for module in (runtime, admission, gradio_patch):
        module.configure(config)
    assert runtime.QUICK["concurrency_limit"] == runtime.QUICK_CONCURRENCY == 3
    assert runtime.LONG["concurrency_limit"] == runtime.LONG_CONCURRENCY == 2
    assert (runtime.RUN_BUDGET_S, runtime.RUN_CHUNK_S) == (12.0, 0.25)
    assert (admission.SESSION_PENDING, admission.API_SECONDS_PER_MINUTE) == (5, 9.0)
    assert (admission.QUEUE_SIZE, admission.PROXY_HOPS) == (64, 1)
    assert gradio_patch.SESSION_IDLE_S == 60.0
    runtime.configure(DEFAULTS)
    chunk_s = runtime.RUN_CHUNK_S
    assert chunk_s == (runtime.ZEROGPU_RUN_CHUNK_S if runtime.APART else 0.0)  # unset: by the place


def test_the_app_stops_at_the_start_on_a_value_it_cannot_take():
    environment = {"EXPLORER_QUEUE_SIZE": "lots", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    ran = subprocess.run(
        [sys.executable, "-c", "import app"], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines()[-1] == "EXPLORER_QUEUE_SIZE='lots': it takes a whole number, at least 1"


def test_the_classes_guide_names_its_variables_with_the_configurations_defaults():
    """docs/classes.md lists the four variables of a class beside what they do: each is a setting of `Config`, with
    its default as the configuration has it."""
    guide = (ROOT / "docs" / "classes.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(EXPLORER_\w+)` \| ([^|]+?) \|", guide, re.M)
    by_variable = {meta.variable: (name, meta) for name, meta in settings().items()}
    assert len(rows) == 4
    for variable, default in rows:
        name, meta = by_variable[variable]
        value = getattr(Config(), name)
        expected = meta.default_said or (value if isinstance(value, str) else f"{value:g}")
        assert default.split(" (")[0] == expected, variable
