"""Tiny random-weight VLMs built offline, for tests and benchmarks only.

Each builder trains a byte-level BPE tokenizer in-process, makes a small image processor, a
chat template and a hidden-32 / 2-layer config, and returns ``(model, processor)``. Their
scores are meaningless: they exercise the glue (templates, padding, token ids, batching),
never model quality. :func:`save_tiny_vlm` writes one to a folder that the production
loader (``from_pretrained``) reads back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

ARCHITECTURES = ("llava", "qwen2_5_vl", "qwen3_vl", "idefics3", "paligemma")

# Digits are single pre-tokens as in the Qwen tokenizers, so " 4" splits into " " + "4":
# GenEval 2's counting soft score depends on that (its " 4" variant is the bare space).
_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_WORDS = "one two three four five six seven One Two Three Four Five Six Seven 1 2 3 4 5 6 7"
_CORPUS = [
    'Does this figure show "a red cube on a blue table"? Please answer Yes or No.',
    'Does this image show "two cats and a dog"? Answer the question with Yes or No.',
    ' Does this image match the description "a green backpack", please directly respond'
    " with yes or no",
    "How many pigs are in the image? Answer in one word. Is the text 'drink' in the image?",
    "Yes No yes no YES NO Yes. No. yes, no. USER: ASSISTANT: Assistant: User: Answer:",
    "ASSISTANT: Yes ASSISTANT: No Assistant: Yes Assistant: No Answer with yes or no.",
    "\nYes\nNo\nyes\nno\n Yes\n No " + _WORDS + " " + _WORDS.lower(),
    "\n".join(_WORDS.split()) + "\n" + "\n".join(_WORDS.lower().split()),
] * 12


def tiny_tokenizer(specials: list[str], *, eos: str, pad: str, bos: str | None = None,
                   corpus: list[str] | None = None, vocab_size: int = 600,
                   **kwargs: Any) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on a few template sentences (left padding).

    ``corpus`` (default: the metrics' prompt templates) and ``vocab_size`` let a benchmark
    train one whose token counts look like a real tokenizer's on its own texts.
    """
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus or _CORPUS, trainer)
    named = {"eos_token": eos, "pad_token": pad}
    if bos is not None:
        named["bos_token"] = bos
    return PreTrainedTokenizerFast(tokenizer_object=tok, padding_side="left", **named, **kwargs)


def _content(image: str) -> str:
    # transformers renders templates with trim_blocks: literal newlines go in {{ '\n' }}.
    return (
        "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
        "{% for c in message['content'] %}{% if c['type'] == 'image' %}" + image
        + "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    )


def _text_config(tok: PreTrainedTokenizerFast, bos: str, eos: str, pad: str,
                 **extra: Any) -> dict[str, Any]:
    ids = tok.convert_tokens_to_ids
    return dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                bos_token_id=ids(bos), eos_token_id=ids(eos), pad_token_id=ids(pad), **extra)


def build_llava() -> tuple[Any, Any]:
    """LLaVA (CLIP + Llama); the template ends with ``ASSISTANT:`` (space-prefixed answers)."""
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tok = tiny_tokenizer(["<s>", "</s>", "<pad>", "<image>"], bos="<s>",
                         eos="</s>", pad="<pad>")
    template = ("{% for message in messages %}{{ message['role'].upper() }}: "
                + _content("<image>{{ '\\n' }}") + "{{ '\\n' }}{% endfor %}"
                "{% if add_generation_prompt %}ASSISTANT:{% endif %}")
    image_proc = CLIPImageProcessor(size={"shortest_edge": 32},
                                    crop_size={"height": 32, "width": 32})
    proc = LlavaProcessor(image_processor=image_proc, tokenizer=tok, patch_size=8,
                          vision_feature_select_strategy="default",
                          num_additional_image_tokens=1, chat_template=template)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, image_size=32, patch_size=8,
                                       projection_dim=32),
        text_config=LlamaConfig(**_text_config(tok, "<s>", "</s>", "<pad>")),
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default", vision_feature_layer=-2)
    return LlavaForConditionalGeneration(config), proc


_QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                  "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


