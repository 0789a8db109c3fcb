"""The Gradio page, one module per panel or tab; the logic and the figures live in `explorer`.

* `page` — builds the page from its panels and holds the handlers they share (`build_demo`);
* `panel` — what a panel is, and what it draws from after every action;
* `settings` — the page's settings as one object;
* `runtime` — queues, GPU, per-user locks, and a `gr.Blocks` that does not leak;
* `sentence`, `decoding` — the model and sentence, and the decoding controls with the output so far;
* `attention`, `masks`, `positions`, `twins`, `beam`, `walkthrough`, `share` — the tabs, in the page's order;
* `api` — the stateless `/translate` endpoint.
"""
