"""Measurements, side by side: the library against transformers (`bench`), the app in Chromium (`app_bench`) and
a whole class of students on one server (`classroom`). Run `python -m benchmarks.bench` for the whole report,
BENCHMARKS.md, and `python -m benchmarks.classroom` for the class."""
