"""Human model scores: the ImagenHub overall score, mean ± population std, bootstrap CI."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from concord.stats import bootstrap_means, model_scores, overall_scores
from concord.stats._resample import bootstrap_indices


def _frame(rows):
    return pd.DataFrame(rows, columns=["prompt_id", "model", "rater", "criterion", "value"])


def test_overall_is_geometric_mean_per_rater_and_image():
    df = _frame([("p1", "m", "a", "SC", 1.0), ("p1", "m", "a", "PR", 0.5),
                 ("p1", "m", "b", "SC", 0.5), ("p1", "m", "b", "PR", 0.5),
                 ("p2", "m", "a", "SC", 0.0), ("p2", "m", "a", "PR", 1.0)])
    out = overall_scores(df).sort_values(["prompt_id", "rater"])
    assert out["criterion"].unique().tolist() == ["O"]
    assert out["value"].tolist() == pytest.approx([math.sqrt(0.5), 0.5, 0.0])


def test_overall_skips_images_missing_a_criterion_and_supports_other_names():
    df = _frame([("p1", "m", "a", "A", 0.25), ("p1", "m", "a", "B", 1.0),
                 ("p2", "m", "a", "A", 1.0)])
    out = overall_scores(df, criteria=("A", "B"), output="G")
    assert out[["prompt_id", "criterion"]].values.tolist() == [["p1", "G"]]
    assert out["value"].iloc[0] == pytest.approx(0.5)
    linear = overall_scores(df, criteria=("A", "B"), weights=(0.7, 0.3))
    assert linear["value"].iloc[0] == pytest.approx(0.7 * 0.25 + 0.3 * 1.0)


def test_overall_rejects_duplicates_and_negative_values():
    dup = _frame([("p1", "m", "a", "SC", 1.0), ("p1", "m", "a", "SC", 0.5),
                  ("p1", "m", "a", "PR", 1.0)])
    with pytest.raises(ValueError, match="twice on 'SC'"):
        overall_scores(dup)
    neg = _frame([("p1", "m", "a", "SC", -1.0), ("p1", "m", "a", "PR", 1.0)])
    with pytest.raises(ValueError, match="negative value -1"):
        overall_scores(neg)


def _reference_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Independent ImagenHub rule: per-rater means, then mean and np.std (ddof 0)."""
    per_rater = df.groupby(["model", "criterion", "rater"])["value"].mean()
    grouped = per_rater.groupby(level=["model", "criterion"])
    return pd.DataFrame({"mean": grouped.mean(), "std": grouped.agg(lambda s: np.std(s.values)),
                         "n_raters": grouped.size()}).reset_index()


