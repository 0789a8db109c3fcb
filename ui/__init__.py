"""The Gradio user interface of Transformer Explorer (the library in `transformer/` knows nothing of it)."""
