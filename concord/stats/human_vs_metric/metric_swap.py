"""Within-prompt agreement of a metric with humans, and the same under swaps of two metrics.

Items (images) of one prompt are compared with each other only. Per prompt of K items,
with the signs ``s_ij = sign(v_i − v_j)`` over its item pairs i < j, of the human image
scores (``sh``) and of a metric (``sm``):

* ``kendall_tau_b = Σ sh·sm / √((n0 − n1)(n0 − n2))`` (n0 pairs, n1 / n2 tied by the
  human / the metric; scipy's τ_b);
* ``spearman``: Pearson r of the average ranks, whose deviations from the mean rank are
  ``d_i = ½ Σ_{j≠i} sign(v_i − v_j)``, so ``ρ = Σ d^h d^m / √(Σ (d^h)² Σ (d^m)²)``;
* ``hits``: over the pairs the human orders strictly, those the metric orders the same
  way plus half those it ties (the pair accuracy's numerator).

τ_b and ρ are NaN (left out of the mean over prompts) with fewer than two items or a
constant side.

Swaps: the permutation test of two metrics x and y exchanges x_i and y_i on each item
with probability ½. A pattern is a K-bit number (bit k for the k-th item): ``x'`` takes y
where the bit is set, ``y'`` takes x there, so ``y'`` of a pattern is ``x'`` of its
complement. The sign of a pair under a pattern is one of four per prompt (x or y on each
side), so prompts of at most :data:`TABLE_MAX_ITEMS` items have all 2^K patterns worked
out once, and a permutation only picks a row.
"""

from __future__ import annotations

import numpy as np

from concord.stats.human_vs_metric.correlation import _KENDALL_SORT_MIN as KENDALL_SORT_MIN
from concord.stats.human_vs_metric.correlation import row_ranks, rowwise_kendall

TABLE_MAX_ITEMS = 10
# Pair signs (rows × item pairs) held at once on the draw-by-draw path.
PAIR_CELLS = 2_000_000


