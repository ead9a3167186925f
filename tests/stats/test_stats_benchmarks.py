"""Benchmark aggregations against the reference outputs in ../shared and hand examples."""

from __future__ import annotations

import json
import re
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.stats.benchmarks import (
    geneval2_by_atomicity,
    geneval2_by_skill,
    geneval2_totals,
    gned_summary,
    group_consistency,
    paircomp_scores,
    paraphrase_consistency,
    prompt_scores,
    tifa_accuracy_by_type,
    tifa_caption_scores,
    tifa_summary,
)

# ---------------------------------------------------------------- PairComp


def _paircomp_frame(shared):
    folder = shared / "benchmarks" / "paircomp"
    pairs = json.loads((folder / "PairComp.json").read_text())
    scores = json.loads((folder / "fixtures" / "synth_scores.json").read_text())
    rows = [{"model": "synth", "pair": int(key), "caption": e["prompt_idx"],
             "sample": e["image_idx"], "category": pairs[int(key)]["category"],
             "value": e["score"]} for key, entries in scores.items() for e in entries]
    return pd.DataFrame(rows), folder / "fixtures" / "synth_scores.summary_scores_stdout.txt"


@pytest.mark.shared
def test_paircomp_reproduces_summary_scores_stdout(shared):
    frame, stdout = _paircomp_frame(shared)
    text = stdout.read_text()
    found = re.findall(r"^(.+):\nsa:(\S+) sg:(\S+)", text, flags=re.M)
    expected = {name: (float(sa), float(sg)) for name, sa, sg in found}
    assert len(expected) == 7
    out = paircomp_scores(frame).set_index("category")
    assert list(out.index) == list(expected)
    for category, (sa, sg) in expected.items():
        assert out.loc[category, "arithmetic"] == pytest.approx(sa, abs=1e-9)
        assert out.loc[category, "geometric"] == pytest.approx(sg, abs=1e-9)
    assert out.loc["Average", "n_categories"] == 6


@pytest.mark.shared
def test_paircomp_works_on_a_subset_and_refuses_incomplete_pairs(shared):
    frame, _ = _paircomp_frame(shared)
    subset = frame[frame["category"].str.lower().str.contains("color|text")]
    out = paircomp_scores(subset).set_index("category")
    assert list(out.index) == ["Color", "Text", "Average"]
    assert out.loc["Average", "arithmetic"] == pytest.approx(
        (out.loc["Color", "arithmetic"] + out.loc["Text", "arithmetic"]) / 2)
    message = r"4 images .* 1 pair\(s\) differ, e.g. model 'synth' pair 0 has 3"
    with pytest.raises(ValueError, match=message):
        paircomp_scores(frame.iloc[1:])


def test_paircomp_rounds_per_image_before_aggregation():
    rows = [{"model": "m", "pair": 0, "caption": c, "sample": s, "category": "Color difference",
             "value": v} for (c, s), v in zip([(0, 0), (0, 1), (1, 0), (1, 1)],
                                              [0.00004, 0.5, 0.5, 0.5], strict=True)]
    out = paircomp_scores(pd.DataFrame(rows)).set_index("category")
    assert out.loc["Color", "geometric"] == 0.0  # 4e-5 rounds to 0 and zeroes the pair
    raw = paircomp_scores(pd.DataFrame(rows), decimals=None).set_index("category")
    assert raw.loc["Color", "geometric"] == pytest.approx((0.00004 * 0.125) ** 0.25)


@pytest.mark.parametrize(("change", "message"), [
    ({"category": "Shape difference"}, "matches 0 of the keys"),
    ({"value": 1.5}, r"probabilities in \[0, 1\]"),
])
def test_paircomp_bad_input(change, message):
    rows = pd.DataFrame({"model": "m", "pair": 0, "caption": [0, 0, 1, 1],
                         "sample": [0, 1, 0, 1], "category": "Color difference",
                         "value": 0.5}).assign(**change)
    with pytest.raises(ValueError, match=message):
        paircomp_scores(rows)


# ---------------------------------------------------------------- GenEval 2


def _geneval2_frame(shared):
    folder = shared / "benchmarks" / "geneval2"
    data = [json.loads(line) for line in (folder / "geneval2_data.jsonl").open()]
    lists = json.loads((folder / "fixtures" / "synth_score_lists.json").read_text())
    rows = [{"model": "synth", "prompt_id": p, "question_id": q, "value": v,
             "skill": d["skills"][q], "atom_count": d["atom_count"]}
            for p, (d, scores) in enumerate(zip(data, lists, strict=True))
            for q, v in enumerate(scores)]
    return pd.DataFrame(rows), folder / "fixtures"


