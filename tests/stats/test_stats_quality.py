"""Gold items only for rater quality; quality signals, flags and too-fast items."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from concord.stats import (
    QualityThresholds,
    full_report,
    gold_results,
    item_times,
    quality_flags,
    rater_signals,
    split_gold,
    time_summary,
    too_fast_items,
)


def _ratings(seed=0, prompts=8, models=3, raters=3):
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(prompts):
        for m in range(models):
            for r in range(raters):
                for crit in ("SC", "PR"):
                    rows.append({"prompt_id": f"p{p}", "model": f"m{m}", "sample": 0,
                                 "image_id": p * models + m, "rater": f"r{r}",
                                 "criterion": crit, "value": float(rng.choice([0, 0.5, 1])),
                                 "seconds": 10.0})
    return pd.DataFrame(rows)


def _rankings(prompts=8, models=3, raters=2):
    rows = []
    for p in range(prompts):
        for r in range(raters):
            for m in range(models):
                rows.append({"prompt_id": f"p{p}", "rater": f"k{r}", "criterion": "overall",
                             "model": f"m{m}", "image_id": p * models + m,
                             "rank": float(m + 1), "position": (m + r) % models,
                             "seconds": 30.0})
    return pd.DataFrame(rows)


GOLD = pd.DataFrame([
    {"image_id": 0, "unit": "image", "criterion": "SC", "expected": 1.0, "tolerance": 0.0},
    {"image_id": 0, "unit": "image", "criterion": "PR", "expected": 1.0, "tolerance": 0.5},
    {"image_id": 5, "unit": "prompt", "criterion": "overall", "expected": 1.0,
     "tolerance": 0.0},
])


def test_gold_items_are_split_off_ratings_and_rankings():
    ratings, rankings = _ratings(), _rankings()
    split = split_gold(ratings, rankings, GOLD)
    assert set(split.gold_ratings["image_id"]) == {0}
    assert 0 not in set(split.ratings["image_id"])
    assert len(split.ratings) + len(split.gold_ratings) == len(ratings)
    # Image 5 is of prompt p1: its whole ranking set is gold.
    assert set(split.gold_rankings["prompt_id"]) == {"p1"}
    assert "p1" not in set(split.rankings["prompt_id"])
    untouched = split_gold(ratings, rankings, None)
    assert untouched.ratings is ratings and untouched.gold_ratings.empty


def test_gold_results_for_ratings_and_rankings_by_brute_force():
    ratings, rankings = _ratings(), _rankings()
    split = split_gold(ratings, rankings, GOLD)
    got = gold_results(split.gold_ratings, split.gold_rankings, GOLD).set_index(
        ["rater", "unit", "criterion"])
    for r in ratings[ratings["image_id"] == 0].itertuples():
        exp = GOLD[(GOLD["image_id"] == 0) & (GOLD["criterion"] == r.criterion)].iloc[0]
        row = got.loc[(r.rater, "image", r.criterion)]
        assert row["n_gold"] == 1
        assert row["n_correct"] == int(abs(r.value - exp["expected"]) <= exp["tolerance"])
    # Ranking gold: model m2 (image 5) ranked 3rd by everybody, expected 1 ± 0: wrong.
    for rater in ("k0", "k1"):
        row = got.loc[(rater, "prompt", "overall")]
        assert (row["n_gold"], row["n_correct"], row["accuracy"]) == (1, 0, 0.0)
    good = GOLD.assign(expected=[1.0, 1.0, 3.0])
    split = split_gold(ratings, rankings, good)
    again = gold_results(split.gold_ratings, split.gold_rankings, good)
    assert again[again["unit"] == "prompt"]["accuracy"].tolist() == [1.0, 1.0]


def test_gold_does_not_count_in_leaderboard_agreement_or_human_vs_metric():
    ratings, rankings = _ratings(1), _rankings()
    scores = ratings.groupby(["prompt_id", "model", "sample", "image_id"])["value"].mean()
    scores = scores.reset_index().assign(metric="q", judge="", question_id="")
    with_gold = full_report(ratings, rankings, scores, gold=GOLD, n_boot=5, n_perm=5)
    clean = ratings[ratings["image_id"] != 0]
    clean_rankings = rankings[rankings["prompt_id"] != "p1"]
    without = full_report(clean, clean_rankings, scores, n_boot=5, n_perm=5)
    for key in ("human", "agreement", "rankings", "human_vs_metric", "rater_vs_rest"):
        assert with_gold[key] == without[key], key
    meta = with_gold["meta"]
    assert (meta["n_gold_ratings"], meta["n_gold_rankings"]) == (6, 2)
    assert meta["n_ratings"] == len(clean) and meta["n_rankings"] == 7 * 2
    assert {r["unit"] for r in with_gold["raters"]["gold"]} == {"image", "prompt"}
    # Rater behaviour is measured on all their work, gold included.
    quality = {(r["rater"], r["criterion"]): r for r in with_gold["raters"]["quality"]}
    assert quality[("r0", "SC")]["n"] == 8 * 3


def test_signals_flags_and_too_fast_items_with_thresholds():
    ratings = _ratings(2, prompts=12)
    lazy = ratings["rater"] == "r1"
    ratings.loc[lazy, "value"] = 1.0                       # straight-lining
    ratings.loc[lazy, "seconds"] = 0.8                     # and fast
    ratings.loc[(ratings["rater"] == "r2") & (ratings["prompt_id"] == "p0"), "seconds"] = 1.0
    rankings = _rankings(prompts=12)
    rankings.loc[rankings["rater"] == "k0", "seconds"] = 3.0
    limits = QualityThresholds()
    signals = rater_signals(ratings, rankings)
    sc = signals.set_index(["rater", "unit", "criterion"])
    assert sc.loc[("r1", "image", "SC"), "modal_share"] == 1.0
    assert sc.loc[("r1", "image", "SC"), "modal_value"] == 1.0
    # k1 sees position = (model + 1) % 3: its ranks never follow the display order.
    assert sc.loc[("k0", "prompt", "overall"), "display_order_share"] == 1.0
    assert sc.loc[("k1", "prompt", "overall"), "display_order_share"] == 0.0
    items = item_times(ratings, rankings, limits)
    fast = too_fast_items(items)
    assert len(fast[fast["rater"] == "r1"]) == 12 * 3       # per image, not per criterion
    assert len(fast[fast["rater"] == "r2"]) == 3
    assert len(fast[fast["rater"] == "k0"]) == 12 and set(fast["threshold"]) == {2.0, 5.0}
    times = time_summary(items).set_index(["rater", "unit"])
    assert times.loc[("r2", "image"), "too_fast_share"] == pytest.approx(3 / 36)
    flags = quality_flags(signals, time_summary(items), pd.DataFrame(
        [{"rater": "r0", "unit": "image", "criterion": "SC", "n_gold": 4, "n_correct": 2,
          "accuracy": 0.5}]), limits)
    found = {(r.rater, r.flag, r.unit, None if pd.isna(r.criterion) else r.criterion)
             for r in flags.itertuples()}
    assert found == {("r1", "too_fast", "image", None), ("k0", "too_fast", "prompt", None),
                     ("r1", "straight_lining", "image", "SC"),
                     ("r1", "straight_lining", "image", "PR"),
                     ("k0", "straight_lining", "prompt", "overall"),
                     ("r0", "gold_failures", "image", "SC")}
    strict = QualityThresholds.from_settings({"max_modal_share": 1.0, "min_items": 100})
    later = quality_flags(signals, time_summary(items), pd.DataFrame(columns=[
        "rater", "unit", "criterion", "n_gold", "n_correct", "accuracy"]), strict)
    assert later.empty


def test_unknown_times_are_never_too_fast():
    ratings = _ratings(3).assign(seconds=np.nan)
    items = item_times(ratings, None, QualityThresholds())
    assert too_fast_items(items).empty
    assert time_summary(items)["n_timed"].eq(0).all()


@pytest.mark.parametrize(("settings", "message"), [
    ({"max_fast_share": 1.5}, "max_fast_share must be a share in \\[0, 1\\], got 1.5"),
    ({"min_items": 0}, "min_items must be a whole number >= 1, got 0"),
    ({"min_seconds_rating": "fast"}, "min_seconds_rating must be a number, got 'fast'"),
    ({"min_seconds": 2}, "unknown key\\(s\\) \\['min_seconds'\\]"),
])
def test_thresholds_refuse_bad_settings(settings, message):
    with pytest.raises(ValueError, match=message):
        QualityThresholds.from_settings(settings)
    assert QualityThresholds.from_settings(None) == QualityThresholds()
