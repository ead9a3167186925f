"""docs/example-likert.md, command by command: a Likert CSV study to the per-model
correlation table, with the numbers checked against scipy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from concord.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "examples" / "likert"


pytestmark = pytest.mark.both_engines


def test_the_documented_likert_example_runs_and_matches_scipy(database_at, capsys):
    db = str(database_at("likert"))
    assert main(["--db", db, "import-ratings", "--study", "likert-demo", "--format", "csv",
                 str(EXAMPLE / "ratings.csv")]) == 0
    assert "rubric likert-5 (inferred" in capsys.readouterr().out
    assert main(["--db", db, "import-scores", "--study", "likert-demo", "--format", "csv",
                 str(EXAMPLE / "scores.csv")]) == 0
    capsys.readouterr()
    assert main(["--db", db, "stats", "--study", "likert-demo", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    got = {m["model"]: m for m in doc["human_vs_metric_per_model"]["models"]}

    ratings = pd.read_csv(EXAMPLE / "ratings.csv")
    human = ratings.groupby(["prompt_id", "model"])["value"].mean().rename("human")
    both = pd.read_csv(EXAMPLE / "scores.csv").join(human, on=["prompt_id", "model"])
    per_model = {}
    for model, g in both.groupby("model"):
        per_model[model] = sps.spearmanr(g["value"], g["human"]).statistic
        assert got[model]["spearman"] == pytest.approx(per_model[model], abs=1e-12)
        assert got[model]["pearson"] == pytest.approx(
            sps.pearsonr(g["value"], g["human"]).statistic, abs=1e-12)
        assert got[model]["n_images"] == len(g)
    r = np.array(list(per_model.values()))
    doc_text = (Path(__file__).resolve().parents[1] / "docs" / "example-likert.md").read_text()
    # The table printed in the doc is what this data gives.
    line = (f"spearman       {r.mean():.4f}  {np.tanh(np.arctanh(r).mean()):.4f}    "
            f"{np.tanh(r.mean()):.4f}")
    assert line in doc_text
