"""tiif: every TIIF yes/no question answered from next-token yes/no probabilities."""

from __future__ import annotations

import pytest
import torch

from evaluators.base import Question, ScoreRequest
from evaluators.tiif import TIIF, question_prompt
from evaluators.vlm_metric import Query

QUESTIONS = (
    Question("0", "Is the cat to the left of the dog?  ", "yes"),
    Question("1", "Is the image in Chinese Style style?", "Yes"),  # the style question
    Question("2", "Is the text 'drink' in the image?", "no"),
    Question("3", "Does this image show a young boy? Answer with yes or no.", "yes"),
)


def test_question_prompt_adds_the_instruction_once():
    assert question_prompt("Is the cat red?  ") == "Is the cat red? Answer with yes or no."
    assert question_prompt(QUESTIONS[3].text) == QUESTIONS[3].text


def _hand_p_yes(backend, image, question):
    text, context = backend.render(question_prompt(question))
    with torch.inference_mode():
        logits = backend.model(**backend.encode([image], [text])).logits[0, -1].float()
    p = torch.softmax(logits, -1).double()
    sep = "" if context.endswith("\n") else "Ġ"
    ids = backend.tokenizer.convert_tokens_to_ids
    yes = sum(p[ids(sep + w)] for w in ("yes", "Yes", "YES"))
    no = sum(p[ids(sep + w)] for w in ("no", "No", "NO"))
    return (yes / (yes + no)).item()


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "llava"])
def test_every_question_gets_p_yes_and_correctness(backends, image_files, image_maker, arch):
    backend = backends[arch]
    result = TIIF(backend=backend).score([ScoreRequest(0, image_files[4], "p", QUESTIONS)])[0]
    assert list(result.question_values) == ["0", "1", "2", "3"]
    for q in QUESTIONS:
        p = result.question_values[q.id]
        assert p == pytest.approx(_hand_p_yes(backend, image_maker(4), q.text), abs=1e-6)
        details = result.question_details[q.id]
        assert details["pred"] == ("yes" if p >= 0.5 else "no")
        assert details["correct"] == (details["pred"] == q.answer.strip().lower())
    n_correct = sum(d["correct"] for d in result.question_details.values())
    assert result.value == pytest.approx(n_correct / 4)
    assert result.details == {"n_questions": 4, "n_judged": 4, "n_correct": n_correct}


def _peaked(backend, token):
    logits = torch.zeros(len(backend.tokenizer))
    logits[backend.tokenizer.convert_tokens_to_ids(token)] = 8.0
    return torch.log_softmax(logits, -1)


@pytest.mark.parametrize(("token", "question", "correct"), [
    ("YES", QUESTIONS[1], True), ("no", QUESTIONS[2], True), ("No", QUESTIONS[0], False)])
def test_prediction_is_compared_case_insensitively(backends, token, question, correct):
    backend = backends["qwen2_5_vl"]
    _, context = backend.render(question_prompt(question.text))
    read = TIIF(backend=backend).read(_peaked(backend, token), context,
                                      Query(question.id, question.text),
                                      ScoreRequest(0, None, "p", (question,)))
    assert read.details["correct"] is correct
    assert (read.value > 0.5) == (token.lower() == "yes")


def test_questions_without_answers_are_scored_but_not_judged(backends, image_files):
    questions = (Question("0", "Is it red?", None),)
    result = TIIF(backend=backends["llava"]).score(
        [ScoreRequest(0, image_files[0], "p", questions)])[0]
    assert result.question_values["0"] is not None
    assert result.value is None
    assert "no question with an expected" in result.error
