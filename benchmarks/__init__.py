"""Measurements, side by side: the library against transformers (`bench`), the app in Chromium (`app_bench`) and
many simultaneous users (`loadtest`). Run `python -m benchmarks.bench` for the whole report, BENCHMARKS.md."""
