"""Throughput of yes/no VLM scoring: the references' loops vs Concord's two batched paths.

Workload: N images × 7 yes/no questions (a Soft-TIFA / TIIF-sized job), at each image size.
P(Yes) of every (image, question) pair by:

* naive: one plain forward per pair, batch 1, logits of every position (the loop the
  reference scripts are usually re-implemented as);
* reference loop: one ``generate(max_new_tokens=1, output_scores=True)`` per pair, as the
  reference scripts run (generate keeps only the last position's logits);
* batched: :class:`evaluators.hf_backend.HFVLMBackend` with the shared prefix switched off
  (left-padded batches of pairs, each pair processes its image again);
* shared prefix: the same backend as scoring runs it (system + image prefilled once per
  image into a KV cache, the 7 questions as one batch on it).

Prints one table (pairs/s, speed-up vs naive and vs the reference loop) and checks that every
path gives the naive scores (fp32: within 1e-4). The default model is a Qwen2.5-VL with the
**7B model's widths but 2 text and 2 vision layers** and random weights, built here offline
(about 1.6 B parameters, 6.5 GB in fp32): a forward costs what a 2-layer slice of the 7B
costs, so the ratios between paths are what matter, not the absolute numbers.

    python bench/bench_evaluators.py                                   # 7B widths, CPU
    python bench/bench_evaluators.py --sizes 224 --images 2            # quicker
    python bench/bench_evaluators.py --widths tiny                     # seconds, smoke test
    python bench/bench_evaluators.py --model /ckpt/Qwen2.5-VL-7B-Instruct --device cuda
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from PIL import Image, ImageDraw

from evaluators.hf_backend import HFVLMBackend

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


def naive_scores(backend: HFVLMBackend, images: list, texts: list[str],
                 yes_ids: list[int]) -> list[float]:
    """One forward per pair, batch 1, logits of every position."""
    out = []
    for image, text, yes in zip(images, texts, yes_ids, strict=True):
        inputs = backend.encode([image], [text])
        with torch.inference_mode():
            logits = backend.model(**inputs).logits[0, -1].float()
        out.append(torch.softmax(logits, -1)[yes].item())
    return out


def generate_scores(backend: HFVLMBackend, images: list, texts: list[str],
                    yes_ids: list[int]) -> list[float]:
    """One generate() per pair, as the reference scripts loop."""
    out = []
    for image, text, yes in zip(images, texts, yes_ids, strict=True):
        inputs = backend.encode([image], [text])
        with torch.inference_mode():
            gen = backend.model.generate(**inputs, max_new_tokens=1, do_sample=False,
                                         output_scores=True, return_dict_in_generate=True)
        out.append(torch.softmax(gen.scores[0][0].float(), -1)[yes].item())
    return out


def backend_scores(backend: HFVLMBackend, images: list, texts: list[str],
                   yes_ids: list[int]) -> list[float]:
    """Concord's backend (batched or shared prefix, as the backend is set up)."""
    logprobs = backend.next_token_logprobs(images, texts)
    return [logprobs[i, yes].exp().item() for i, yes in enumerate(yes_ids)]


def timed(fn: Callable, backend: HFVLMBackend, images: list, texts: list[str],
          yes_ids: list[int], warmup: int) -> tuple[list[float], float, float]:
    """Warm up on the first ``warmup`` pairs, then time the whole workload: (scores, wall
    seconds, CPU seconds of this process; the latter is steadier on a shared machine)."""
    if warmup:
        fn(backend, images[:warmup], texts[:warmup], yes_ids[:warmup])
    sync = torch.cuda.synchronize if backend.model.device.type == "cuda" else (lambda: None)
    sync()
    start, cpu = time.perf_counter(), time.process_time()
    result = fn(backend, images, texts, yes_ids)
    sync()
    return result, time.perf_counter() - start, time.process_time() - cpu


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="checkpoint folder or hub id (default: built here)")
    ap.add_argument("--widths", choices=["7b", "tiny"], default="7b",
                    help="model built when no --model: Qwen2.5-VL 7B widths or tiny")
    ap.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    ap.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"],
                    help="weights of the built model (auto: bf16 on GPU, fp32 on CPU)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[224, 512], help="image sides")
    ap.add_argument("--images", type=int, default=4, help="images per size")
    ap.add_argument("--loop-pairs", type=int, default=7,
                    help="pairs timed for the two per-pair loops (default: one image's 7)")
    ap.add_argument("--batch-size", type=int, default=28, help="pairs per forward")
    ap.add_argument("--paths", default="naive,generate,batched,shared",
                    help="comma-separated subset of naive,generate,batched,shared")
    ap.add_argument("--warmup", type=int, default=1, help="pairs run before timing")
    return ap.parse_args()


