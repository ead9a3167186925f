"""TIIF-Bench: judge-output reader and the summary tables against the reference outputs."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from concord.importers.tiif_judge import (
    JudgeFileError,
    read_tiif_judge_jsonl,
    read_tiif_judge_tree,
)
from concord.stats.benchmarks import tiif_accuracy, tiif_summary

JUDGES = ("GPT-4o", "QwenVL")


def _record(**change):
    base = {"source_path": "x/GPT-4o/DALLE3/color+2d/short/3.json", "attribute": "color+2d",
            "desc": "short_description", "jsonl_file": "color+2d_eval_prompts.jsonl",
            "line_idx": 3, "questions": ["Is it red?  ", "Is it left?"],
            "gt_answers": ["yes", "Yes"], "model_pred": [" YES", "no"], "model_output": "..."}
    base.update(change)
    return {k: v for k, v in base.items() if v is not None}


def _write(tmp_path, lines):
    path = tmp_path / "judge.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_reader_builds_one_row_per_question(tmp_path):
    out = read_tiif_judge_jsonl(_write(tmp_path, [_record()]))
    assert out.columns.tolist() == ["model", "dimension", "variant", "prompt_index",
                                    "question_id", "question", "answer", "pred", "correct"]
    assert out[["model", "dimension", "variant", "prompt_index"]].iloc[0].tolist() == [
        "DALLE3", "color+2d", "short", 3]
    assert out["correct"].tolist() == [True, False]  # " YES" vs "yes" after strip/lower
    assert out["question"].iloc[0] == "Is it red?  "


def test_reader_reports_every_bad_line_with_file_line_and_field(tmp_path):
    path = _write(tmp_path, [
        _record(),
        "{not json",
        _record(gt_answers=None),
        _record(model_pred=["yes"]),
        _record(desc="medium_description"),
        _record(source_path=None),
        _record(attribute="style"),
        "[1, 2]",
    ])
    with pytest.raises(JudgeFileError) as info:
        read_tiif_judge_jsonl(path)
    problems = {(p.row, p.field): p.message for p in info.value.problems}
    assert all(p.file == str(path) for p in info.value.problems)
    assert "malformed JSON" in problems[(2, None)]
    assert problems[(3, "gt_answers")] == "missing field"
    assert "list lengths differ" in problems[(4, "gt_answers")]
    assert "unknown desc 'medium_description'" in problems[(5, "desc")]
    assert "no T2I model" in problems[(6, "source_path")]
    assert "path says dimension 'color+2d'" in problems[(7, "attribute")]
    assert "expected a JSON object, got list" in problems[(8, None)]
    assert len(info.value.problems) == 7
    assert isinstance(info.value, ValueError)
    assert f"{path}, row 4, field 'gt_answers'" in str(info.value)


def test_reader_truncates_like_zip_only_when_asked(tmp_path):
    path = _write(tmp_path, [_record(model_pred=["yes"])])
    out = read_tiif_judge_jsonl(path, on_length_mismatch="truncate")
    assert out["question_id"].tolist() == [0]
    with pytest.raises(ValueError, match="on_length_mismatch must be one of"):
        read_tiif_judge_jsonl(path, on_length_mismatch="pad")


def test_reader_refuses_empty_file_and_reads_the_per_image_tree(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(JudgeFileError, match="empty file"):
        read_tiif_judge_jsonl(empty)
    for idx in (10, 2):
        folder = tmp_path / "tree" / "sd35" / "color+2d" / "long"
        folder.mkdir(parents=True, exist_ok=True)
        record = _record(source_path=None, desc="long_description", line_idx=idx)
        (folder / f"{idx}.json").write_text(json.dumps(record))
    out = read_tiif_judge_tree(tmp_path / "tree")
    assert out["model"].unique().tolist() == ["sd35"]
    assert out["prompt_index"].tolist() == [2, 2, 10, 10]  # numeric file order
    (folder / "11.json").write_text("{")
    with pytest.raises(JudgeFileError, match=r"11.json, row 1: malformed JSON"):
        read_tiif_judge_tree(tmp_path / "tree")


def test_summary_groups_and_overall_on_a_subset():
    acc = pd.DataFrame({"model": "m", "variant": "short",
                        "dimension": ["shape+color", "color+texture", "numeracy", "text"],
                        "accuracy": [0.5, 0.7, 0.9, 0.2]})
    out = tiif_summary(acc).set_index("group")["score"]
    assert out["Basic_Attribute"] == pytest.approx(0.6)
    assert out["Basic_Following_Overall"] == pytest.approx((0.5 + 0.7 + 0.9) / 3)
    assert pd.isna(out["Basic_Relation"])
    assert pd.isna(out["Real_Complex"])
    assert out["Overall"] == pytest.approx((0.6 + 0.9 + 0.2) / 3)  # empty groups skipped


def test_accuracy_from_answer_and_pred_and_bad_variant():
    judged = pd.DataFrame({"model": "m", "dimension": "text", "variant": "long",
                           "answer": ["yes", "no", "Yes"], "pred": ["yes ", "yes", "no"]})
    out = tiif_accuracy(judged).iloc[0]
    assert (out["accuracy"], out["n_questions"], out["n_correct"]) == (0.3333, 3, 1)
    with pytest.raises(ValueError, match=r"variant must be 'short' or 'long', got \['mid'\]"):
        tiif_accuracy(judged.assign(variant="mid"))


def _reference_accuracy(path) -> pd.DataFrame:
    table = pd.read_csv(path, header=[0, 1], index_col=0)
    table = table.drop(columns=[c for c in table.columns if c[0] == "Mean_Accuracy"])
    long = table.stack(level=[0, 1], future_stack=True).rename("reference").reset_index()
    long.columns = ["model", "dimension", "variant", "reference"]
    return long.dropna()


def _reference_groups(path) -> dict[tuple[str, str, str], float]:
    """Parse result_summary_dimension_*.txt into {(group, model, variant): value}."""
    out = {}
    for block in path.read_text().split("==== ")[1:]:
        title, _, body = block.partition(" ====\n")
        group = "Overall" if title.startswith("Overall average") else title.split(" - ")[0]
        lines = [ln for ln in body.splitlines() if ln.strip() and not ln.startswith("Model")]
        variants = [c.replace("overall-", "") for c in lines[0].split()]
        for line in lines[1:]:
            model, *values = line.split()
            for variant, value in zip(variants, values, strict=True):
                out[(group, model, variant)] = float(value)
    return out


@pytest.mark.shared
@pytest.mark.parametrize("judge", JUDGES)
def test_tiif_reproduces_reference_outputs(shared, judge):
    folder = shared / "benchmarks" / "tiif"
    judged = read_tiif_judge_jsonl(
        folder / "eval_results_testmini" / f"tiif_testmini_eval_results_{judge}.jsonl")
    accuracy = tiif_accuracy(judged)
    ref = _reference_accuracy(folder / "reference_outputs" /
                              f"result_summary_{judge}_Accuracy.csv")
    merged = accuracy.merge(ref, on=["model", "dimension", "variant"], how="outer")
    # 25 models × 39 dimensions × 2 variants, less 4 cells without images in the release.
    assert len(merged) == len(ref) == len(accuracy) == 25 * 39 * 2 - 4
    assert (merged["accuracy"] - merged["reference"]).abs().max() < 1e-9
    summary = tiif_summary(accuracy).set_index(["group", "model", "variant"])["score"]
    expected = _reference_groups(folder / "reference_outputs" /
                                 f"result_summary_dimension_{judge}.txt")
    overall = {k: v for k, v in expected.items() if k[0] == "Overall"}
    assert len(overall) == 50
    assert len(expected) == 13 * 50
    for key, value in expected.items():
        if pd.isna(value):  # a group without any judged image prints NaN in the reference
            assert pd.isna(summary[key]), key
        else:
            assert abs(summary[key] - value) <= 5e-5 + 1e-12, key  # within the 4-dp display
            # Not just within 1e-4: summation order matches, so every display is identical.
            assert round(summary[key], 4) == value, key
