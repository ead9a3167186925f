"""Throughput of yes/no VLM scoring: the references' loops vs Concord's two batched paths.

Workload: N images × 7 yes/no questions (a Soft-TIFA / TIIF-sized job), at each image size.
log P(Yes) and log P(No) of every (image, question) pair by:

* naive: one plain forward per pair, batch 1, logits of every position (the loop the
  reference scripts are usually re-implemented as);
* naive, last logit: the same loop keeping only the last position's logits;
* reference loop: one ``generate(max_new_tokens=1, output_scores=True)`` per pair, as the
  reference scripts run (generate keeps only the last position's logits);
* batched: :class:`evaluators.hf_backend.HFVLMBackend` with the shared prefix switched off
  (left-padded batches of pairs, each pair processes its image again);
* shared prefix: the same backend as scoring runs it (system + image prefilled once per
  image into a KV cache, the 7 questions as one batch on it).

The paths are timed interleaved: ``--rounds`` rounds, each running every path once, in an
order that rotates between rounds; each ratio is taken within a round (the machine is
noisy) and the table shows the median and the range over rounds. Every path's log P(Yes),
log P(No) and yes/no ratio are checked on every pair it ran against an untimed naive pass
over all pairs, within a relative tolerance on P (fp32: 1e-4); ``--misread PATH`` reads
that path's logits one position early, to show the check failing. The last table gives
each path's FLOPs per pair relative to naive at the measured depth and at the 7B model's
(28 text layers, 32 vision blocks), for what the 2-layer ratios do and do not predict
(docs/evaluators.md#throughput).

The default model is a Qwen2.5-VL with the **7B model's widths but 2 text and 2 vision
layers** and random weights, built here offline (about 1.6 B parameters, 6.5 GB in fp32).

    python bench/bench_evaluators.py                                   # 7B widths, CPU
    python bench/bench_evaluators.py --sizes 224 --images 2            # quicker
    python bench/bench_evaluators.py --widths tiny                     # seconds, smoke test
    python bench/bench_evaluators.py --model /ckpt/Qwen2.5-VL-7B-Instruct --device cuda
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from bench.evaluator_workload import (
    DEPTH_7B,
    QUESTIONS,
    SUFFIX,
    build_qwen_7b_widths,
    flops_per_pair,
    make_images,
    shape_of,
)
from evaluators.hf_backend import HFVLMBackend

Arm = Callable[[HFVLMBackend, list, list[str], list[list[int]], bool], torch.Tensor]


def _pair_loop(backend: HFVLMBackend, images: list, texts: list[str], ids: list[list[int]],
               read: Callable[[dict], torch.Tensor]) -> torch.Tensor:
    out = []
    for image, text, yes_no in zip(images, texts, ids, strict=True):
        with torch.inference_mode():
            logits = read(backend.encode([image], [text])).float()
        out.append(torch.log_softmax(logits, -1)[yes_no])
    return torch.stack(out)


def naive(backend: HFVLMBackend, images: list, texts: list[str], ids: list[list[int]],
          misread: bool) -> torch.Tensor:
    """One forward per pair, batch 1, logits of every position."""
    at = -2 if misread else -1
    return _pair_loop(backend, images, texts, ids, lambda x: backend.model(**x).logits[0, at])


def naive_last(backend: HFVLMBackend, images: list, texts: list[str], ids: list[list[int]],
               misread: bool) -> torch.Tensor:
    """One forward per pair, batch 1, only the last position's logits (2 when misreading)."""
    keep = 2 if misread else 1
    return _pair_loop(backend, images, texts, ids,
                      lambda x: backend.model(**x, logits_to_keep=keep).logits[0, 0])


def generate(backend: HFVLMBackend, images: list, texts: list[str], ids: list[list[int]],
             misread: bool) -> torch.Tensor:
    """One generate() per pair, as the reference scripts loop."""
    def read(x: dict) -> torch.Tensor:
        if misread:  # drop the last prompt token: generate then reads one position early
            per_token = ("input_ids", "attention_mask", "mm_token_type_ids", "token_type_ids")
            x = {k: (v[:, :-1] if k in per_token else v) for k, v in x.items()}
        gen = backend.model.generate(**x, max_new_tokens=1, do_sample=False,
                                     output_scores=True, return_dict_in_generate=True)
        return gen.scores[0][0]
    return _pair_loop(backend, images, texts, ids, read)