def build_qwen2_5_vl() -> tuple[Any, Any]:
    """Qwen2.5-VL with a ChatML template ending in ``assistant\\n`` (no space before answers)."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
    )
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    tok = tiny_tokenizer(_QWEN_SPECIALS, eos="<|im_end|>", pad="<|endoftext|>")
    template = ("{% for message in messages %}<|im_start|>{{ message['role'] }}{{ '\\n' }}"
                + _content("<|vision_start|><|image_pad|><|vision_end|>")
                + "<|im_end|>{{ '\\n' }}{% endfor %}"
                "{% if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif %}")
    pixels = {"min_pixels": 28 * 28, "max_pixels": 56 * 56}  # 1..4 merged image tokens
    proc = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(**pixels), tokenizer=tok,
                               video_processor=Qwen2VLVideoProcessor(**pixels),
                               chat_template=template)
    ids = tok.convert_tokens_to_ids
    # head_dim 8 -> rotary half-dim 4 = sum(mrope_section)
    rope = {"rope_type": "default", "mrope_section": [1, 1, 2], "rope_theta": 10000.0}
    config = Qwen2_5_VLConfig(
        text_config=_text_config(tok, "<|endoftext|>", "<|im_end|>", "<|endoftext|>",
                                 rope_parameters=rope),
        vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4,
                           "out_hidden_size": 32, "window_size": 28, "fullatt_block_indexes": [1]},
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"))
    return Qwen2_5_VLForConditionalGeneration(config), proc


def build_qwen3_vl() -> tuple[Any, Any]:
    """Qwen3-VL (interleaved M-RoPE, DeepStack visual features, 16-px patches)."""
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
    )
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    tok = tiny_tokenizer(_QWEN_SPECIALS, eos="<|im_end|>", pad="<|endoftext|>")
    template = ("{% for message in messages %}<|im_start|>{{ message['role'] }}{{ '\\n' }}"
                + _content("<|vision_start|><|image_pad|><|vision_end|>")
                + "<|im_end|>{{ '\\n' }}{% endfor %}"
                "{% if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif %}")
    pixels = {"min_pixels": 32 * 32, "max_pixels": 64 * 64, "patch_size": 16}
    proc = Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(**pixels), tokenizer=tok,
                            video_processor=Qwen3VLVideoProcessor(patch_size=16),
                            chat_template=template)
    ids = tok.convert_tokens_to_ids
    rope = {"rope_type": "default", "mrope_section": [1, 1, 2], "mrope_interleaved": True,
            "rope_theta": 10000.0}
    config = Qwen3VLConfig(
        text_config={**_text_config(tok, "<|endoftext|>", "<|im_end|>", "<|endoftext|>",
                                    rope_parameters=rope), "head_dim": 8},
        vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4,
                       "out_hidden_size": 32, "patch_size": 16, "num_position_embeddings": 16,
                       "deepstack_visual_indexes": [0]},
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"))
    return Qwen3VLForConditionalGeneration(config), proc


def build_idefics3() -> tuple[Any, Any]:
    """Idefics3 (SigLIP + Llama); template ends with ``Assistant:``; nested image lists."""
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
    )

    tok = tiny_tokenizer(["<|endoftext|>", "<end_of_utterance>", "<fake_token_around_image>",
                          "<image>", "<global-img>"],
                         eos="<end_of_utterance>", pad="<|endoftext|>")
    template = ("<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}:"
                + _content("<image>") + "<end_of_utterance>{{ '\\n' }}{% endfor %}"
                "{% if add_generation_prompt %}Assistant:{% endif %}")
    image_proc = Idefics3ImageProcessor(size={"longest_edge": 64}, do_image_splitting=True,
                                        max_image_size={"longest_edge": 32})
    # built before the model: the processor adds its image tokens to the tokenizer
    proc = Idefics3Processor(image_processor=image_proc, tokenizer=tok, image_seq_len=4,
                             chat_template=template)
    text = _text_config(tok, "<|endoftext|>", "<end_of_utterance>", "<|endoftext|>")
    config = Idefics3Config(
        text_config=dict(model_type="llama", **text),
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                           "num_attention_heads": 4, "image_size": 32, "patch_size": 8},
        image_token_id=tok.convert_tokens_to_ids("<image>"), scale_factor=2)
    return Idefics3ForConditionalGeneration(config), proc


def build_paligemma() -> tuple[Any, Any]:
    """PaliGemma (SigLIP + Gemma): no chat template; the processor appends ``\\n``."""
    from transformers import (
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
        SiglipImageProcessor,
    )

    tok = tiny_tokenizer(["<pad>", "<eos>", "<bos>", "<image>"], bos="<bos>",
                         eos="<eos>", pad="<pad>")
    image_proc = SiglipImageProcessor(size={"height": 32, "width": 32})
    image_proc.image_seq_length = 16  # (32 / 8) ** 2 patches
    proc = PaliGemmaProcessor(image_processor=image_proc, tokenizer=tok)
    text = _text_config(tok, "<bos>", "<eos>", "<pad>", head_dim=8)
    text["num_key_value_heads"] = 1
    config = PaliGemmaConfig(
        vision_config={"model_type": "siglip_vision_model", "hidden_size": 32,
                       "intermediate_size": 64, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "image_size": 32, "patch_size": 8,
                       "projection_dim": 32},
        text_config=dict(model_type="gemma", **text),
        image_token_id=tok.convert_tokens_to_ids("<image>"), projection_dim=32)
    config.text_config.num_image_tokens = 16
    return PaliGemmaForConditionalGeneration(config), proc


BUILDERS: dict[str, Callable[[], tuple[Any, Any]]] = {
    "llava": build_llava,
    "qwen2_5_vl": build_qwen2_5_vl,
    "qwen3_vl": build_qwen3_vl,
    "idefics3": build_idefics3,
    "paligemma": build_paligemma,
}


def build_tiny_vlm(arch: str, seed: int = 0) -> tuple[Any, Any]:
    """Build one tiny model (eval mode, fp32) with weights fixed by ``seed``."""
    if arch not in BUILDERS:
        raise ValueError(f"unknown tiny architecture {arch!r}; choose from {sorted(BUILDERS)}")
    torch.manual_seed(seed)
    model, processor = BUILDERS[arch]()
    return model.eval(), processor


def save_tiny_vlm(arch: str, folder: str | Path, seed: int = 0) -> Path:
    """Build a tiny model and ``save_pretrained`` it (weights + processor) into ``folder``."""
    folder = Path(folder)
    model, processor = build_tiny_vlm(arch, seed)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
