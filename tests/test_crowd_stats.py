"""A crowd study through the documented CLI: many raters with a few ratings each, on a scale
and criterion names of its own (1..5, ``clarity``/``fidelity``), imported with
``import-ratings --format csv`` and summarised by ``stats --json``.

The agreement and leaderboard numbers are checked against plain references computed from
the CSV (every pair of raters through scipy; the mean of rater means by groupby), so the
paths built for crowds (pairs only of raters who share items, sums over filled cells) are
tested where a user meets them.
"""

from __future__ import annotations

import csv
import itertools
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.cli import main

pytestmark = pytest.mark.both_engines

RATERS, PROMPTS, MODELS = 60, 30, ("alpha", "beta", "gamma")


def _crowd_csv(path) -> pd.DataFrame:
    rng = np.random.default_rng(12)
    rows = []
    for p in range(PROMPTS):
        for m, model in enumerate(MODELS):
            # Each image by 3 raters; the first five raters also rate every image, so some
            # pairs share many images and the mean pairwise Spearman is defined.
            for r in {*rng.choice(RATERS, 3, replace=False).tolist(), *range(5)}:
                for crit in ("clarity", "fidelity"):
                    value = int(np.clip(round(2 + m + rng.normal(0, 1)), 1, 5))
                    rows.append({"prompt_id": f"q{p:02d}", "model": model,
                                 "rater": f"worker-{r:03d}", "criterion": crit,
                                 "value": value})
    frame = pd.DataFrame(rows)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(frame.columns))
        writer.writeheader()
        writer.writerows(rows)
    return frame


def _pairwise_spearman(frame: pd.DataFrame) -> float:
    matrix = frame.pivot_table(index="rater", columns=["prompt_id", "model"], values="value")
    data = matrix.to_numpy(dtype=float)
    rhos = []
    for a, b in itertools.combinations(range(len(data)), 2):
        both = ~np.isnan(data[a]) & ~np.isnan(data[b])
        if both.sum() >= 3 and np.ptp(data[a, both]) > 0 and np.ptp(data[b, both]) > 0:
            rhos.append(stats.spearmanr(data[a, both], data[b, both]).statistic)
    return float(np.mean(rhos))


def test_a_crowd_study_imported_from_csv_gets_the_reference_numbers(database_at, tmp_path,
                                                                    capsys):
    frame = _crowd_csv(tmp_path / "crowd.csv")
    db = str(database_at("crowd"))
    assert main(["--db", db, "import-ratings", "--study", "crowd", "--format", "csv",
                 "--criteria", "clarity=1..5 fidelity=1..5", str(tmp_path / "crowd.csv")]) == 0
    capsys.readouterr()
    assert main(["--db", db, "stats", "--study", "crowd", "--json", "--n-boot", "50",
                 "--n-perm", "20"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meta"]["n_raters"] == frame["rater"].nunique()
    study = {row["criterion"]: row for row in doc["agreement"]["study"]}
    for crit, part in frame.groupby("criterion"):
        assert study[crit]["n_raters"] == part["rater"].nunique()
        assert study[crit]["n_ratings"] == len(part)
        assert study[crit]["mean_spearman"] == pytest.approx(_pairwise_spearman(part),
                                                             abs=1e-12)
    board = {(r["model"], r["criterion"]): r for r in doc["human"]}
    means = frame.groupby(["model", "criterion", "rater"])["value"].mean()
    for (model, crit), expected in means.groupby(level=["model", "criterion"]).mean().items():
        row = board[(model, crit)]
        assert row["mean_rater_means"] == pytest.approx(expected, abs=1e-12)
        assert row["mean_rater_means_ci_boot_low"] <= expected
        assert expected <= row["mean_rater_means_ci_boot_high"]
