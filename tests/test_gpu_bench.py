"""The GPU proof's command (`benchmarks.gpu`) run on the CPU with the quick plan: every section measures, the report
says what it measured, and a section that cannot run says why while the others still run."""

from __future__ import annotations

import json

import pytest

from benchmarks import gpu


@pytest.mark.slow
def test_the_gpu_proof_runs_every_section_and_writes_its_report(tmp_path):
    assert gpu.main(["--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "gpu.json").read_text(encoding="utf-8"))
    for section in ("machine", "tests", "library", "page", "precision", "training"):
        assert "error" not in results[section] and "unavailable" not in results[section], results[section]
    assert results["tests"]["failed"] == results["tests"]["errors"] == 0
    assert results["tests"]["passed"] + results["tests"]["skipped"] >= 3  # tests/test_cuda.py: skipped on a CPU
    assert results["page"]["same_outputs_as_cpu"]
    assert {row["model"] for row in results["page"]["rows"]} == {"en-de", "zh-en"}
    for row in results["page"]["rows"]:
        assert row["step_ms"] > 0 and row["inside_ms"] > 0 and row["walkthrough_ms"] > 0
    assert all(row["same"] == row["sentences"] for row in results["precision"]["rows"])
    assert max(row["max_logit_difference"] for row in results["library"]["cache"]) < 1e-3  # the cache changes nothing
    report = (tmp_path / "gpu.md").read_text(encoding="utf-8")
    assert "## 2. The library on the GPU" in report and "| en-de | cpu |" in report
    assert "Not measured" not in report and "target tokens a second" in report


@pytest.mark.slow
def test_a_section_that_cannot_run_says_why_and_the_rest_still_run():
    def missing():
        import a_package_nobody_has  # noqa: F401

    def broken():
        raise RuntimeError("out of memory")

    assert "needs `a_package_nobody_has`" in gpu.attempt("missing", missing)["unavailable"]
    failed = gpu.attempt("broken", broken)
    assert failed["error"] == "RuntimeError: out of memory" and "Traceback" in failed["traceback"]
    report = gpu.report({"plan": "quick", "date": "today", "machine": {"device": "cpu"}, "tests": failed})
    assert "Not measured: the section failed with `RuntimeError: out of memory`" in report


def test_without_a_gpu_the_command_says_so(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert gpu.main(["--out", "/nonexistent"]) == 2
    assert "no CUDA GPU here" in capsys.readouterr().err


def test_plotlys_wheel_travels_without_what_only_a_browser_reads(tmp_path):
    import zipfile

    wheel = tmp_path / "plotly-7.1.0-py3-none-any.whl"
    names = [
        "plotly/__init__.py",
        "plotly/graph_objs/_figure.py",
        "plotly/package_data/templates/plotly.json",
        "plotly/package_data/plotly.min.js",
        "plotly/package_data/datasets/iris.csv.gz",
        "plotly/labextension/package.json",
        "plotly-7.1.0.data/data/share/jupyter/labextensions/jupyterlab-plotly/package.json",
    ]
    with zipfile.ZipFile(wheel, "w") as out:
        for name in names:
            out.writestr(name, "x")
        out.writestr("plotly-7.1.0.dist-info/RECORD", "".join(f"{name},sha256=x,1\n" for name in names))
    gpu.slimmed(wheel)
    with zipfile.ZipFile(wheel) as kept:
        left = set(kept.namelist())
        record = kept.read("plotly-7.1.0.dist-info/RECORD").decode().splitlines()
    assert left == {*names[:3], "plotly-7.1.0.dist-info/RECORD"}
    assert [line.split(",")[0] for line in record] == names[:3]