@pytest.mark.shared
def test_geneval2_totals_reproduce_evaluation_stdout(shared):
    frame, folder = _geneval2_frame(shared)
    text = (folder / "synth_score_lists.evaluation_totals_stdout.txt").read_text()
    for method, value in re.findall(r"^(\w+) Score: (\S+)$", text, flags=re.M):
        got = geneval2_totals(frame, method=method)["score"].iloc[0]
        assert got == pytest.approx(float(value), abs=1e-9)
    lists = frame.groupby("prompt_id")["value"].apply(list)
    scipy_gm = 100 * np.mean([stats.gmean(v) for v in lists])
    assert geneval2_totals(frame, method="soft_tifa_gm")["score"].iloc[0] == pytest.approx(
        scipy_gm, abs=1e-9)


@pytest.mark.shared
def test_geneval2_breakdowns_reproduce_analysis_stdout(shared):
    frame, folder = _geneval2_frame(shared)
    text = (folder / "synth_score_lists.soft_tifa_analysis_stdout.txt").read_text()
    skills = dict(re.findall(r"^(Object|Attribute|Count|Position|Verb):\n(\S+)$", text, re.M))
    atoms = dict(re.findall(r"^Results for Atomicity=(\d+)\n(\S+)$", text, re.M))
    by_skill = geneval2_by_skill(frame)
    assert [s.capitalize() for s in by_skill["skill"]] == list(skills)
    for skill, printed in skills.items():
        got = by_skill.set_index("skill").loc[skill.lower(), "score"]
        assert round(got, 2) == float(printed)
    by_atoms = geneval2_by_atomicity(frame).set_index("atom_count")
    assert sorted(by_atoms.index) == sorted(int(a) for a in atoms)
    for count, printed in atoms.items():
        assert round(by_atoms.loc[int(count), "score"], 2) == float(printed)


def test_geneval2_subset_and_other_atom_counts():
    frame = pd.DataFrame({"model": "m", "prompt_id": [1, 1, 2, 2, 3],
                          "question_id": [0, 1, 0, 1, 0], "value": [0.5, 0.5, 1.0, 0.25, 0.9],
                          "skill": ["count", "object", "count", "verb", "object"],
                          "atom_count": [2, 2, 12, 12, 12]})
    atoms = geneval2_by_atomicity(frame).set_index("atom_count")["score"]
    assert atoms.to_dict() == pytest.approx({2: 50.0, 12: 100 * (0.5 + 0.9) / 2})
    skills = geneval2_by_skill(frame)
    assert skills["skill"].tolist() == ["object", "count", "verb"]
    assert prompt_scores(frame, method="soft_tifa_am")["score"].tolist() == pytest.approx(
        [0.5, 0.625, 0.9])


@pytest.mark.parametrize(("frame", "kwargs", "message"), [
    (pd.DataFrame({"model": "m", "prompt_id": [1, 1], "question_id": [0, 0],
                   "value": [0.1, 0.2]}), {}, "duplicate"),
    (pd.DataFrame({"model": "m", "prompt_id": [1, 1], "question_id": [0, 1],
                   "value": [0.1, 0.2]}), {"method": "vqascore"}, "one score per prompt"),
    (pd.DataFrame({"model": "m", "prompt_id": [1], "question_id": [0], "value": [0.5]}),
     {"method": "tifa"}, "must be 0 or 1"),
    (pd.DataFrame({"model": "m", "prompt_id": [1], "question_id": [0], "value": [-0.5]}),
     {}, "non-negative"),
    (pd.DataFrame({"model": "m", "prompt_id": [1], "question_id": [0], "value": [0.5]}),
     {"method": "soft_tifa"}, "method must be one of"),
])
def test_geneval2_bad_input(frame, kwargs, message):
    with pytest.raises(ValueError, match=message):
        geneval2_totals(frame, **kwargs)


# ---------------------------------------------------------------- TIFA


@pytest.mark.shared
def test_tifa_reproduces_sample_evaluation_result(shared):
    result = json.loads((shared / "benchmarks" / "tifa" / "sample" /
                         "sample_evaluation_result.json").read_text())
    rows = [{"model": "mplug", "prompt_id": cid, "question": q,
             "element_type": d["element_type"], "value": d["scores"]}
            for cid, questions in result["question_details"].items()
            for q, d in questions.items()]
    frame = pd.DataFrame(rows)
    summary = tifa_summary(frame).iloc[0]
    assert summary["tifa_average"] == pytest.approx(result["tifa_average"], abs=1e-12)
    assert summary["tifa_stdev"] == pytest.approx(result["tifa_stdev"], abs=1e-12)
    captions = tifa_caption_scores(frame).set_index("prompt_id")["score"].to_dict()
    assert captions == pytest.approx(result["caption_scores"])
    by_type = tifa_accuracy_by_type(frame).set_index("element_type")["accuracy"].to_dict()
    assert by_type == pytest.approx(result["accuracy_by_type"])