@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_model_scores_match_independent_computation(missing, make_ratings):
    df = make_ratings(3, prompts=15, raters=4, missing=missing)
    ours = model_scores(df, n_boot=50)
    ref = _reference_scores(df)
    merged = ours.merge(ref, on=["model", "criterion"], suffixes=("", "_ref"))
    images = df.groupby(["model", "criterion", "prompt_id"])["value"].mean()
    by_images = images.groupby(level=["model", "criterion"]).mean().rename("img").reset_index()
    check_images = ours.merge(by_images, on=["model", "criterion"])
    np.testing.assert_allclose(check_images["mean_image_means"], check_images["img"], rtol=0,
                               atol=1e-12)
    assert len(merged) == len(ref) == len(ours)
    np.testing.assert_allclose(merged["mean_rater_means"], merged["mean"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(merged["std_rater_means"], merged["std"], rtol=0, atol=1e-12)
    assert (merged["n_raters"] == merged["n_raters_ref"]).all()
    counts = df.groupby(["model", "criterion"]).agg(n_prompts=("prompt_id", "nunique"),
                                                    n_ratings=("value", "size")).reset_index()
    check = ours.merge(counts, on=["model", "criterion"], suffixes=("", "_ref"))
    assert (check["n_prompts"] == check["n_prompts_ref"]).all()
    assert (check["n_ratings"] == check["n_ratings_ref"]).all()
    assert (check["n_images"] == check["n_prompts_ref"]).all()  # one sample per prompt


def _slow_bootstrap(df: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """Python loop over resamples: rebuild each resampled frame and recompute the means."""
    prompts = np.array(sorted(df["prompt_id"].unique()))
    idx = bootstrap_indices(len(prompts), n_boot, seed)
    by_prompt = dict(list(df.groupby("prompt_id")))
    out = []
    for b in range(n_boot):
        sample = pd.concat([by_prompt[p] for p in prompts[idx[b]]], ignore_index=True)
        per_rater = sample.groupby(["model", "criterion", "rater"])["value"].mean()
        out.append(per_rater.groupby(level=["model", "criterion"]).mean())
    return pd.DataFrame(out).reset_index(drop=True)


@pytest.mark.parametrize("missing", [0.0, 0.25, "one model"])
def test_vectorised_bootstrap_equals_slow_loop(make_ratings, missing):
    # missing=0 takes the balanced-design shortcut, 0.25 the per-rater path, and
    # "one model" mixes both (only model m1 lacks ratings).
    if missing == "one model":
        df = make_ratings(5, prompts=8, models=3, raters=3)
        df = df.drop(index=df.index[(df["model"] == "m1") & (df["prompt_id"] < "p03")
                                    & (df["rater"] == "r0")])
    else:
        df = make_ratings(5, prompts=8, models=3, raters=3, missing=missing)
    groups, point, samples = bootstrap_means(df, n_boot=30, seed=11)
    slow = _slow_bootstrap(df, 30, 11)
    for g, key in enumerate(groups.itertuples(index=False)):
        column = slow.get((key.model, key.criterion))
        expected = column.to_numpy(dtype=float) if column is not None else np.full(30, np.nan)
        np.testing.assert_allclose(samples[:, g], expected, rtol=0, atol=1e-12)
    ref = _reference_scores(df).set_index(["model", "criterion"])["mean"]
    np.testing.assert_allclose(point, ref.loc[list(map(tuple, groups.values))], atol=1e-12)


def _crowd_ratings(seed: int, raters: int = 40, prompts: int = 12) -> pd.DataFrame:
    """A crowd study: each image rated by 3 of many raters, a rater rating a few images."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(prompts):
        for m in range(3):
            for r in rng.choice(raters, 3, replace=False):
                rows.append((f"p{p:02d}", f"m{m}", f"r{r:02d}", "SC",
                             float(rng.choice([0, 0.5, 1]))))
    # One balanced group beside them: two raters rate every prompt of model "full" once.
    rows += [(f"p{p:02d}", "full", r, "SC", float(rng.choice([0, 1])))
             for p in range(prompts) for r in ("ra", "rb")]
    return _frame(rows)


@pytest.mark.parametrize("sparse_share", [0.0, 1.0])  # dense products; sparse products
@pytest.mark.parametrize("block", [10**9, 12 * 7])  # one block; a few columns a block
def test_crowd_bootstrap_in_column_blocks_equals_slow_loop(monkeypatch, block, sparse_share):
    """Many raters with a few ratings each: resampled rater means are built a block of
    columns at a time (bounded memory), from sparse or dense sums, and still equal the
    resample-by-resample loop."""
    import concord.stats.rater_means as rater_means

    monkeypatch.setattr(rater_means, "BLOCK_CELLS", block)
    monkeypatch.setattr(rater_means, "SPARSE_SHARE", sparse_share)
    df = _crowd_ratings(3)
    groups, point, samples = bootstrap_means(df, n_boot=25, seed=2)
    slow = _slow_bootstrap(df, 25, 2)
    for g, key in enumerate(groups.itertuples(index=False)):
        np.testing.assert_allclose(samples[:, g], slow[(key.model, key.criterion)].to_numpy(
            dtype=float), rtol=0, atol=1e-12)
    ref = _reference_scores(df).set_index(["model", "criterion"])["mean"]
    np.testing.assert_allclose(point, ref.loc[list(map(tuple, groups.values))], atol=1e-12)


def test_resampling_contract_is_default_rng_integers():
    expected = np.random.default_rng(7).integers(0, 9, size=(5, 9))
    np.testing.assert_array_equal(bootstrap_indices(9, 5, 7), expected)


def test_bootstrap_is_seeded_and_ci_brackets_the_estimate(make_ratings):
    df = make_ratings(2, prompts=30)
    a = model_scores(df, n_boot=200, seed=4)
    b = model_scores(df, n_boot=200, seed=4)
    c = model_scores(df, n_boot=200, seed=5)
    pd.testing.assert_frame_equal(a, b)
    for score in ("mean_rater_means", "mean_image_means"):
        low, high = a[f"{score}_ci_boot_low"], a[f"{score}_ci_boot_high"]
        assert not np.allclose(low, c[f"{score}_ci_boot_low"])
        assert ((low <= a[score]) & (a[score] <= high)).all()
        assert (high - low > 0).all()


def test_wider_ci_level_gives_wider_interval(make_ratings):
    df = make_ratings(8, prompts=25)
    narrow = model_scores(df, n_boot=300, ci=0.5)
    wide = model_scores(df, n_boot=300, ci=0.99)
    low, high = "mean_rater_means_ci_boot_low", "mean_rater_means_ci_boot_high"
    assert ((wide[high] - wide[low]) > (narrow[high] - narrow[low])).all()


def test_model_scores_doctest_numbers():
    df = _frame([("p1", "m", "a", "SC", 1.0), ("p2", "m", "a", "SC", 0.5),
                 ("p1", "m", "b", "SC", 0.5), ("p2", "m", "b", "SC", 0.5)])
    row = model_scores(df, n_boot=10).iloc[0]
    # rater a: 0.75, rater b: 0.5 → mean 0.625, population std 0.125
    assert (row["mean_rater_means"], row["std_rater_means"], row["n_raters"]) == (
        0.625, 0.125, 2)


def test_model_scores_rejects_bad_arguments(ratings):
    df = ratings
    with pytest.raises(ValueError, match="ci must be a number strictly between 0 and 1, got 95"):
        model_scores(df, ci=95)
    with pytest.raises(ValueError, match="n_boot must be an integer >= 1, got 0"):
        model_scores(df, n_boot=0)
    with pytest.raises(ValueError, match="non-numeric value 'good'"):
        model_scores(df.assign(value=["good"] * len(df)))


@pytest.mark.parametrize("raters", [2, 5])
def test_mean_of_image_means_and_its_ci_equal_a_slow_loop(make_ratings, raters):
    df = make_ratings(9, prompts=10, models=3, raters=raters, missing=0.3)
    n_boot, seed = 25, 3
    ours = model_scores(df, n_boot=n_boot, seed=seed, ci=0.9).set_index(
        ["model", "criterion"])
    prompts = np.array(sorted(df["prompt_id"].unique()))
    idx = bootstrap_indices(len(prompts), n_boot, seed)
    by_prompt = dict(list(df.groupby("prompt_id")))
    samples = []
    for b in range(n_boot):
        # A prompt drawn twice contributes its images twice.
        parts = [by_prompt[p].assign(copy=k) for k, p in enumerate(prompts[idx[b]])]
        sample = pd.concat(parts, ignore_index=True)
        images = sample.groupby(["model", "criterion", "copy", "prompt_id"])["value"].mean()
        samples.append(images.groupby(level=["model", "criterion"]).mean())
    slow = pd.DataFrame(samples)
    for key, row in ours.iterrows():
        images = df[(df["model"] == key[0]) & (df["criterion"] == key[1])].groupby(
            "prompt_id")["value"].mean()
        assert row["mean_image_means"] == pytest.approx(images.mean(), abs=1e-12)
        low, high = np.nanquantile(slow[key].to_numpy(dtype=float), [0.05, 0.95])
        assert row["mean_image_means_ci_boot_low"] == pytest.approx(low, abs=1e-12)
        assert row["mean_image_means_ci_boot_high"] == pytest.approx(high, abs=1e-12)
    # With missing ratings the two model scores differ somewhere.
    assert not np.allclose(ours["mean_image_means"], ours["mean_rater_means"])
