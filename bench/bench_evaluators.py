"""Throughput of yes/no VLM scoring: the references' naive loop vs Concord's batched path.

Workload: N images × 7 yes/no questions (a Soft-TIFA / TIIF-sized job). Scores P(Yes)
for every (image, question) pair twice:

* naive: one plain forward per pair, batch 1, softmax of the last position's logits;
* reference loop: what the reference scripts run, one ``generate(max_new_tokens=1,
  output_scores=True)`` per pair, softmax of ``scores[0]``;
* concord: :class:`evaluators.hf_backend.HFVLMBackend`, left-padded batches, one forward
  with ``logits_to_keep=1``.

Prints a table (pairs/s, speed-up vs naive) and checks that all give the same scores
(fp32: within 1e-4). A shared-image-prefix KV-cache path is not implemented.

    python bench/bench_evaluators.py                       # tiny random model, CPU, < 1 min
    python bench/bench_evaluators.py --model /ckpt/Qwen2.5-VL-7B-Instruct --device cuda
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

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
    """One forward per pair, batch 1, full logits."""
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


def concord_scores(backend: HFVLMBackend, images: list, texts: list[str],
                   yes_ids: list[int]) -> list[float]:
    """Concord's batched next-token path."""
    logprobs = backend.next_token_logprobs(images, texts)
    return [logprobs[i, yes].exp().item() for i, yes in enumerate(yes_ids)]


def timed(fn, *args) -> tuple[list[float], float]:
    """Run once to warm up on the first pairs, then time the full run."""
    fn(*(a[:2] if isinstance(a, list) else a for a in args))
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = fn(*args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return result, time.perf_counter() - start


def main() -> int:
    """Build the workload, time both paths, print the table, check the scores."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="checkpoint (default: a tiny random model built here)")
    ap.add_argument("--arch", default="qwen2_5_vl", help="tiny architecture when no --model")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--image-size", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=16, help="pairs per forward")
    args = ap.parse_args()
    model = args.model
    if model is None:
        from evaluators.tiny import save_tiny_vlm

        model = str(save_tiny_vlm(args.arch, Path(tempfile.mkdtemp()) / args.arch))
    backend = HFVLMBackend(model, device=args.device, batch_size=args.batch_size)
    backend.load()
    images = [im for im in make_images(args.images, args.image_size) for _ in QUESTIONS]
    rendered = [backend.render(q + SUFFIX) for _ in range(args.images) for q in QUESTIONS]
    texts = [t for t, _ in rendered]
    yes_ids = [backend.first_token_id(c, backend.spaced(c, "Yes")) for _, c in rendered]
    paths = [("naive (forward, batch 1)", naive_scores),
             ("reference loop (generate, batch 1)", generate_scores),
             (f"concord batched ({args.batch_size}/forward)", concord_scores)]
    runs = [(label, *timed(fn, backend, images, texts, yes_ids)) for label, fn in paths]
    n, t_naive, naive = len(texts), runs[0][2], runs[0][1]
    print(f"model={model} device={backend.model.device} dtype={backend.model.dtype} "
          f"images={args.images} questions={len(QUESTIONS)} pairs={n}")
    print(f"{'path':<38} {'seconds':>8} {'pairs/s':>9} {'vs naive':>9}")
    for label, _, seconds in runs:
        print(f"{label:<38} {seconds:8.2f} {n / seconds:9.1f} {t_naive / seconds:8.2f}x")
    print(f"{'shared-prefix KV cache':<38} {'not implemented':>28}")
    diff = max(abs(a - b) for _, scores, _ in runs[1:]
               for a, b in zip(naive, scores, strict=True))
    tolerance = 1e-4 if backend.model.dtype == torch.float32 else 2e-2
    ok = diff <= tolerance
    print(f"max |P(Yes) - naive| over all paths = {diff:.2e} ({'OK' if ok else 'MISMATCH'}, "
          f"tolerance {tolerance:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
