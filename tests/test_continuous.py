"""Continuous criteria (a 0–100 slider in 0.1 steps, or any real number in a range): in
rubric files, in --criteria, in imports and in the rating service."""

from __future__ import annotations

import numpy as np
import pytest

from concord.cli import main
from concord.rubrics import RubricError
from concord.rubrics.copies import from_text
from concord.rubrics.inline import InlineScaleError, inline_rubric, parse_criteria
from concord.services import rubric_choice
from concord.services.imports.ratings import import_ratings
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.foundation_helpers import snapshot

SLIDER = """id: slider
title: Slider
task: rating on a slider
source: {title: ours}
criteria:
  - key: quality
    name: Quality
    definition: How good the image is
    aliases: [q]
    continuous: {min: 0, max: 100, step: 0.1, min_label: awful, max_label: perfect}
  - key: realism
    name: Realism
    definition: How real it looks
    continuous: {min: 0, max: 1}
"""


pytestmark = pytest.mark.both_engines


def test_a_rubric_file_with_continuous_criteria():
    rubric = from_text(SLIDER, "slider")
    quality, realism = rubric.criteria
    assert quality.continuous.step == 0.1 and quality.continuous.low_label == "awful"
    assert [quality.accepts(v) for v in (0, 100, 37.3, 0.1 + 0.2, 37.35, -0.1, 100.1)] == [
        True, True, True, True, False, False, False]
    assert realism.accepts(0.123456789) and not realism.accepts(float("nan"))
    assert quality.scale_text() == "0..100:0.1" and realism.scale_text() == "0..1:any"


@pytest.mark.parametrize(("edit", "where"), [
    (("step: 0.1", "step: 0"), "criteria[0].continuous.step"),
    (("step: 0.1", "step: 0.000000001"), "criteria[0].continuous.step"),
    (("min: 0, max: 100", "min: 100, max: 0"), "criteria[0].continuous"),
    (("min: 0, max: 1}", "min: 0, max: .inf}"), "criteria[1].continuous"),
    (("    aliases: [q]\n", "    aliases: [q]\n    levels: []\n"), "criteria[0].levels"),
    (("min: 0, max: 1}", "max: 1}"), "criteria[1].continuous.min"),
])
def test_a_bad_continuous_scale_is_refused_with_its_key(edit, where):
    with pytest.raises(RubricError) as info:
        from_text(SLIDER.replace(*edit), "slider")
    assert where in {p.key for p in info.value.problems}, info.value


def test_a_rubric_without_scale_needs_every_criterion_continuous():
    text = SLIDER.replace("    continuous: {min: 0, max: 1}\n", "    levels: []\n")
    with pytest.raises(RubricError, match="scale"):
        from_text(text, "slider")


def test_inline_continuous_scales():
    scale = parse_criteria(["quality=0..100:0.1", "realism=0..1:any", "likert=1..5"])
    rubric = inline_rubric(scale)
    assert [c.scale_text() for c in rubric.criteria] == ["0..100:0.1", "0..1:any",
                                                         "[1, 2, 3, 4, 5]"]
    for bad in ("q=5..1:1", "q=0..1:0", "q=0..1:1e-9", "q=0..inf:1", "q=0..1:x"):
        with pytest.raises(InlineScaleError, match="--criteria"):
            parse_criteria([bad])


def _csv(tmp_path, rows, name="r.csv"):
    path = tmp_path / name
    path.write_text("prompt_id,model,rater,criterion,value\n" +
                    "".join(f"p{i % 7},m{i % 3},r{i % 5},quality,{v}\n"
                            for i, v in enumerate(rows)))
    return path


def test_importing_many_distinct_slider_values(database_at, tmp_path):
    rng = np.random.default_rng(0)
    values = np.round(rng.uniform(0, 100, 12_000), 1)  # far more than 10,000 distinct pairs
    path = tmp_path / "r.csv"
    path.write_text("prompt_id,model,rater,criterion,value\n" + "".join(
        f"p{i},m{i % 3},r{i % 7},quality,{v}\n" for i, v in enumerate(values)))
    db = open_db(database_at("x"))
    done = import_ratings(db, "s", "csv", path, criteria=["quality=0..100:0.1"])
    assert done.added == len(values)
    stored = db.execute("SELECT COUNT(DISTINCT value) FROM ratings").fetchone()[0]
    assert stored == len(set(values)) > 900
    study = study_store.get_study(db, "s")
    assert rubric_choice.rubric_for(study).criteria[0].scale_text() == "0..100:0.1"
    db.close()


def test_values_off_the_slider_are_refused_with_row_and_field(database_at, tmp_path, capsys):
    path = _csv(tmp_path, [10, 20.5, 20.55, 101, -3])
    db_path = database_at("x")
    db = open_db(db_path)
    before = snapshot(db)
    assert main(["--db", str(db_path), "import-ratings", "--study", "s", "--format", "csv",
                 "--criteria", "quality=0..100:0.1", str(path)]) == 1
    err = capsys.readouterr().err
    assert "row 4, field 'value': 20.55 is not on the continuous quality scale 0..100:0.1" in err
    assert "row 5, field 'value': 101" in err and "row 6, field 'value': -3" in err
    assert snapshot(db) == before
    db.close()


