"""Every tensor the code makes is made on the model's device: checked on any machine, with a second device or not.

A test on one device cannot see a tensor made without `device=`: it lands on the default device, which is the
model's. Here PyTorch's default device is "meta" (`with torch.device("meta")`) while the model stays on the CPU: a
tensor made without `device=` is then a meta tensor, which holds no numbers. The first operation that mixes it with
the model's tensors fails, or gives a tensor that cannot be read back; a few (a meta index into a CPU tensor) give
numbers that mean nothing instead. So every path below runs twice, with the default device as it is and under
"meta", and must give the same answer both times. Where the code means a CPU tensor (the sampling generator, Marian
weights read from disk), it says `device="cpu"`; a model is built on the CPU (`Transformer.on_cpu`), then moved.

Where there is a GPU, the same paths also run with the model on "cuda" (and on "cuda:1" where there are two) while
the default stays the CPU: a real second device. Without one, `Elsewhere` tensors (conftest.py) stand in for a GPU's
the other way round: what the model computes must come back to the CPU before NumPy reads it for a view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
import torch

from explorer import Explorer, ExplorerState, ModelRegistry, inside, render, stages, walkthrough
from tests.conftest import CHECKPOINTS, Elsewhere, moved_elsewhere, tiny_model
from transformer.checkpoint import load_checkpoint
from transformer.decoding import BeamSearch, Decoding, Greedy, ModelSwitches, Sampling, generate_batch, translate
from transformer.marian import load_marian
from transformer.training.live import LiveRun, LiveSetup
from transformer.worked import work_through

SRC = [5, 6, 7, 8, 9, 2]
SENTENCE = "three hundred and forty-two"


class Placement(NamedTuple):
    model: str  # the model's device
    default: str  # PyTorch's default device while the code runs


TWO_GPUS = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
PLACEMENTS = [
    pytest.param(Placement("cpu", "meta"), id="model-cpu-default-meta"),
    pytest.param(Placement("cuda", "cpu"), id="model-cuda-default-cpu", marks=pytest.mark.cuda),
    pytest.param(Placement("cuda:1", "cpu"), id="model-cuda1-default-cpu", marks=[pytest.mark.cuda, TWO_GPUS]),
]


@pytest.fixture(params=PLACEMENTS)
def placement(request) -> Placement:
    """Where the model is, and what PyTorch's default device is while the code runs."""
    return request.param


def readable(value: Any) -> Any:
    """Tensors (in dicts, lists and tuples) as lists of numbers, which only a tensor that holds numbers gives."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().tolist()
    if isinstance(value, dict):
        return {key: readable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [readable(item) for item in value]
    return value


def same_under_the_default(run: Callable[[], Any], default: str) -> Any:
    """`run()` with `default` as PyTorch's default device, its answer read back (and returned); where that is not
    the default already ("meta"), the same answer as without it."""
    with torch.device(default):
        got = readable(run())
    if torch.device(default) != torch.get_default_device():
        assert got == readable(run())
    return got


def model_on(device: str):
    model = tiny_model(seed=3).to(device)
    with torch.no_grad():  # livelier than the default init: varied, confident distributions (as in test_decoding)
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(4.0)
    return model


# ---- the check itself --------------------------------------------------------------------------------------


def next_token_logits(model, made_right: bool) -> torch.Tensor:
    """The first step's logits, padding and the start token banned. `made_right=False` is deliberately wrong: the
    start token and the banned ids are made without `device=`."""
    device = next(model.parameters()).device if made_right else None
    src = torch.tensor([SRC], device=next(model.parameters()).device)
    with torch.no_grad():
        logits = model(src, torch.full((1, 1), model.config.decoder_start_id, device=device)).logits[0, -1]
    logits[torch.tensor([0, 1], device=device)] = -float("inf")
    return logits


def banned_without_device(model) -> torch.Tensor:
    """Deliberately wrong, and silent under "meta": the banned ids are made without `device=`, and a meta index
    into the model's logits changes nothing instead of failing."""
    device = next(model.parameters()).device
    with torch.no_grad():
        logits = model(torch.tensor([SRC], device=device), torch.tensor([[1]], device=device)).logits[0, -1]
    logits[torch.tensor([0, 1])] = -float("inf")
    return logits


