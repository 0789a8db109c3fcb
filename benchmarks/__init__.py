"""Measurements, side by side: the library against transformers (`bench`), the app in Chromium (`app_bench`) and
a whole class of students on one server (`classroom`). Run `python -m benchmarks.bench` for the whole report,
BENCHMARKS.md, and `python -m benchmarks.classroom` for the class.

* `bench` — the whole run and its command line; `plan` — the sizes and repeats of a full and a quick run;
  `timing` — how everything is timed (warm-up, taking turns, medians, percentiles).
* One module per section: `decode_step` (1), `greedy` (2), `cache` (3), `beam` (4), `training` (5), `app_bench`
  (6, 7); `model_pair` is the random opus-mt-sized model they share, in both implementations; `environment` is the
  machine and the versions.
* `report` — BENCHMARKS.md, the templates `report.md.j2` and `app.md.j2` filled from the numbers of a run.
* `real_app` — starts the real app and drives its page: for the app and classroom benchmarks and the browser tests.
"""