def test_a_rubric_file_with_aliases_and_a_leveled_criterion(database_at, tmp_path):
    rubric = tmp_path / "mixed.yaml"
    rubric.write_text(SLIDER.replace("id: slider", "id: mixed").replace(
        "    continuous: {min: 0, max: 1}\n",
        "    levels:\n      - {value: 0, label: fake, description: fake}\n"
        "      - {value: 1, label: real, description: real}\n") + "scale: [0, 1]\n")
    path = tmp_path / "r.csv"
    path.write_text("prompt_id,model,rater,criterion,value\np1,a,r1,q,55.5\np1,a,r1,realism,1\n"
                    "p2,a,r1,q,0\np2,a,r1,realism,0\n")
    db = open_db(database_at("x"))
    import_ratings(db, "s", "csv", path, rubric=[str(rubric)])
    got = sorted(db.execute("SELECT criterion, value FROM ratings").fetchall())
    assert got == [("quality", 0.0), ("quality", 55.5), ("realism", 0.0), ("realism", 1.0)]
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt_id,model,rater,criterion,value\np3,a,r1,realism,0.5\n")
    with pytest.raises(Exception, match=r"0\.5 is not on the realism scale"):
        import_ratings(db, "s", "csv", bad)
    db.close()


def test_a_file_of_floats_without_a_scale_is_told_how_to_declare_a_slider(database_at,
                                                                           tmp_path, capsys):
    rng = np.random.default_rng(1)
    path = _csv(tmp_path, np.round(rng.uniform(0, 1, 400), 4))
    assert main(["--db", str(database_at("x")), "import-ratings", "--study", "s",
                 "--format", "csv", str(path)]) == 1
    err = capsys.readouterr().err
    assert "--criteria quality=0" in err and ":any" in err, err


def _slider_entries(rng, raters=4, items=60, missing=0.3):
    from concord.stats.agreement.entries import Entries

    truth = rng.uniform(0, 100, items)
    rows = [(r, i, float(np.clip(truth[i] + rng.normal(0, 15), 0, 100)))
            for r in range(raters) for i in range(items) if rng.random() > missing]
    rater, item, value = (np.array(c) for c in zip(*rows, strict=True))
    return Entries(rater, item, value, raters, items)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interval_alpha_of_a_slider_equals_krippendorff(seed):
    import krippendorff

    from concord.stats.agreement.interval_alpha import interval_alpha

    data = _slider_entries(np.random.default_rng(seed))
    want = krippendorff.alpha(reliability_data=data.matrix(), level_of_measurement="interval")
    assert interval_alpha(data) == pytest.approx(want, abs=1e-10)
    shifted = data.__class__(data.rater, data.item, data.value + 1e6, data.n_raters,
                             data.n_items)
    assert interval_alpha(shifted) == pytest.approx(want, abs=1e-7)


def test_the_report_of_a_slider_study(database_at, tmp_path, capsys):
    """Thousands of distinct values: interval α from per-item sums (checked against the
    definition by brute force over pairs: the krippendorff package itself needs items ×
    values² memory here, 193 GiB), the categorical statistics left out, the interval
    bootstrapped."""
    rng = np.random.default_rng(3)
    truth = rng.uniform(0, 100, 1500)
    lines = ["prompt_id,model,rater,criterion,value"]
    for i, t in enumerate(truth):
        for r in range(3):
            value = np.clip(t + rng.normal(0, 10), 0, 100)
            lines.append(f"p{i // 2},m{i % 2},r{r},quality,{value}")
    path = tmp_path / "s.csv"
    path.write_text("\n".join(lines) + "\n")
    db_path = database_at("x")
    assert main(["--db", str(db_path), "import-ratings", "--study", "s", "--format", "csv",
                 "--criteria", "quality=0..100:any", str(path)]) == 0
    capsys.readouterr()
    assert main(["--db", str(db_path), "stats", "--study", "s", "--json", "--n-boot", "50",
                 "--n-perm", "20"]) == 0
    doc = __import__("json").loads(capsys.readouterr().out)
    [row] = doc["agreement"]["study"]
    items = np.array([[float(line.split(",")[4]) for line in lines[1:][r::3]]
                      for r in range(3)]).T  # items × 3 raters, every cell rated
    within = sum(((x[:, None] - x[None, :]) ** 2).sum() / 2 for x in items)  # m - 1 = 2
    flat = items.ravel()
    n = flat.size
    between = ((flat[:, None] - flat[None, :]) ** 2).sum()
    want = 1 - (within / n) / (between / (n * (n - 1)))
    assert row["alpha_interval"] == pytest.approx(want, abs=1e-9)
    assert row["alpha_nominal"] is None and row["fleiss_kappa"] is None
    assert row["alpha_interval_ci_boot_low"] < row["alpha_interval"] < \
        row["alpha_interval_ci_boot_high"]
    assert doc["human"] and doc["rater_vs_rest"]["pooled"]
