"""The manifest's ``pairs`` section and gold pairs (pairwise A/B protocol).

``protocol: pair`` asks pairs only; a ``pairs:`` section adds pairs to a study of any
protocol (``both``, ``rank``, ``score``). Keys (docs/manifest.md):

- ``enabled`` (default true when the section is there; protocol ``pair`` needs it),
- ``pairs_per_prompt``: ``all`` (default, every pair of models) or a whole number from 1
  to C(M, 2): a balanced incomplete design (:mod:`concord.pair_design`),
- ``seed``: key of that design's tie-breaking and of each rater's left/right placement,
- ``raters_per_pair``: k per pair (default ``raters_per_item``),
- ``sample``: which sample of each model is shown (default 0);
- the score conventions of the report (arena defaults): ``bt_prior``, ``elo_scale``,
  ``elo_base``, ``elo_initial``, ``bootstrap`` (kept as the study setting
  ``pair_scores``, which also applies to the Bradley–Terry fit of rankings).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from math import comb
from typing import Any

from concord.errors import Problem
from concord.importers.safe_load import (
    INT64_MAX,
    INT64_MIN,
    MAX_RATERS_PER_ITEM,
    MAX_SAMPLE,
    shown,
    whole_number,
    whole_number_problem,
)
from concord.plan import GoldPairSpec

SCORE_KEYS = ("bt_prior", "elo_scale", "elo_base", "elo_initial", "bootstrap")
PAIR_KEYS = {"enabled", "pairs_per_prompt", "seed", "raters_per_pair", "sample", *SCORE_KEYS}
# In a gold file, this criterion marks a gold pair: ``model`` is the better image,
# ``expected`` names the model of the image it must beat.
PAIR_GOLD = "pair"
Bad = Callable[[str, str], None]


@dataclass(slots=True)
class PairSettings:
    """The parsed ``pairs`` section; ``raters_per_pair`` None = ``raters_per_item``."""

    enabled: bool = False
    pairs_per_prompt: int | str = "all"
    seed: int = 0
    raters_per_pair: int | None = None
    sample: int = 0
    scores: dict[str, Any] = field(default_factory=dict)  # the report's score conventions

    def settings(self, raters_per_item: int) -> dict[str, Any] | None:
        """What the study settings record (None without pairs)."""
        if not self.enabled:
            return None
        return {"pairs_per_prompt": self.pairs_per_prompt, "seed": self.seed,
                "raters_per_pair": self.raters_per_pair or raters_per_item,
                "sample": self.sample}


def _number(section: dict, key: str, default: int, bad: Bad, low: int, high: int) -> int:
    value = section.get(key, default)
    problem = whole_number_problem(value, low, high)
    if problem is not None:
        bad(f"pairs.{key}", problem)
        return default
    return value


def parse_pairs(value: Any, protocol: Any, bad: Bad) -> PairSettings:
    """The ``pairs`` section of a manifest; every problem goes to ``bad(key, message)``."""
    out = PairSettings(enabled=protocol == "pair")
    if value is None:
        return out
    if not isinstance(value, dict):
        bad("pairs", f"expected a mapping, got {value!r}")
        return out
    for key in sorted(set(value) - PAIR_KEYS):
        bad(f"pairs.{key}", f"unknown key (known: {', '.join(sorted(PAIR_KEYS))})")
    enabled = value.get("enabled", True)
    if not isinstance(enabled, bool):
        bad("pairs.enabled", f"expected true or false, got {enabled!r}")
    elif not enabled and protocol == "pair":
        bad("pairs.enabled", "protocol pair always asks pairs; remove enabled: false")
    else:
        out.enabled = enabled
    per_prompt = value.get("pairs_per_prompt", "all")
    if per_prompt != "all" and whole_number_problem(per_prompt, 1, INT64_MAX) is not None:
        bad("pairs.pairs_per_prompt", f"expected all or a whole number from 1 to C(M, 2) "
                                      f"(M models), got {shown(per_prompt)}")
    else:
        out.pairs_per_prompt = per_prompt
    out.seed = _number(value, "seed", 0, bad, INT64_MIN, INT64_MAX)
    if "raters_per_pair" in value:
        out.raters_per_pair = _number(value, "raters_per_pair", 1, bad, 1, MAX_RATERS_PER_ITEM)
    out.sample = _number(value, "sample", 0, bad, 0, MAX_SAMPLE)
    out.scores = _scores(value, bad)
    return out


def _scores(section: dict, bad: Bad) -> dict[str, Any]:
    """The score conventions given, checked as the report takes them."""
    from concord.stats.report.pair_sections import PairOptions

    given = {k: section[k] for k in SCORE_KEYS if k in section}
    names = {"bt_prior": "bt_prior", "elo_scale": "scale", "elo_base": "odds",
             "elo_initial": "initial", "bootstrap": "bootstrap"}
    try:
        PairOptions(**{names[k]: v for k, v in given.items()})
    except (ValueError, TypeError) as exc:
        bad("pairs", f"{exc} ({', '.join(f'{k}: {shown(v)}' for k, v in given.items())})")
        return {}
    return given


def check_pairs(pairs: PairSettings, models: list[str], label: str) -> list[Problem]:
    """Pairs need two models; ``pairs_per_prompt`` at most C(M, 2)."""
    if not pairs.enabled:
        return []
    if len(models) < 2:
        return [Problem(label, f"pairs need at least 2 models, the study has {len(models)}"
                        + (f" ({models[0]})" if models else ""), field="pairs")]
    most = comb(len(models), 2)
    if isinstance(pairs.pairs_per_prompt, int) and pairs.pairs_per_prompt > most:
        return [Problem(label, f"{pairs.pairs_per_prompt} is more than the {most} pairs of "
                               f"{len(models)} models per prompt (use 1 to {most}, or all)",
                        field="pairs.pairs_per_prompt")]
    return []


def add_gold_pair(row: dict[str, Any], models: list[str], pairs: PairSettings, bad: Bad,
                  into: list[GoldPairSpec]) -> None:
    """A gold row with criterion ``pair`` (``model`` beats ``expected``, a model name),
    checked and added to ``into``."""
    better, worse = str(row["model"]), str(row["expected"] or "").strip()
    if not pairs.enabled:
        bad("criterion", "a gold pair ('pair') needs protocol pair or a pairs section")
        return
    if worse not in models:
        bad("expected", f"a gold pair names the model of the worse image in expected; "
                        f"unknown model {shown(row['expected'])}")
        return
    if worse == better:
        bad("expected", f"a gold pair needs two different models, got {better!r} twice")
        return
    if str(row.get("tolerance") or "0").strip() not in ("0", "0.0"):
        bad("tolerance", "a gold pair has no tolerance (leave it empty)")
        return
    try:
        sample = whole_number(row.get("sample") or "0", 0, MAX_SAMPLE)
    except ValueError as exc:
        bad("sample", str(exc))
        return
    key = str(row["prompt_id"])
    if any(g.prompt_key == key and {g.better, g.worse} == {better, worse} and g.sample == sample
           for g in into):
        bad("model", f"prompt {key!r} already has a gold pair of {better} and {worse}")
        return
    into.append(GoldPairSpec(key, better, worse, sample))