def test_the_check_catches_a_tensor_made_without_the_models_device(placement):
    model = model_on(placement.model)
    same_under_the_default(lambda: next_token_logits(model, made_right=True), placement.default)
    with pytest.raises((RuntimeError, NotImplementedError)):  # a meta tensor meets the model's, or is read back
        same_under_the_default(lambda: next_token_logits(model, made_right=False), placement.default)
    if placement.default == "meta":  # (a CPU index into a GPU tensor works: a slow copy, not a wrong answer)
        with pytest.raises(AssertionError):  # no error, but another answer: why every path is run twice
            same_under_the_default(lambda: banned_without_device(model), placement.default)


# ---- the model, decoding, the worked step ------------------------------------------------------------------------


def test_a_forward_pass_and_the_key_value_cache_stay_on_the_models_device(placement):
    model = model_on(placement.model)
    device = placement.model

    def run():
        src, tgt = torch.tensor([SRC, [4, 3, 2, 0, 0, 0]], device=device), torch.tensor([[1, 8, 9]] * 2, device=device)
        silenced = [("cross", 1, 0), ("encoder", 0, 1)]
        switches = ModelSwitches(causal_mask_on=False, padding_mask_on=False, use_positions=False, silenced=silenced)
        with torch.no_grad():
            full, switched = model(src, tgt, return_attention=True), model(src, tgt, switches=switches)
            encoded = model.encode(src)
            cache, steps = model.init_cache(encoded), []
            for t in range(tgt.size(1)):
                step = model.decode(tgt[:, t : t + 1], encoded, cache=cache, return_attention=True)
                cache, steps = step.cache, [*steps, step.logits]
            kept = cache.truncate(1).select(torch.tensor([1, 0], device=device))  # Back, and beams reordered
            return full.logits, full.attention.cross, switched.logits, steps, kept.layers[0].self_kv.k

    same_under_the_default(run, placement.default)


def test_greedy_sampling_and_beam_search_with_forcing_and_back_stay_on_the_models_device(placement):
    model = model_on(placement.model)

    def run():
        answers = []
        for strategy in (Greedy(), Sampling(temperature=1.5, top_k=8, top_p=0.9, seed=7), BeamSearch(3)):
            decoding = Decoding(model, SRC, strategy, max_new_tokens=12, return_attention=True)
            decoding.step()
            decoding.send(17)  # forcing
            decoding.step()
            decoding.back()  # Back
            decoding.back()
            records = [*decoding.steps, *decoding.run()]
            answers.append((decoding.output_ids, [(r.token_id, r.prob, r.attention.cross) for r in records]))
        recomputed = Decoding(model, SRC, BeamSearch(2), switches=ModelSwitches(causal_mask_on=False), max_new_tokens=4)
        batched = generate_batch(model, [SRC, [4, 2], [9, 8, 7, 2]], max_new_tokens=[6, 3, 8])
        return answers, recomputed.run()[-1].beams, batched

    same_under_the_default(run, placement.default)


def test_a_shipped_model_and_its_untrained_twin_load_and_translate_on_the_models_device(placement):
    """Loading builds the model on the CPU and moves it; the twin's weights are drawn from its seed on the CPU."""

    def run():
        trained, twin = (
            load_checkpoint(CHECKPOINTS / name, placement.model) for name in ("numbers-de", "numbers-de-untrained")
        )
        assert next(trained.model.parameters()).device == torch.device(placement.model)
        return translate(trained, SENTENCE), translate(trained, SENTENCE, BeamSearch(3)), twin.model.state_dict()

    same_under_the_default(run, placement.default)


def test_the_worked_step_stays_on_the_models_device(placement):
    model = model_on(placement.model)

    def run():
        worked = work_through(model, SRC + [0], [1, 6, 12], switches=ModelSwitches(silenced=[("cross", 1, 1)]), top_k=3)
        off = ModelSwitches(causal_mask_on=False, padding_mask_on=False, use_positions=False)
        unmasked = work_through(model, SRC, [1, 6], switches=off)
        predictions = [(p.top_ids, p.top_probabilities, p.chosen_probability) for p in worked.layer_predictions]
        stream = worked.residual_stream("decoder", 2)
        return worked.output.logits, worked.decoder[1].cross_attention.weights, predictions, stream, unmasked.memory

    same_under_the_default(run, placement.default)


# ---- the explorer, its views and figures ------------------------------------------------------------------------


def numbers_de_on(device: str, **settings) -> Explorer:
    """numbers-de on `device`, from a registry of its own: nothing is answered from what another run computed."""
    registry = ModelRegistry(CHECKPOINTS, device=device)
    return Explorer(registry, ExplorerState(model="numbers-de", source=SENTENCE, **settings))