def batched(backend: HFVLMBackend, images: list, texts: list[str], ids: list[list[int]],
            misread: bool) -> torch.Tensor:
    """Concord's backend (unshared or shared prefix, as the backend is set up)."""
    if misread:  # the question without its last token: each pair read one position early
        texts = [backend.tokenizer.decode(backend.tokenizer(t).input_ids[:-1]) for t in texts]
    lp = backend.next_token_logprobs(images, texts)
    return torch.stack([lp[i, yes_no] for i, yes_no in enumerate(ids)])


PATHS: dict[str, tuple[str, Arm]] = {
    "naive": ("naive (forward, batch 1, all logits)", naive),
    "naive-last": ("naive, last logit only", naive_last),
    "generate": ("reference loop (generate, batch 1)", generate),
    "batched": ("batched, unshared", batched),
    "shared": ("shared image prefix", batched)}
LOOPS = ("naive", "naive-last", "generate")


def disagreement(got: torch.Tensor, ref: torch.Tensor) -> float:
    """The largest relative difference in P(Yes), P(No) and the yes/no ratio: compared as
    log-probabilities, |Δ log P| is the relative difference of P (to first order)."""
    got, ref = got.double(), ref.double()
    log_ratio = lambda lp: lp[:, 0] - torch.logsumexp(lp, 1)  # noqa: E731
    return max(float((got - ref).abs().max()),
               float((log_ratio(got) - log_ratio(ref)).abs().max()))


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
                    help="pairs timed for the per-pair loops (default: one image's 7)")
    ap.add_argument("--batch-size", type=int, default=28, help="pairs per forward")
    ap.add_argument("--paths", default=",".join(PATHS), help="comma-separated subset of "
                                                           + ",".join(PATHS))
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--misread", choices=list(PATHS),
                    help="read this path one position early (the agreement check must fail)")
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


def _timed(fn: Callable[[], torch.Tensor], device: torch.device,
           ) -> tuple[torch.Tensor, float, float]:
    """(result, wall seconds, CPU seconds of this process)."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    sync()
    return result, time.perf_counter() - start, time.process_time() - cpu


def run_size(size: int, args: argparse.Namespace, flat: HFVLMBackend,
             shared: HFVLMBackend) -> dict[str, dict]:
    """Every path at one size, interleaved over rounds: per path its pairs, wall and CPU
    seconds per round, and its largest disagreement with the naive reference."""
    images = [im for im in make_images(args.images, size) for _ in QUESTIONS]
    rendered = [shared.render(q + SUFFIX) for _ in range(args.images) for q in QUESTIONS]
    texts = [t for t, _ in rendered]
    ids = [[shared.first_token_id(c, shared.spaced(c, w)) for w in ("Yes", "No")]
           for _, c in rendered]
    reference = naive(flat, images, texts, ids, False)  # untimed, every pair
    keys = args.paths.split(",")
    runs: dict[str, dict] = {k: {"pairs": 0, "wall": [], "cpu": [], "diff": 0.0} for k in keys}
    for key in keys:  # warm-up: one image's pairs through every path
        PATHS[key][1](shared if key == "shared" else flat, images[:len(QUESTIONS)],
                      texts[:len(QUESTIONS)], ids[:len(QUESTIONS)], False)
    for r in range(args.rounds):
        for key in keys[r % len(keys):] + keys[:r % len(keys)]:
            n = min(args.loop_pairs, len(texts)) if key in LOOPS else len(texts)
            backend = shared if key == "shared" else flat
            got, wall, cpu = _timed(lambda k=key, b=backend, m=n: PATHS[k][1](
                b, images[:m], texts[:m], ids[:m], args.misread == k), backend.model.device)
            run = runs[key]
            run["pairs"] = n
            run["wall"].append(wall)
            run["cpu"].append(cpu)
            run["diff"] = max(run["diff"], disagreement(got, reference[:n]))
            print(f"  {size}px round {r + 1} {key}: {n} pairs in {wall:.1f} s",
                  file=sys.stderr, flush=True)
    runs["_shape"] = {"shape": shape_of(shared, images[0], texts[0])}
    return runs


def _ratio(runs: dict, key: str, base: str, column: str) -> str:
    """Median (min-max) over rounds of key's pairs/s over base's, within each round."""
    if base not in runs:
        return "-"
    ratios = [(runs[key]["pairs"] / a) / (runs[base]["pairs"] / b)
              for a, b in zip(runs[key][column], runs[base][column], strict=True)]
    return (f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
            if len(ratios) > 1 else f"{ratios[0]:.2f}x")


def print_size(size: int, runs: dict, tolerance: float) -> bool:
    """The size's rows of the timing table; whether every path agreed."""
    ok = True
    for key, run in runs.items():
        if key.startswith("_"):
            continue
        rate = run["pairs"] / statistics.median(run["wall"])
        print(f"{size:>5} {PATHS[key][0]:<38} {run['pairs']:>5} {rate:8.3f} "
              f"{_ratio(runs, key, 'naive', 'wall'):>20} "
              f"{_ratio(runs, key, 'naive-last', 'wall'):>20} "
              f"{_ratio(runs, key, 'naive', 'cpu'):>20} {run['diff']:9.1e}")
        ok = ok and run["diff"] <= tolerance
    return ok