def load_backends(args: argparse.Namespace) -> tuple[HFVLMBackend, HFVLMBackend]:
    """(unshared, shared) backends on the same weights."""
    if args.model:
        base = HFVLMBackend(args.model, device=args.device, batch_size=args.batch_size)
        base.load()
    else:
        from tests.support.tiny_models import build_tiny_vlm

        built = build_qwen_7b_widths() if args.widths == "7b" else build_tiny_vlm("qwen2_5_vl")
        device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                              else "cpu" if args.device == "auto" else args.device)
        dtype = (torch.bfloat16 if device.type == "cuda" else torch.float32) \
            if args.dtype == "auto" else getattr(torch, args.dtype)
        model = built[0].to(device=device, dtype=dtype)
        base = HFVLMBackend("qwen2.5-vl-" + args.widths, batch_size=args.batch_size,
                            loader=lambda: (model, built[1]))
        base.load()
    shared = HFVLMBackend(base.model_id, batch_size=args.batch_size,
                          loader=lambda: (base.model, base.processor))
    flat = HFVLMBackend(base.model_id, batch_size=args.batch_size, share_prefix=False,
                        loader=lambda: (base.model, base.processor))
    return flat, shared


PATHS = {"naive": ("naive (forward, batch 1)", naive_scores),
         "generate": ("reference loop (generate, batch 1)", generate_scores),
         "batched": ("batched, unshared", backend_scores),
         "shared": ("shared image prefix", backend_scores)}


def run_size(size: int, args: argparse.Namespace, flat: HFVLMBackend,
             shared: HFVLMBackend) -> list[tuple[str, int, float, float, float]]:
    """Time every path at one size: [(label, pairs, seconds, CPU seconds, max |ΔP| vs the
    first path)].

    The two per-pair loops batch nothing, so they time only the first ``--loop-pairs``
    pairs (their pairs/s does not depend on how many there are); the batched paths run the
    whole workload. Scores are compared on the pairs both paths ran.
    """
    images = [im for im in make_images(args.images, size) for _ in QUESTIONS]
    rendered = [shared.render(q + SUFFIX) for _ in range(args.images) for q in QUESTIONS]
    texts = [t for t, _ in rendered]
    yes_ids = [shared.first_token_id(c, shared.spaced(c, "Yes")) for _, c in rendered]
    rows: list[tuple[str, int, float, float, float]] = []
    first: list[float] | None = None
    for key in args.paths.split(","):
        label, fn = PATHS[key]
        n = min(args.loop_pairs, len(texts)) if key in ("naive", "generate") else len(texts)
        backend = shared if key == "shared" else flat
        scores, seconds, cpu = timed(fn, backend, images[:n], texts[:n], yes_ids[:n],
                                     len(QUESTIONS) if key == "shared" else args.warmup)
        first = first or scores
        diff = max(abs(a - b) for a, b in zip(first, scores, strict=False))
        rows.append((label, n, seconds, cpu, diff))
        print(f"  {size}px {label}: {n} pairs in {seconds:.1f} s", file=sys.stderr, flush=True)
    return rows


def _ratio(rate: dict[str, float], label: str, base: str) -> str:
    """Speed-up of ``label`` over the ``base`` path ("-" when that path did not run)."""
    reference = rate.get(PATHS[base][0])
    return f"{rate[label] / reference:.2f}x" if reference else "-"


def main() -> int:
    """Build the workload, time each path at each size, print the table, check scores."""
    args = parse_args()
    flat, shared = load_backends(args)
    model = shared.model
    tokens = flat.encode(make_images(1, args.sizes[0]), [shared.render(QUESTIONS[0])[0]])
    print(f"model={shared.model_id} params={sum(p.numel() for p in model.parameters()) / 1e9:.2f}B"
          f" device={model.device} dtype={model.dtype} threads={torch.get_num_threads()} "
          f"images={args.images} questions={len(QUESTIONS)} batch={args.batch_size} "
          f"prompt tokens at {args.sizes[0]}px={tokens['input_ids'].shape[1]}")
    print(f"{'size':>5} {'path':<36} {'pairs':>5} {'seconds':>8} {'pairs/s':>8} {'vs naive':>9} "
          f"{'vs generate':>11} {'cpu s':>8} {'cpu vs naive':>9} {'max|ΔP|':>9}")
    tolerance = 1e-4 if model.dtype == torch.float32 else 2e-2
    ok = True
    for size in args.sizes:
        rows = run_size(size, args, flat, shared)
        rate = {label: n / seconds for label, n, seconds, _, _ in rows}
        cpu_rate = {label: n / cpu for label, n, _, cpu, _ in rows}
        for label, n, seconds, cpu, diff in rows:
            print(f"{size:>5} {label:<36} {n:>5} {seconds:8.1f} {rate[label]:8.3f} "
                  f"{_ratio(rate, label, 'naive'):>9} {_ratio(rate, label, 'generate'):>11} "
                  f"{cpu:8.1f} {_ratio(cpu_rate, label, 'naive'):>9} {diff:9.1e}")
            ok = ok and diff <= tolerance
    print(f"scores {'agree' if ok else 'DISAGREE'} with the first path (tolerance "
          f"{tolerance:g}); shared prefix: {shared.share_reason or 'used'}, "
          f"{shared.counters['shared_pairs']} pairs on {shared.counters['prefills']} prefills")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
