"""Making models: the corpus, the synthetic tasks, training and evaluation. Not needed to run or read the model.

* `corpus` — the English→German corpus from Debian packages and the project's own sentences, one module per source
  (`python -m transformer.training.corpus build`);
* `everyday` — the project's everyday sentences: the held-out test set and the authored training corpus;
* `synthetic` — small exactly-checkable tasks (numbers and dates in words);
* `toy_tasks` — tasks a tiny model learns in seconds (copy, reverse, sort, count; numbers and dates in words),
  each cut into its own fixed pieces;
* `recipe` — the paper's recipe, once: the learning rate, the loss, one update, and how a run is watched as it
  learns (the probe, the snapshot steps); the trainer and the Train tab's runs both use it;
* `train` — training with resumption, evaluation during training and export (`python -m transformer.training.train`),
  with what a run is set to in `settings`, its batches in `batches`, its folder's files in `run_folder` and its
  processes in `distributed`;
* `evaluate` — test metrics and the model card (`python -m transformer.training.evaluate`).
"""
