"""Sanity checks with real weights; skipped unless CONCORD_REAL_MODEL points to a checkpoint.

    CONCORD_REAL_MODEL=/ckpt/Qwen2.5-VL-3B-Instruct CONCORD_REAL_DEVICE=cuda \\
        python -m pytest tests/evaluators/test_real_model.py -m slow
"""

from __future__ import annotations

import os

import pytest
from PIL import Image, ImageDraw

from evaluators.base import Question, ScoreRequest
from evaluators.geneval2 import SoftTIFA
from evaluators.hf_backend import HFVLMBackend
from evaluators.paircomp import PairComp
from evaluators.tiif import TIIF
from evaluators.vqascore import VQAScore

REAL_MODEL = os.environ.get("CONCORD_REAL_MODEL")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not REAL_MODEL, reason="set CONCORD_REAL_MODEL=/path/to/a VLM checkpoint"),
]


@pytest.fixture(scope="module")
def backend():
    b = HFVLMBackend(REAL_MODEL, device=os.environ.get("CONCORD_REAL_DEVICE", "auto"))
    b.load()
    return b


@pytest.fixture(scope="module")
def red_square(tmp_path_factory):
    path = tmp_path_factory.mktemp("real") / "red_square.png"
    image = Image.new("RGB", (448, 448), (255, 255, 255))
    ImageDraw.Draw(image).rectangle([112, 112, 336, 336], fill=(220, 20, 20))
    image.save(path)
    return path


def _pair(path):
    return [ScoreRequest(0, path, "a red square on a white background"),
            ScoreRequest(1, path, "a green dog running on the grass")]


def test_vqascore_prefers_the_matching_prompt(backend, red_square):
    match, mismatch = VQAScore(backend=backend).score(_pair(red_square))
    assert match.value > 0.5 > mismatch.value


def test_paircomp_prefers_the_matching_caption(backend, red_square):
    match, mismatch = PairComp(backend=backend).score(_pair(red_square))
    assert match.value > 0.5 > mismatch.value


def test_tiif_and_soft_tifa_answer_simple_questions(backend, red_square):
    questions = (Question("0", "Is there a red square in the image?", "yes"),
                 Question("1", "Is there a cat in the image?", "no"))
    result = TIIF(backend=backend).score([ScoreRequest(0, red_square, "p", questions)])[0]
    assert result.value == 1.0
    count = (Question("0", "How many squares are in the image?", "one", "count"),)
    soft = SoftTIFA(backend=backend).score([ScoreRequest(0, red_square, "p", count)])[0]
    assert soft.value > 0.5
