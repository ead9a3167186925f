"""Which model pairs each prompt asks about: a balanced (incomplete) design, seeded.

With ``M`` models a prompt has ``C(M, 2)`` pairs. Asking all of them (``per_prompt=None``)
is the complete design. Asking ``r`` of them is an incomplete design, chosen greedily,
prompt after prompt in the study's order: each pick is an unasked pair of that prompt
whose model pair has been scheduled least often so far (over all prompts); ties go to the
pair whose models appear least in this prompt, then least in the study, then to a keyed
hash of (seed, prompt, pair). Because every pick takes a least-scheduled pair, the counts
of the model pairs never differ by more than one when every prompt has every model's
image (a count at level ``c`` only rises to ``c + 1`` while others are still at ``c``).

The design is incremental: pairs already scheduled (``existing``) are kept and counted, so
importing again schedules only what new prompts (or a larger ``per_prompt``) need. Pure:
no I/O; ``concord.store.pairs`` applies it.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections import Counter
from collections.abc import Mapping, Sequence

ModelPair = tuple[str, str]


def all_pairs(models: Sequence[str]) -> list[ModelPair]:
    """Every unordered pair of ``models``, each as (first, second) in the given order."""
    return list(itertools.combinations(models, 2))


def _tiebreak(seed: int, prompt: str, pair: ModelPair) -> bytes:
    text = "\x1f".join((prompt, *pair)).encode()
    return hashlib.blake2b(text, key=str(seed).encode()[:64], digest_size=8).digest()


def schedule(
    prompts: Sequence[tuple[str, Sequence[str]]], *, per_prompt: int | None, seed: int,
    existing: Mapping[str, Sequence[ModelPair]] | None = None,
    excluded: Mapping[str, Sequence[ModelPair]] | None = None,
) -> dict[str, list[ModelPair]]:
    """The pairs to add, per prompt key.

    Args:
        prompts: ``(prompt key, models with an image for it)`` in study order; the models
            in the study's model order (pairs are named in that order).
        per_prompt: Pairs per prompt, or None for all of them.
        seed: Key of the tie-breaking hash (recorded with the study).
        existing: Pairs already scheduled per prompt (counted, never asked twice).
        excluded: Pairs a prompt must not get (its gold pairs: they are asked anyway).

    Returns:
        ``{prompt key: [new pairs]}`` (prompts that need none are left out).
    """
    existing = existing or {}
    excluded = excluded or {}
    counts: Counter[ModelPair] = Counter()
    totals: Counter[str] = Counter()
    for pairs in existing.values():
        for pair in pairs:
            counts[_key(pair)] += 1
            totals.update(pair)
    out: dict[str, list[ModelPair]] = {}
    for prompt, models in prompts:
        have = list(existing.get(prompt, ()))
        blocked = {_key(p) for p in (*have, *excluded.get(prompt, ()))}
        options = [p for p in all_pairs(models) if _key(p) not in blocked]
        need = len(options) if per_prompt is None else min(per_prompt - len(have),
                                                            len(options))
        chosen = _pick(prompt, options, need, have, counts, totals, seed)
        if chosen:
            out[prompt] = chosen
    return out


def _key(pair: ModelPair) -> ModelPair:
    """The same key for (a, b) and (b, a)."""
    return (pair[0], pair[1]) if pair[0] <= pair[1] else (pair[1], pair[0])


def _pick(prompt: str, options: list[ModelPair], need: int, have: list[ModelPair],
          counts: Counter[ModelPair], totals: Counter[str], seed: int) -> list[ModelPair]:
    """Greedy choice of ``need`` options (see the module docstring); updates the counts.

    Each pick is the option of least ``rank`` (below). A pick only raises the ranks of
    the options that share a model with it, so the options wait in a heap under the rank
    they had when last looked at: a popped option whose rank has not changed since is the
    least of all (the others' ranks can only have grown). Asking every option again per
    pick was quadratic in the pairs (131 s for 100 models × 3 prompts, all pairs). When
    every option is asked (``pairs_per_prompt: all``) there is nothing to choose: they are
    taken in model order.
    """
    if need <= 0:
        return []
    if need >= len(options):  # every option: the complete design needs no choosing
        for pair in options:
            counts[_key(pair)] += 1
            totals.update(pair)
        return list(options)
    here: Counter[str] = Counter(m for pair in have for m in pair)
    hashes = {p: _tiebreak(seed, prompt, _key(p)) for p in options}

    def rank(p: ModelPair) -> tuple:
        return (counts[_key(p)], max(here[p[0]], here[p[1]]), here[p[0]] + here[p[1]],
                totals[p[0]] + totals[p[1]], hashes[p])

    heap = [(rank(p), i) for i, p in enumerate(options)]
    heapq.heapify(heap)
    chosen: list[ModelPair] = []
    while len(chosen) < need:
        was, i = heapq.heappop(heap)
        best = options[i]
        now = rank(best)
        if now != was:
            heapq.heappush(heap, (now, i))
            continue
        chosen.append(best)
        counts[_key(best)] += 1
        here.update(best)
        totals.update(best)
    return chosen
