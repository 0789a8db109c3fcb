"""Questions made from the live model (issue 38 §3): each answer is what the model does, checked by doing it."""

from __future__ import annotations

import pytest

from explorer import Explorer, ExplorerError, ExplorerState
from explorer.inside import worked_step
from explorer.questions import KINDS, OTHER, Question, ask, next_piece, revealed

SENTENCE = ExplorerState(model="numbers-de", source="three hundred and forty-two", choices=(None,))


@pytest.fixture
def explorer(registry):
    return Explorer(registry, SENTENCE)


def test_which_word_comes_next_offers_the_top_three_a_wrong_one_and_something_else(explorer):
    question = ask(explorer, "next", seed=1)
    keys = [c.key for c in question.choices]
    top3 = [str(c.token_id) for c in explorer.snapshot().candidates[:3]]
    assert set(top3) <= set(keys) and keys[-1] == OTHER and len(keys) == 5
    assert question.answer == str(next_piece(explorer)) == top3[0]  # greedy: the most probable piece
    assert [c.key for c in ask(explorer, "next", seed=1).choices] == keys  # the seed decides the order
    stepped = Explorer(explorer.registry, revealed(explorer.state, question))
    assert stepped.decoding.output_ids[-1] == int(question.answer)  # the reveal takes the step


def test_where_it_looks_is_the_argmax_of_the_heads_row(explorer):
    for head in (None, 1):
        state = explorer.state.replace(layer=1, head=head)
        shown = Explorer(explorer.registry, state)
        question = ask(shown, "look")
        cross = shown.snapshot().cross[1]
        row = (cross.mean(dim=0) if head is None else cross[head])[-1]
        assert question.answer == str(int(row.argmax()))
        assert len(question.choices) == len(shown.snapshot().source_tokens)
        assert revealed(state, question).family == "cross"


def test_silencing_is_decided_by_taking_the_step_with_the_head_silenced(registry):
    answers = set()
    for layer in range(2):
        for head in range(4):
            state = SENTENCE.replace(family="decoder_self", layer=layer, head=head)
            question = ask(Explorer(registry, state), "silence")
            silenced = state.replace(silenced=frozenset({("decoder_self", layer, head)}))
            changed = next_piece(Explorer(registry, state)) != next_piece(Explorer(registry, silenced))
            assert question.answer == ("yes" if changed else "no")
            answers.add(question.answer)
            assert revealed(state, question).silenced == silenced.silenced
    assert answers  # (each head answered; which of yes and no depends on the model)


def test_the_first_layer_that_knows_is_the_first_whose_lens_top_is_the_final_one(explorer):
    question = ask(explorer, "layer")
    predictions = worked_step(explorer).layer_predictions
    final = predictions[-1].top_ids[0]
    first = min(p.layer for p in predictions if p.top_ids[0] == final)
    assert question.answer == str(first)
    assert revealed(explorer.state, question).stage == "layers"


@pytest.mark.parametrize("kind", KINDS)
def test_a_question_travels_as_json_and_reads_in_chinese(explorer, kind):
    from explorer.i18n import speaking

    question = ask(explorer, kind, seed=3)
    again = Question.from_json(question.to_json())
    assert again == question
    english = question.title(), question.text()
    with speaking("zh"):
        chinese = question.title(), question.text()
    assert all(chinese) and chinese[0] != english[0] and chinese[1] != english[1]


def test_no_question_at_the_end_and_none_of_an_unknown_kind(registry):
    done = Explorer(registry, SENTENCE)
    for _ in done.run():
        pass
    with pytest.raises(ExplorerError, match="finished"):
        ask(done, "next")
    with pytest.raises(ExplorerError, match="no question of this kind"):
        ask(Explorer(registry, SENTENCE), "guess")
    with pytest.raises(ValueError):
        Question.from_json('{"kind": "next", "prompt": "x", "choices": [], "answer": "1"}')
