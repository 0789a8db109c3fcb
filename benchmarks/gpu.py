"""The GPU proof in one command: `python -m benchmarks.gpu` on a machine with a CUDA GPU.

It writes `gpu.json` (every number) and `gpu.md` (the report) to `--out` (default `docs/gpu/`), in six sections,
each run on its own: a section that fails, or needs a package the machine lacks, says so in the report, and the
others still run.

1. **The machine**: the GPU, CUDA, PyTorch, Python.
2. **The CUDA tests**: every test that runs on the GPU (`tests/test_cuda.py` and each test's `[cuda]` case),
   through pytest in a subprocess; the report counts them and names any failure.
3. **The library on the GPU**: one decoding step, ours against transformers' `MarianMTModel`, with every attention
   map and without (`benchmarks.decode_step`); the key/value cache against recomputing the prefix
   (`benchmarks.cache`); on the random opus-mt-sized model.
4. **The page's computations on the GPU, against the CPU**: a Step of en-de and zh-en (`Explorer.step`), Inside a
   step (the step worked through, `transformer.worked.work_through`), the walkthrough (`explorer.walkthrough`,
   which needs Plotly) and the Why? tab's contributions (`transformer.explain`, which needs Captum).
5. **bfloat16 against float32** (`benchmarks.precision`): the same translations, and how far the numbers move.
6. **Training throughput** (`benchmarks.training`): ours against `torch.nn.Transformer`, target tokens a second.

A GPU machine here has Python 3.12 and PyTorch, pytest, transformers, sentencepiece and safetensors, but not the
page's own packages. Sections 2 and 4 import the explorer, which needs `num2words`; the walkthrough needs `plotly`,
the Why? tab `captum`. Carry them as wheels (the tree leaves room for them, `tests/test_layout.py`):

    python -m benchmarks.gpu --wheels .whl        # here: downloads the wheels into .whl/ (ignored by git)
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && \\
        PYTHONPATH=/tmp/site python3 -m benchmarks.gpu                            # there

`--device cpu --quick` runs the same on the CPU in a minute (how `tests/test_gpu_bench.py` checks the command).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from benchmarks.plan import FULL, QUICK, Plan
from benchmarks.timing import synchronize

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINTS = ROOT / "checkpoints"
# The packages a GPU machine lacks, and what needs them: carried as wheels with `--wheels`.
CARRIED = {"num2words": "the explorer", "plotly": "the walkthrough", "captum": "the Why? tab"}
PINNED = ROOT / "requirements-base.txt"
SENTENCES = {
    "en-de": "My sister is going to the pharmacy after school.",
    "zh-en": "我想要一杯咖啡。",
}


# --------------------------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------------------------


def machine(device: str) -> dict[str, Any]:
    """Section 1: what the numbers were measured on."""
    found = {
        "device": device,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        **{name: importlib.util.find_spec(name) is not None for name in CARRIED},
    }
    if device.startswith("cuda"):
        properties = torch.cuda.get_device_properties(device)
        found |= {
            "gpu": properties.name,
            "gpu_memory_gib": round(properties.total_memory / 2**30, 1),
            "cuda": torch.version.cuda,
            "bf16_supported": torch.cuda.is_bf16_supported(),
        }
    return found


def cuda_tests(out: Path, quick: bool) -> dict[str, Any]:
    """Section 2: pytest over every test that runs on the GPU, in a subprocess; the counts from its JUnit report."""
    report = out / "cuda-tests.xml"
    selection = ["-k", "cuda"] if not quick else ["-k", "cuda and not slow", "tests/test_cuda.py"]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    command += [f"--junitxml={report}", *selection]
    started = time.perf_counter()
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures = []
    if report.exists():
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
            counts[{"failure": "failed", "error": "errors"}.get(outcome, outcome)] += 1
            if outcome in ("failure", "error"):
                failures.append(f"{case.get('classname')}::{case.get('name')}")
        report.unlink()
    collection = [line.removeprefix("ERROR ") for line in run.stdout.splitlines() if line.startswith("ERROR ")]
    return {
        **counts,
        "failures": failures,
        "not_collected": collection,
        "exit_code": run.returncode,
        "seconds": round(seconds, 1),
        "tail": run.stdout[-3000:] if run.returncode not in (0, 5) else "",
    }


def library(plan: Plan, device: str) -> dict[str, Any]:
    """Section 3: a decoding step against transformers, and the cache against recomputing, on `device`."""
    from benchmarks.cache import bench_cache
    from benchmarks.decode_step import bench_decode_step
    from benchmarks.model_pair import model_pair

    hf, ours = model_pair(plan)
    hf, ours = hf.to(device), ours.to(device)
    return {"decode_step": bench_decode_step(plan, hf, ours), "cache": bench_cache(plan, ours)}


def timed(run: Callable[[], object], repeats: int) -> float:
    """The median milliseconds of `run` after one warm-up, each timing ended when the GPU's work is done."""
    run()
    times = []
    for _ in range(repeats):
        synchronize()
        started = time.perf_counter()
        run()
        synchronize()
        times.append(time.perf_counter() - started)
    return round(1000 * statistics.median(times), 2)


