"""The load test in its quick mode: simulated users through gradio_client against the real app (issue 6).

Every answer is checked against what the same actions give alone, so crossed sessions count as errors."""

from __future__ import annotations

from benchmarks.loadtest import load_test


def test_several_users_at_once_get_exactly_their_own_results():
    report = load_test(users=4, seconds=10)
    assert report["errors"] == 0, report["first_errors"]
    assert report["requests"] >= 20
    assert set(report["latency_ms"]) == {"/apply", "/step", "/back", "/run", "/reset"}
    assert report["rss_after_mb"] - report["rss_before_mb"] < 200  # no unbounded growth
    timeline = report["rss_timeline_mb"]  # (seconds, MiB) pairs from the start to the end of the test
    assert len(timeline) >= 3 and timeline[0] == (0.0, report["rss_before_mb"])
