"""The workload of bench/bench_evaluators.py: the model it builds offline, its images and
questions, and a FLOP count of each scoring path (to say what a 2-layer measurement
predicts for the full-depth model)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from PIL import Image, ImageDraw

QUESTIONS = [
    "Is there a red square in the image?",
    "Is there a blue circle in the image?",
    "Is the square to the left of the circle?",
    "Are there two objects in the image?",
    "Is the background white?",
    "Is the circle bigger than the square?",
    "Does the image show a cat?",
]
SUFFIX = " Answer with yes or no."
# Qwen2.5-VL-7B-Instruct's text and vision widths; depth cut to 2 + 2 layers
WIDTHS_7B = {"hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
             "num_key_value_heads": 4, "vocab_size": 152064}
VISION_7B = {"depth": 2, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
             "out_hidden_size": 3584, "window_size": 112, "fullatt_block_indexes": [1],
             "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
DEPTH_7B = (28, 32)  # text layers, vision blocks of the real 7B model


def build_qwen_7b_widths() -> tuple[Any, Any]:
    """Qwen2.5-VL, 7B widths, 2 + 2 layers, random weights, stock image processor sizes."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
    )
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    from tests.support.tiny_models import _QWEN_SPECIALS, tiny_tokenizer

    # trained on the bench's own texts, so words are single tokens as with Qwen's tokenizer
    corpus = [q + SUFFIX for q in QUESTIONS] * 20 + ["system\nYou are a helpful assistant.",
                                                     "user\n", "assistant\n", "Yes No"] * 20
    tok = tiny_tokenizer(_QWEN_SPECIALS, eos="<|im_end|>", pad="<|endoftext|>",
                         corpus=corpus, vocab_size=1500)
    ids = tok.convert_tokens_to_ids
    # Qwen2.5-VL's template adds this system turn when none is given
    template = ("{% if messages[0]['role'] != 'system' %}<|im_start|>system{{ '\\n' }}You are a "
                "helpful assistant.<|im_end|>{{ '\\n' }}{% endif %}"
                "{% for m in messages %}<|im_start|>{{ m['role'] }}{{ '\\n' }}"
                "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
                "{% for c in m['content'] %}{% if c['type'] == 'image' %}<|vision_start|>"
                "<|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}{% endfor %}"
                "{% endif %}<|im_end|>{{ '\\n' }}{% endfor %}"
                "<|im_start|>assistant{{ '\\n' }}")
    proc = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(), tokenizer=tok,
                               video_processor=Qwen2VLVideoProcessor(), chat_template=template)
    rope = {"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1e6}
    config = Qwen2_5_VLConfig(
        text_config={**WIDTHS_7B, "num_hidden_layers": 2, "rope_parameters": rope,
                     "max_position_embeddings": 32768, "tie_word_embeddings": False,
                     "bos_token_id": ids("<|endoftext|>"), "eos_token_id": ids("<|im_end|>"),
                     "pad_token_id": ids("<|endoftext|>")},
        vision_config=VISION_7B, image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"), vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"))
    torch.manual_seed(0)
    return Qwen2_5_VLForConditionalGeneration(config).eval(), proc


def make_images(n: int, size: int) -> list[Image.Image]:
    """n synthetic images with a square and a circle in varying places and colours."""
    images = []
    for i in range(n):
        im = Image.new("RGB", (size, size), (255, 255, 255))
        draw = ImageDraw.Draw(im)
        s = size // 4
        x = (37 * i) % (size - 2 * s)
        draw.rectangle([x, s, x + s, 2 * s], fill=(200 + i % 55, 20, 20))
        draw.ellipse([size - s - x // 2, 2 * s, size - x // 2, 3 * s], fill=(20, 20, 200))
        images.append(im)
    return images


@dataclass(frozen=True, slots=True)
class Shape:
    """What one (image, question) pair costs, in FLOPs per unit: a text layer per token, a
    vision block per patch, one row of the LM head; and the pair's token counts."""

    text_layer: float
    vision_block: float
    head_row: float
    prefix: int      # tokens before the question (system, image)
    suffix: int      # question tokens
    patches: int     # vision patches of one image


def _numel(module: Any) -> int:
    return sum(p.numel() for p in module.parameters())


def shape_of(backend: Any, image: Any, text: str) -> Shape | None:
    """The pair's :class:`Shape` (a Qwen2/2.5-VL layout; None for other models)."""
    inner = getattr(backend.model, "model", None)
    if inner is None or not hasattr(inner, "visual") or not hasattr(inner, "language_model"):
        return None
    split = backend.split_prefix(text)
    if split is None:
        return None
    prefix, suffix = split
    inputs = backend.encode([image], [prefix])
    head = backend.model.get_output_embeddings().weight
    return Shape(2.0 * _numel(inner.language_model.layers[0]),
                 2.0 * _numel(inner.visual.blocks[0]), 2.0 * head.numel(),
                 int(inputs["input_ids"].shape[1]), len(suffix),
                 int(inputs["pixel_values"].shape[0]))


def flops_per_pair(path: str, s: Shape, layers: int, blocks: int, questions: int) -> float:
    """FLOPs of one pair by ``path`` at depth (``layers`` text, ``blocks`` vision): the
    matmuls only (attention scores add about 1% at these lengths)."""
    vision = s.patches * blocks * s.vision_block
    tokens = s.prefix + s.suffix
    if path == "naive":  # every position's logits
        return vision + tokens * layers * s.text_layer + tokens * s.head_row
    if path == "shared":  # image and prefix once per image, then the question alone
        once = vision + s.prefix * layers * s.text_layer + s.head_row
        return once / questions + s.suffix * layers * s.text_layer + s.head_row
    return vision + tokens * layers * s.text_layer + s.head_row  # one logit row kept
