"""The benchmark in its quick mode (tiny sizes, few repeats), so that it never rots. No timing assertions: only that
every section runs, that both implementations produce the same tokens, and that BENCHMARKS.md can be written."""

from __future__ import annotations

import pytest

from benchmarks import bench


@pytest.fixture(scope="module")
def results():
    return bench.run(bench.QUICK, threads=2, app=False, log=lambda *_: None)


def test_every_section_runs_and_both_implementations_agree(results):
    assert [r["length"] for r in results["decode_step"]] == list(bench.QUICK.lengths)
    for row in results["decode_step"]:
        assert row["ours_attention_ms"] > 0 and row["hf_attention_ms"] > 0
    assert results["greedy"]["same_outputs"] == results["greedy"]["sentences"]
    assert results["greedy"]["output_tokens"] == results["greedy"]["sentences"] * bench.QUICK.batch_new_tokens
    shipped = results["greedy_shipped"]
    assert shipped["sentences"] == bench.QUICK.shipped_sentences
    assert shipped["same_outputs"] >= shipped["sentences"] - 1  # float noise may flip a near-tie, rarely
    assert results["beam"]["same_outputs"] == results["beam"]["sentences"]
    assert [r["length"] for r in results["cache"]] == list(bench.QUICK.lengths)
    assert results["training"]["ours_tokens_per_s"] > 0 and results["training"]["torch_tokens_per_s"] > 0


def test_benchmarks_markdown(results, tmp_path):
    text = bench.write_markdown(results, tmp_path / "BENCHMARKS.md")
    for heading in ("## 1.", "## 2.", "## 3.", "## 4.", "## 5."):
        assert heading in text
    assert "transformers 5." in text and "torch 2.13.0" in text


def test_the_cached_and_recomputed_decoders_agree():
    """Section 3 compares two ways to the same logits; make sure they are the same computation."""
    import torch

    _, model = bench.model_pair(bench.QUICK)
    src = torch.tensor(bench.random_sources(model.config, 1, seed=0))
    prefix = [model.config.decoder_start_id, 5, 6, 7]
    with torch.inference_mode():
        encoded = model.encode(src)
        full = model.decode(torch.tensor([prefix]), encoded).logits[0, -1]
        cache = model.init_cache(encoded)
        for token in prefix:
            out = model.decode(torch.tensor([[token]]), encoded, cache=cache)
            cache = out.cache
    torch.testing.assert_close(out.logits[0, -1], full, atol=1e-4, rtol=1e-4)


def test_the_app_benchmark_in_quick_mode():
    """Sections 6 and 7 against the real app in Chromium (skipped where Chromium is missing, as the browser tests)."""
    from pathlib import Path

    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian's chromium is not installed")
    from benchmarks.app_bench import measure_app

    app = measure_app(quick=True)
    assert app["ready_s"] > 0 and app["step_ms_median"] > 0 and app["run_ms_median"] > 0
    assert app["translation"] and app["n_steps"] >= 2
    assert app["rss_ready_mb"] > 0 and app["peak_mb"] >= app["rss_ready_mb"]
    lines = bench.app_markdown({**app, "model": app["model"]})
    assert any("Step → every visible figure drawn" in line for line in lines)
    assert 0 < app["step_heatmap_ms_median"] <= app["step_ms_median"]  # the heatmap is one of the figures
    assert app["inside_step_ms_median"] > 0 and app["walkthrough_step_ms_median"] > 0
    assert any("the whole walkthrough drawn" in line for line in lines)