def page(device: str, repeats: int) -> dict[str, Any]:
    """Section 4: what the page computes for a Step, Inside a step, the walkthrough and the Why? tab, on `device`
    and on the CPU, for each trained built-in model."""
    from explorer import Explorer, ExplorerState, ModelRegistry
    from transformer.worked import work_through

    registries = {place: ModelRegistry(CHECKPOINTS, device=place) for place in dict.fromkeys((device, "cpu"))}
    rows = []
    for model, sentence in SENTENCES.items():
        for place, registry in registries.items():

            def explorer(steps: int = 3, registry=registry, model=model, sentence=sentence) -> Explorer:
                made = Explorer(registry, ExplorerState(model=model, source=sentence))
                for _ in range(steps):
                    made.step()
                return made

            ready = explorer()
            checkpoint, source = ready.checkpoint, ready.source_ids()
            target = [checkpoint.model.config.decoder_start_id, *ready.decoding.output_ids]
            row = {"model": model, "device": place, "output": ready.decoding.output_ids}
            row["step_ms"] = timed(lambda ready=ready: (ready.back(), ready.step()), repeats)
            worked = functools.partial(work_through, checkpoint.model, source, target)
            row["inside_ms"] = timed(worked, repeats)
            row |= optional_timings(ready, checkpoint, source, target, repeats)
            rows.append(row)
    outputs = {(row["model"], row["device"]): row["output"] for row in rows}
    same = all(outputs[(model, device)] == outputs[(model, "cpu")] for model in SENTENCES)
    return {"rows": rows, "same_outputs_as_cpu": same}