def _pairs(k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(k, 1)


def sign_stats(sh: np.ndarray, sm: np.ndarray, k: int) -> dict[str, np.ndarray]:
    """τ_b, ρ and hits from pair signs: ``sh`` ``(prompts, pairs)`` of the human, ``sm``
    ``(prompts, U, pairs)`` of U versions of the metric; each result is ``(prompts, U)``."""
    i, j = _pairs(k)
    incidence = np.zeros((i.size, k), dtype=np.float32)   # d = signs @ incidence
    incidence[np.arange(i.size), i], incidence[np.arange(i.size), j] = 0.5, -0.5
    dh = sh.astype(np.float32) @ incidence                 # prompts × K
    dm = sm.astype(np.float32) @ incidence                 # prompts × U × K
    concord = np.einsum("pua,pa->pu", sm, sh, dtype=np.int32)
    n0 = i.size
    n1 = (sh == 0).sum(axis=1)[:, None]
    n2 = (sm == 0).sum(axis=2)
    decisive = sh != 0
    hits = (np.einsum("pua,pa->pu", (sm == sh[:, None, :]).astype(np.int8), decisive,
                      dtype=np.int32)
            + 0.5 * np.einsum("pua,pa->pu", (sm == 0).astype(np.int8), decisive,
                              dtype=np.int32))
    cross = np.einsum("puk,pk->pu", dm, dh, dtype=np.float64)
    spread = (dh.astype(np.float64) ** 2).sum(axis=1)[:, None] * (
        dm.astype(np.float64) ** 2).sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = concord / np.sqrt((n0 - n1) * (n0 - n2).astype(float))
        rho = cross / np.sqrt(spread)
    bad = (n0 == n1) | (n0 == n2)
    return {"kendall_tau_b": np.where(bad, np.nan, tau),
            "spearman": np.where(bad, np.nan, np.clip(rho, -1, 1)), "hits": hits}


def pair_signs(v: np.ndarray) -> np.ndarray:
    """``sign(v_i − v_j)`` over the pairs i < j of each row of a ``(rows, K)`` array."""
    i, j = _pairs(v.shape[1])
    return np.sign(v[:, i] - v[:, j]).astype(np.int8)


def within_stats(h: np.ndarray, m: np.ndarray) -> dict[str, np.ndarray]:
    """Per row (one prompt, K items as columns): τ_b, ρ and hits."""
    k = h.shape[1]
    if k <= 32:
        out = sign_stats(pair_signs(h), pair_signs(m)[:, None, :], k)
        return {name: v[:, 0] for name, v in out.items()}
    # Many images per prompt (hundreds of models): chunks of rows, ρ from ranks.
    step = max(1, PAIR_CELLS // (k * (k - 1) // 2))
    parts = [_row_stats(h[a:a + step], m[a:a + step]) for a in range(0, len(h), step)]
    return {n: np.concatenate([p[n] for p in parts]) for n in parts[0]}


def decisive_pairs(h: np.ndarray) -> np.ndarray:
    """Per row: item pairs the human orders strictly."""
    return (pair_signs(h) != 0).sum(axis=1).astype(float)


class PatternTable:
    """Within stats of ``x'`` for every swap pattern of prompts with K items each.

    A pair's sign under a pattern is one of its four combinations (x or y on each side),
    chosen by two bits of the pattern. Every sum over pairs (τ's numerator, the metric's
    ties, the hits, ρ's cross term Σ d^h d^m = Σ_pairs ½(d^h_i − d^h_j)·s) is therefore
    ``G @ E``: G (prompts × 4·pairs) holds each pair's four possible terms and E
    (4·pairs × patterns) picks one per pair and pattern; each item's rank deviation d^m_k
    is such a sum too (for Σ (d^m)²).
    """

    def __init__(self, h: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        n, k = h.shape
        i, j = _pairs(k)
        a, size = i.size, 2**k
        # Code 2·[i from y] + [j from y] of each pair and its four signs per prompt.
        combos = np.stack([np.sign(u[:, i] - v[:, j]) for u in (x, y) for v in (x, y)],
                          axis=2)                                  # prompts × pairs × 4
        bits = (np.arange(size)[:, None] >> np.arange(k)) & 1      # patterns × K
        code = 2 * bits[:, i] + bits[:, j]                          # patterns × pairs
        pick = np.zeros((a * 4, size), dtype=np.float32)
        pick[np.arange(a)[None, :] * 4 + code, np.arange(size)[:, None]] = 1.0
        sh = np.sign(h[:, i] - h[:, j])
        dh = np.zeros((n, k))
        np.add.at(dh.T, i, sh.T / 2)
        np.add.at(dh.T, j, -sh.T / 2)

        def total(terms: np.ndarray) -> np.ndarray:
            # Every term is a multiple of 1/4 and every sum below 2^20 in size, so float32
            # sums are exact (and twice as fast as float64).
            flat = terms.reshape(n, a * 4).astype(np.float32)
            return (flat @ pick).astype(float)                      # prompts × patterns

        concord = total(sh[:, :, None] * combos)
        ties = total(combos == 0)
        decisive = (sh != 0)[:, :, None]
        hits = total(decisive * ((combos == sh[:, :, None]) + 0.5 * (combos == 0)))
        cross = total(((dh[:, i] - dh[:, j]) / 2)[:, :, None] * combos)
        spread = np.zeros((n, size))
        for item in range(k):
            sign = np.where(i == item, 0.5, 0.0) - np.where(j == item, 0.5, 0.0)
            spread += total(sign[None, :, None] * combos) ** 2
        tied_h = (sh == 0).sum(axis=1)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = concord / np.sqrt((a - tied_h) * (a - ties))
            rho = cross / np.sqrt((dh**2).sum(axis=1)[:, None] * spread)
        bad = (tied_h == a) | (ties == a)
        values = {"kendall_tau_b": np.where(bad, np.nan, tau),
                  "spearman": np.where(bad, np.nan, np.clip(rho, -1, 1)), "hits": hits}
        # x' of a pattern and y' of it (x' of the complement) side by side as one complex
        # number, one row of patterns per prompt: a permutation is one gather per
        # statistic within each prompt's row (a row stays in cache; a flat gather over
        # the whole table is several times slower).
        self.table = {name: v + 1j * v[:, ::-1] for name, v in values.items()}

    def pick(self, pattern: np.ndarray) -> tuple[dict, dict]:
        """Stats of ``x'`` and ``y'`` for ``pattern`` ``(prompts, R)``: each ``(prompts, R)``."""
        at = pattern.astype(np.intp)
        both = {s: np.take_along_axis(v, at, axis=1) for s, v in self.table.items()}
        return ({s: v.real for s, v in both.items()}, {s: v.imag for s, v in both.items()})


def swapped_within(h: np.ndarray, x: np.ndarray, y: np.ndarray,
                   bits: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Within stats of ``x'`` and ``y'`` for drawn swaps ``bits`` ``(prompts, R, K)``:
    each ``(prompts, R)`` (prompts too large for a :class:`PatternTable`). Rows (prompt ×
    draw) go in chunks of at most :data:`PAIR_CELLS` pair signs; ρ comes from ranks."""
    n_prompts, n_perm, k = bits.shape
    step = max(1, PAIR_CELLS // max(1, k * (k - 1) // 2))
    prompt = np.repeat(np.arange(n_prompts), n_perm)
    out = []
    for first, second in ((y, x), (x, y)):
        values = np.where(bits, first[:, None, :], second[:, None, :]).reshape(-1, k)
        parts = [_row_stats(h[prompt[a:a + step]], values[a:a + step])
                 for a in range(0, len(values), step)]
        out.append({n: np.concatenate([p[n] for p in parts]).reshape(n_prompts, n_perm)
                    for n in parts[0]})
    return out[0], out[1]


def _tied_pairs(v: np.ndarray) -> np.ndarray:
    """Per row: pairs of equal values (Σ t(t − 1)/2 over tie groups), by sorting."""
    ordered = np.sort(v, axis=1)
    same = ordered[:, 1:] == ordered[:, :-1]
    # Position of the last break before each place: a run's k-th equal value has k earlier.
    where = np.where(same, 0, np.arange(1, v.shape[1]))
    last = np.maximum.accumulate(where, axis=1)
    return np.where(same, np.arange(1, v.shape[1]) - last, 0).sum(axis=1)


def _row_stats(h: np.ndarray, m: np.ndarray) -> dict[str, np.ndarray]:
    """τ_b, ρ and hits per row of the human's and the metric's values (rows × K). From
    ``KENDALL_SORT_MIN`` items on, τ_b comes from scipy's O(K log K) per row
    (``rowwise_kendall``) and hits from ``S = τ_b √((n0 − n1)(n0 − n2))``:
    ``hits = (S + decisive) / 2`` (a concordant pair counts 1, a metric tie ½, since
    decisive = concordant + discordant + metric ties)."""
    k = m.shape[1]
    n0 = k * (k - 1) // 2
    h_dev = row_ranks(h) - (k + 1) / 2
    if k >= KENDALL_SORT_MIN:
        n1, n2 = _tied_pairs(h), _tied_pairs(m)
        tau_raw = rowwise_kendall(h, m)
        concord = np.nan_to_num(tau_raw) * np.sqrt((n0 - n1) * (n0 - n2).astype(float))
        hits = (concord + (n0 - n1)) / 2
    else:
        sh, sm = pair_signs(h), pair_signs(m)
        n1, n2 = (sh == 0).sum(axis=1), (sm == 0).sum(axis=1)
        concord = (sh.astype(np.int32) * sm).sum(axis=1)
        decisive = sh != 0
        hits = (decisive & (sm == sh)).sum(axis=1) + 0.5 * (decisive & (sm == 0)).sum(axis=1)
    m_dev = row_ranks(m) - (m.shape[1] + 1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = concord / np.sqrt((n0 - n1) * (n0 - n2).astype(float))
        rho = (h_dev * m_dev).sum(axis=1) / np.sqrt((h_dev**2).sum(axis=1)
                                                    * (m_dev**2).sum(axis=1))
    bad = (n0 == n1) | (n0 == n2)
    return {"kendall_tau_b": np.where(bad, np.nan, tau),
            "spearman": np.where(bad, np.nan, np.clip(rho, -1, 1)), "hits": hits}
