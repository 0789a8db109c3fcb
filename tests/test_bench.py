"""The benchmark in its quick mode (tiny sizes, few repeats), so that it never rots. No timing assertions: only that
every section runs, that both sides of each comparison compute the same thing, and that BENCHMARKS.md is what its
template makes of the committed numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from benchmarks import bench, report
from benchmarks.cache import decode_cached, decode_recomputed
from benchmarks.model_pair import model_pair, random_sources
from benchmarks.plan import QUICK
from benchmarks.real_app import CHROMIUM

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def results():
    """On the threads the suite gives a worker (`conftest.py`): two threads beside another worker's on two cores spun
    waiting for each other (this took 20 s in the suite instead of 2)."""
    return bench.run(QUICK, threads=torch.get_num_threads(), app=False, log=lambda *_: None)


@pytest.mark.slow
def test_every_section_runs_and_both_implementations_agree(results):
    assert [r["length"] for r in results["decode_step"]] == list(QUICK.lengths)
    for row in results["decode_step"]:
        assert row["ours_attention_ms"] > 0 and row["hf_attention_ms"] > 0
    assert results["greedy"]["same_outputs"] == results["greedy"]["sentences"]
    assert results["greedy"]["output_tokens"] == results["greedy"]["sentences"] * QUICK.batch_new_tokens
    shipped = results["greedy_shipped"]
    assert shipped["sentences"] == QUICK.shipped_sentences
    assert shipped["same_outputs"] >= shipped["sentences"] - 1  # float noise may flip a near-tie, rarely
    assert results["beam"]["same_outputs"] == results["beam"]["sentences"]
    assert results["training"]["ours_tokens_per_s"] > 0 and results["training"]["torch_tokens_per_s"] > 0


@pytest.mark.slow
def test_section_3_times_two_ways_to_the_same_logits(results):
    """The cache's speed-up compares the same computation done two ways: the benchmark says how far apart their
    logits are, at every output length it timed."""
    assert [r["length"] for r in results["cache"]] == list(QUICK.lengths)
    for row in results["cache"]:
        assert row["cached_ms"] > 0 and row["recomputed_ms"] > 0
        assert row["max_logit_difference"] < 1e-4


def test_the_cached_and_recomputed_decoders_return_the_same_logits_at_every_step():
    _, model = model_pair(QUICK)
    src = torch.tensor(random_sources(model.config, 1, seed=0))
    forced = random_sources(model.config, 1, seed=1, lengths=(6, 6))[0][:6]
    cached, recomputed = decode_cached(model, src, forced), decode_recomputed(model, src, forced)
    assert len(cached) == len(recomputed) == len(forced)
    for a, b in zip(cached, recomputed, strict=True):
        assert a.shape == (model.config.tgt_vocab_size,)
        assert (a - b).abs().max() < 1e-4


@pytest.mark.slow
def test_a_quick_report(results, tmp_path):
    report.write(results, tmp_path / "BENCHMARKS.md")
    text = (tmp_path / "BENCHMARKS.md").read_text(encoding="utf-8")  # the file written, checked below
    for heading in ("## 1.", "## 2.", "## 3.", "## 4.", "## 5."):
        assert heading in text
    assert "transformers 5." in text and "torch 2.13.0" in text
    assert "(quick run)" in text and "## 6, 7. The app" not in text  # a run without the app has no such section


def test_benchmarks_md_is_its_template_filled_from_the_committed_numbers():
    """What `python -m benchmarks.bench --from-json docs/benchmarks.json` writes: the committed BENCHMARKS.md, to
    the byte. Where this fails, BENCHMARKS.md was edited by hand, or the template (or docs/classroom.md, or
    docs/benchmark-notes.md) changed without writing it again with that command."""
    results = json.loads((ROOT / "docs" / "benchmarks.json").read_text(encoding="utf-8"))
    results.update(bench.documents(None, quick=False))
    expected = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    rendered = report.render(results)
    assert sections(rendered) == sections(expected)  # a section at a time first, for a readable difference
    assert rendered == expected


def sections(markdown: str) -> dict[str, str]:
    """The text under each `## ` heading, by heading."""
    parts = markdown.split("\n## ")
    return {part.split("\n", 1)[0]: part for part in parts}


@pytest.mark.long
@pytest.mark.slow
@pytest.mark.browser
def test_the_app_benchmark_in_quick_mode(real_app):
    """Sections 6 and 7 against the real app in Chromium (skipped where Chromium is missing, as the browser tests):
    on the session's app, as the quick mode may take one (the app's start is the browser tests' own)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed")
    from benchmarks.app_bench import measure_app

    app = measure_app(quick=True, app=real_app)
    assert app["ready_s"] > 0 and app["step_ms_median"] > 0 and app["run_ms_median"] > 0
    assert app["translation"] and app["n_steps"] >= 2
    assert app["rss_ready_mb"] > 0 and app["peak_mb"] >= app["rss_ready_mb"]
    assert 0 < app["step_heatmap_ms_median"] <= app["step_ms_median"]  # the heatmap is one of the figures
    assert app["inside_step_ms_median"] > 0 and app["walkthrough_step_ms_median"] > 0
    # every timed Step's answer read, whichever stream it came on (the page's keeper may hold one open): its handler's
    # time, its size and when the page read it
    assert app["step_answers_read"] == len(app["step_ms_each"]) > 0
    assert app["step_server_fn_ms_median"] > 0 and app["step_message_bytes_median"] > 1000
    assert 0 < app["step_message_ms_median"] <= app["step_ms_median"]
    text = report.render_app(app)
    assert f"| Step → every visible figure drawn (ms) | {app['step_ms_median']} |" in text
    assert "| Step → the whole walkthrough drawn (ms) |" in text


@pytest.mark.slow
@pytest.mark.browser
def test_the_idle_page_measure_reads_the_cpu_of_its_own_chromium(real_app):
    """`python -m benchmarks.app_bench --idle` (the README's figure), over a second of the session's app: Chromium's
    processes of this test found and read (a page's opening costs seconds of CPU; idle, far less than a core)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed")
    from benchmarks.app_bench import measure_idle_page

    idle = measure_idle_page(real_app.url, seconds=1, settle_s=0)
    assert idle["opening_cpu_s"] > 0.2  # its Chromium found: a page's opening costs it seconds of CPU
    assert idle["idle_s"] == 1 and 0 <= idle["idle_page_cpu_s_per_s"] < 1


def test_listens_on_names_the_process_that_listens_on_a_port():
    """`App.start` takes a 200 only from its own app: under pytest-xdist another worker's app may have taken the
    port it chose, and answer in its place."""
    import os
    import socket

    from benchmarks.real_app import free_port, listens_on

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert listens_on(os.getpid(), port)
        assert not listens_on(os.getpid(), free_port())
        assert not listens_on(os.getppid(), port)  # the port is this process's, not its parent's