def optional_timings(explorer, checkpoint, source: list[int], target: list[int], repeats: int) -> dict[str, Any]:
    """The walkthrough (with Plotly) and the Why? tab's contributions (with Captum), where they can be imported."""
    found: dict[str, Any] = {}
    if importlib.util.find_spec("plotly") is not None:
        from explorer import walkthrough

        found["walkthrough_ms"] = timed(lambda: walkthrough.written_tour(explorer), repeats)
    if importlib.util.find_spec("captum") is not None:
        from transformer.explain import contributions

        token = explorer.decoding.output_ids[-1]
        found["why_contributions_ms"] = timed(
            lambda: contributions(checkpoint.model, source, target[:-1], token), max(1, repeats // 3)
        )
    return found


def precision(device: str, quick: bool) -> dict[str, Any]:
    """Section 5: bfloat16 under autocast against float32, on the trained built-in models (`quick`: three example
    sentences of each, two timed translations)."""
    from benchmarks.precision import compared, seconds_per_translation
    from explorer import ModelRegistry

    registry = ModelRegistry(CHECKPOINTS, device=device)
    device_type = torch.device(device).type
    rows = []
    for name in SENTENCES:
        same, n, probability, attention = compared(registry, name, device_type, torch.bfloat16, 3 if quick else None)
        rows.append({"model": name, "same": same, "sentences": n, "probability": probability, "attention": attention})
    speed = {
        label: round(1000 * seconds_per_translation(registry, device_type, dtype, 2 if quick else 10), 1)
        for label, dtype in (("float32_ms", None), ("bfloat16_ms", torch.bfloat16))
    }
    return {"rows": rows, "en_de_translation": speed}


def training(plan: Plan, device: str) -> dict[str, Any]:
    """Section 6: training throughput, ours against torch.nn.Transformer, on `device`."""
    from benchmarks.training import bench_training, training_config

    return bench_training(plan, training_config(plan, CHECKPOINTS / "en-de"), device)


# --------------------------------------------------------------------------------------------------------------------
# The run and its report
# --------------------------------------------------------------------------------------------------------------------


def attempt(name: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`run()`'s numbers and seconds, or why there are none: a missing package, or the error and its traceback."""
    started = time.perf_counter()
    print(f"{name} …", flush=True)
    try:
        result = run()
    except ModuleNotFoundError as error:
        result = {"unavailable": f"needs `{error.name}`, not installed here (see `python -m benchmarks.gpu --help`)"}
    except Exception as error:  # a section that breaks is reported, and the next one runs
        result = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()[-4000:]}
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(f"{name}: {result['seconds']} s", flush=True)
    return result


def run(device: str, quick: bool, out: Path) -> dict[str, Any]:
    plan = QUICK if quick else FULL
    repeats = 3 if quick else 20
    results: dict[str, Any] = {"plan": plan.name, "date": time.strftime("%Y-%m-%d")}
    results["machine"] = attempt("the machine", lambda: machine(device))
    results["tests"] = attempt("the CUDA tests", lambda: cuda_tests(out, quick))
    results["library"] = attempt("the library", lambda: library(plan, device))
    results["page"] = attempt("the page's computations", lambda: page(device, repeats))
    results["precision"] = attempt("bfloat16 against float32", lambda: precision(device, quick))
    results["training"] = attempt("training throughput", lambda: training(plan, device))
    return results


def report(results: dict[str, Any]) -> str:
    """gpu.md: each section's numbers as tables, or why it has none."""
    import jinja2

    template = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent), trim_blocks=True, lstrip_blocks=True, autoescape=False
    ).get_template("gpu.md.j2")
    return template.render(r=results)


def download_wheels(folder: Path) -> None:
    """The wheels of `CARRIED`, at the versions this project pins, for the GPU machine's Python (they are pure);
    Plotly's without what only a browser reads (`slimmed`)."""
    pins = {}
    for line in PINNED.read_text(encoding="utf-8").splitlines():
        name, _, version = line.split("#")[0].strip().partition("==")
        if name in CARRIED:
            pins[name] = version
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(folder)]
    subprocess.run([*command, *(f"{name}=={version}" for name, version in pins.items())], check=True)
    for wheel in folder.glob("plotly-*.whl"):
        slimmed(wheel)


def browser_only(name: str) -> bool:
    """A file of Plotly's wheel that only a browser reads: plotly.js, its Jupyter extension, the sample datasets (the
    figures' templates stay: a figure is built with them)."""
    if name.startswith("plotly/package_data/"):
        return not name.startswith("plotly/package_data/templates/")
    return name.startswith("plotly/labextension/") or (".data/" in name and name.split("/")[0].endswith(".data"))


def slimmed(wheel: Path) -> None:
    """Rewrite Plotly's wheel without its `browser_only` files (9.7 MB to 3.7): the figures are built on the GPU
    machine, never drawn there."""
    import zipfile

    kept = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(kept, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for entry in source.infolist():
            if browser_only(entry.filename):
                continue
            data = source.read(entry.filename)
            if entry.filename.endswith(".dist-info/RECORD"):  # the list of files, without those left out
                lines = data.decode().splitlines()
                data = "".join(f"{line}\n" for line in lines if not browser_only(line.split(",")[0])).encode()
            out.writestr(entry, data)
    kept.replace(wheel)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="where to run (default cuda; cpu to try the command)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "gpu", help="folder for gpu.json and gpu.md")
    parser.add_argument("--wheels", type=Path, help="only download the wheels a GPU machine lacks into this folder")
    args = parser.parse_args(argv)
    if args.wheels:
        download_wheels(args.wheels)
        return 0
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA GPU here: run this on a GPU machine, or with --device cpu to try it", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    results = run(args.device, args.quick, args.out)
    (args.out / "gpu.json").write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    (args.out / "gpu.md").write_text(report(results), encoding="utf-8")
    print(f"wrote {args.out / 'gpu.json'} and {args.out / 'gpu.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