def test_the_explorer_steps_forces_goes_back_and_snapshots_on_the_models_device(placement):
    def run():
        explorer = numbers_de_on(placement.model)
        explorer.step()
        explorer.force_text("drei")
        explorer.step()
        explorer.back()
        first = explorer.snapshot()
        explorer.update(strategy="beam", beam_width=3, causal_mask=False, silenced=frozenset({("cross", 0, 1)}))
        second = explorer.snapshot()
        text, upcoming = explorer.translate_to_end(strategy="sampling", seed=3, silenced=frozenset())
        return (
            [(s.output_text, s.candidates, s.encoder, s.decoder_self, s.cross, s.predictions) for s in (first, second)],
            text,
            upcoming,
        )

    same_under_the_default(run, placement.default)


def views(explorer: Explorer) -> tuple:
    """Everything the page draws of the explorer's step: every stage of Inside a step, the walkthrough, the figures
    (attention, alignment, beam tree, positions, the untrained twin's, silenced heads compared) and their words."""
    snapshot, state, registry = explorer.snapshot(), explorer.state, explorer.registry
    stages_drawn = [inside.stage_view(Explorer(registry, state.replace(stage=stage))) for stage in stages.STAGES]
    tour = [(s.text, s.tensors, s.plot and s.plot.to_json()) for s in walkthrough.tour(explorer)]
    silenced = Explorer(registry, state.replace(silenced=frozenset({("cross", 0, 0)})))
    drawn = [
        inside.diagram(explorer, "output"),
        render.attention_figure(snapshot, state),
        render.families_figure(snapshot, state),
        render.alignment_figure(snapshot, state),
        render.beam_figure(explorer),
        *render.positional_figures(explorer, 20, []),
        *render.twin_comparison(explorer)[:2],
        render.comparison(silenced)[0],
    ]
    words = [render.attention_caption(snapshot, state), render.alignment_caption(snapshot, state),
             render.attention_thumbnails(snapshot, state), render.shuffled_report(explorer)]  # fmt: skip
    return stages_drawn, tour, [figure.to_json() for figure in drawn], words


def stepped(explorer: Explorer) -> Explorer:
    explorer.step()
    explorer.step()
    return explorer


def test_every_view_of_a_step_is_drawn_from_the_models_device(placement):
    """Padding, so that some keys are masked; beam search, so that there is a beam tree."""
    settings = dict(pad_to=10, strategy="beam", beam_width=3)
    same_under_the_default(lambda: views(stepped(numbers_de_on(placement.model, **settings))), placement.default)


def test_the_views_bring_what_the_model_computes_to_the_cpu():
    """No GPU needed: numbers-de and its twin with their weights made `Elsewhere` (conftest.py), whose tensors NumPy
    refuses until they are brought to the CPU, as it refuses a GPU's. Every view reads what the model computed from
    them, and draws what it draws from the plain model. (It sees the tensors computed from the weights, not those
    made with `device=`: the tests that take `device`, run on a GPU, see those too.)"""
    settings = dict(pad_to=10, strategy="beam", beam_width=3)
    plain, elsewhere = (numbers_de_on("cpu", **settings) for _ in range(2))
    for name in ("numbers-de", "numbers-de-untrained"):
        moved_elsewhere(elsewhere.registry.get(name).model)
    stepped(elsewhere)
    assert isinstance(inside.worked_step(elsewhere).output.logits, Elsewhere)  # the stand-in took
    assert views(elsewhere) == views(stepped(plain))


# ---- the Marian import and training ---------------------------------------------------------------------------


def test_the_marian_import_stays_on_the_models_device(marian, placement):
    folder, _ = marian

    def run():
        checkpoint = load_marian(folder, placement.model)
        decoding = Decoding(checkpoint.model, checkpoint.tokenizer.encode_source("Where is the train station?"))
        return checkpoint.model.state_dict(), decoding.run()[-1].index, decoding.output_ids

    same_under_the_default(run, placement.default)


def test_a_few_training_steps_stay_on_the_models_device(placement):
    """The Train tab's engine: the model drawn on the CPU from the seed, the batches made on its device, Adam, the
    held-out measures and the probe (its greedy batch translation)."""
    setup = LiveSetup(task="reverse", layers=1, heads=2, d_model=32, batch_size=16, seed=3)

    def run():
        live = LiveRun(setup, placement.model)
        records = [live.train_step() for _ in range(2)]
        probe = live.probe()
        return records, live.evaluate(), probe.prediction, live.snapshot(1.0, {}).weights

    same_under_the_default(run, placement.default)
