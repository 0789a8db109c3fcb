"""The shipped models on a GPU, as a GPU Space runs them (`app.py` puts the models on CUDA wherever there is one):
the same translations and the same step records as on the CPU. Skipped where there is no GPU."""

from __future__ import annotations

import pytest
import torch

from explorer import ModelRegistry
from tests.conftest import CHECKPOINTS, explorer_on
from transformer.checkpoint import load_checkpoint
from transformer.decoding import BeamSearch, translate

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize(
    "model, source",
    [("numbers-de", "seven thousand, three hundred and eighty-five"), ("en-de", "The weather is nice today.")],
)
def test_a_shipped_model_translates_on_the_gpu_as_on_the_cpu(model, source):
    cpu, gpu = (load_checkpoint(CHECKPOINTS / model, device) for device in ("cpu", "cuda"))
    assert next(gpu.model.parameters()).is_cuda
    assert translate(gpu, source) == translate(cpu, source)
    assert translate(gpu, source, BeamSearch(4)) == translate(cpu, source, BeamSearch(4))


def test_the_explorer_on_the_gpu_steps_as_on_the_cpu():
    """What the page shows for a step (the candidates, the attention of its query) comes from the GPU unchanged."""
    cpu, gpu = (
        explorer_on(ModelRegistry(CHECKPOINTS, device=device), "Where is the train station?", model="en-de")
        for device in ("cpu", "cuda")
    )
    for _ in range(3):
        on_cpu, on_gpu = cpu.step(), gpu.step()
        assert on_gpu.token_id == on_cpu.token_id
        probabilities = [sorted(c.prob for c in step.candidates) for step in (on_gpu, on_cpu)]  # (near-ties may swap)
        assert probabilities[0] == pytest.approx(probabilities[1], abs=1e-4)
        for a, b in zip(gpu.snapshot().cross, cpu.snapshot().cross, strict=True):  # what the attention view draws
            torch.testing.assert_close(torch.as_tensor(a).cpu(), torch.as_tensor(b), atol=1e-4, rtol=1e-4)