def test_tifa_stdev_is_sample_stdev_and_nan_for_one_caption():
    frame = pd.DataFrame({"model": "m", "prompt_id": ["a", "a", "b", "c"],
                          "value": [1, 0, 1, 0]})
    out = tifa_summary(frame).iloc[0]
    assert out["tifa_stdev"] == pytest.approx(statistics.stdev([0.5, 1.0, 0.0]))
    assert np.isnan(tifa_summary(frame[frame["prompt_id"] == "a"])["tifa_stdev"].iloc[0])
    with pytest.raises(ValueError, match=r"missing column\(s\) \['element_type'\]"):
        tifa_accuracy_by_type(frame)


# ---------------------------------------------------------------- GNED


@pytest.mark.shared
def test_gned_summary_reproduces_reference_file_scores(shared):
    expected = json.loads((shared / "benchmarks" / "tiif" / "fixtures" /
                           "synth_ocr.gned_stdout.txt").read_text().split("\n}")[0] + "}")
    # Per-image values of synth_ocr.json from the GNED/recall definitions (reference notes
    # §3.4): short: "Drink Tea" vs [drink, tea] → 0, recall 1; no OCR vs [eat, cake] → 1,
    # recall 0. long: no OCR vs [drink, tea] → 1, recall 0; [eat, cak] vs [eat, cake] →
    # (0 + 0.25) / 2, recall 1 (NED(cak, cake) = 0.25 <= 0.3).
    images = pd.DataFrame({"model": "synth", "variant": ["short", "short", "long", "long"],
                           "prompt_id": ["0.png", "1.png", "0.png", "1.png"],
                           "gned": [0.0, 1.0, 1.0, 0.125], "recall": [1.0, 0.0, 0.0, 1.0]})
    out = gned_summary(images).set_index("variant")
    assert out.loc["short", "gned"] == pytest.approx(expected["GNED_score_short"])
    assert out.loc["long", "gned"] == pytest.approx(expected["GNED_score_long"])
    assert out.loc["short", "recall"] == pytest.approx(expected["Recall_score_short"])
    assert out.loc["long", "recall"] == pytest.approx(expected["Recall_score_long"])


def test_gned_summary_skips_failed_images_and_checks_range():
    images = pd.DataFrame({"model": "m", "variant": "short", "prompt_id": ["a", "b", "c"],
                           "gned": [0.2, np.nan, 0.4], "recall": [1.0, 0.5, 0.0]})
    out = gned_summary(images).iloc[0]
    assert (out["gned"], out["recall"], out["n_images"], out["n_missing"]) == pytest.approx(
        (0.3, 0.5, 2, 1))
    with pytest.raises(ValueError, match=r"gned must be in \[0, 1\]"):
        gned_summary(images.assign(gned=[0.2, 1.5, 0.1]))


# ---------------------------------------------------------------- paraphrase consistency


def _consistency_frame():
    values = {("a1", "abstract"): [1, 2, 3, 4, 5], ("a2", "abstract"): [2, 2, 2, 2, 2],
              ("r1", "realistic"): [1, 1, 1, 3, 3], ("r2", "realistic"): [4, 4, 5, 5, 6]}
    return pd.DataFrame([{"model": "sd", "paraphrase_group": g, "kind": k, "value": v}
                         for (g, k), vs in values.items() for v in vs]), values


@pytest.mark.parametrize(("aggregator", "fn"), [
    ("std", statistics.stdev), ("min", min), ("median", statistics.median)])
def test_paraphrase_consistency_by_hand(aggregator, fn):
    frame, values = _consistency_frame()
    s = {g: fn(v) for (g, _), v in values.items()}
    out = paraphrase_consistency(frame, aggregator=aggregator).iloc[0]
    s_a, s_r = (s["a1"] + s["a2"]) / 2, (s["r1"] + s["r2"]) / 2
    assert (out["S_a"], out["S_r"], out["S_final"]) == pytest.approx((s_a, s_r, s_r - s_a))
    assert (out["n_abstract"], out["n_realistic"]) == (2, 2)


def test_paraphrase_consistency_undefined_groups_and_bad_kind():
    frame, _ = _consistency_frame()
    single = frame.drop_duplicates("paraphrase_group")  # one paraphrase per group
    assert group_consistency(single)["s"].isna().all()
    out = paraphrase_consistency(frame[frame["kind"] == "abstract"]).iloc[0]
    assert np.isnan(out["S_r"])
    assert np.isnan(out["S_final"])
    assert out["n_realistic"] == 0
    with pytest.raises(ValueError, match=r"kind must be one of .* got \['photo'\]"):
        paraphrase_consistency(frame.assign(kind="photo"))
    renamed = frame.rename(columns={"kind": "dimension"})
    pd.testing.assert_frame_equal(paraphrase_consistency(renamed, kind_column="dimension"),
                                  paraphrase_consistency(frame))
