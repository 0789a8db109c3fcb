"""The placeholder app: it builds, answers through its named API, and fails offline with a message."""

from __future__ import annotations

import app


def test_empty_and_too_long_input_get_a_message():
    assert app.translate_text("   ", app.DEFAULT_REPO, "greedy") == ("", "<p>Type a sentence to translate.</p>")
    output, message = app.translate_text("x" * 5000, app.DEFAULT_REPO, "greedy")
    assert output == "" and "too long" in message


def test_offline_hub_model_gives_a_clear_escaped_message():
    output, message = app.translate_text("Hello", "Helsinki-NLP/opus-mt-<b>x</b>", "greedy")
    assert output == ""
    assert "Could not translate" in message and "<b>x</b>" not in message and "&lt;b&gt;" in message


def test_translate_is_a_named_api_endpoint():
    names = {dep.get("api_name") for dep in app.demo.config["dependencies"]}
    assert "translate" in names


def test_positional_encoding_figure_has_positions_down_and_dimensions_across():
    figure = app.positional_encoding_figure(10, 8, "concat")
    assert figure.data[0].z.shape == (10, 8)
    assert figure.layout.yaxis.autorange == "reversed"
    assert figure.layout.xaxis.title.text == "dimension"