def print_flops(sizes: dict[int, dict], keys: list[str]) -> None:
    """FLOPs per pair of each path relative to naive: at the measured depth, and at 7B's."""
    print("\nFLOPs per pair, naive / path (compute-bound prediction of the speed-up):")
    print(f"{'size':>5} {'path':<38} {'2 layers':>9} {'28 layers':>10}")
    for size, runs in sizes.items():
        shape = runs["_shape"]["shape"]
        if shape is None:
            print(f"{size:>5} (not a Qwen2/2.5-VL layout: no FLOP count)")
            continue
        print(f"{size:>5} (prefix {shape.prefix} tokens, question {shape.suffix} tokens, "
              f"{shape.patches} vision patches per image)")
        for key in keys:
            path = "naive" if key == "naive" else "shared" if key == "shared" else "last"
            cut, full = ((flops_per_pair("naive", shape, *depth, len(QUESTIONS))
                          / flops_per_pair(path, shape, *depth, len(QUESTIONS)))
                         for depth in ((2, 2), DEPTH_7B))
            print(f"{size:>5} {PATHS[key][0]:<38} {cut:8.2f}x {full:9.2f}x")


def main() -> int:
    """Build the workload, time the paths interleaved, print the tables, check scores."""
    args = parse_args()
    flat, shared = load_backends(args)
    model = shared.model
    tokens = flat.encode(make_images(1, args.sizes[0]), [shared.render(QUESTIONS[0])[0]])
    print(f"model={shared.model_id} params={sum(p.numel() for p in model.parameters()) / 1e9:.2f}B"
          f" device={model.device} dtype={model.dtype} threads={torch.get_num_threads()} "
          f"images={args.images} questions={len(QUESTIONS)} batch={args.batch_size} "
          f"rounds={args.rounds} prompt tokens at {args.sizes[0]}px="
          f"{tokens['input_ids'].shape[1]}")
    print(f"{'size':>5} {'path':<38} {'pairs':>5} {'pairs/s':>8} {'vs naive':>20} "
          f"{'vs naive-last':>20} {'cpu vs naive':>20} {'max rel':>9}")
    tolerance = 1e-4 if model.dtype == torch.float32 else 2e-2
    ok, sizes = True, {}
    for size in args.sizes:
        sizes[size] = run_size(size, args, flat, shared)
        ok = print_size(size, sizes[size], tolerance) and ok
    print_flops(sizes, args.paths.split(","))
    print(f"\nscores {'agree' if ok else 'DISAGREE'} with the naive pass on every pair "
          f"(relative tolerance on P(Yes), P(No) and the yes/no ratio: {tolerance:g}); "
          f"shared prefix: {shared.share_reason or 'used'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
