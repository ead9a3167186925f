"""Every frame function names the columns it misses and refuses non-frames."""

from __future__ import annotations

import pandas as pd
import pytest

from concord import stats
from concord.stats import benchmarks
from concord.stats.human_vs_metric.model_level import model_level

RATINGS = ["prompt_id", "model", "rater", "criterion", "value"]
RANKINGS = ["prompt_id", "rater", "criterion", "model", "rank", "position"]
CASES = [
    (stats.overall_scores, RATINGS),
    (stats.model_scores, RATINGS),
    (stats.bootstrap_means, ["prompt_id", "rater", "value", "model", "criterion"]),
    (stats.agreement_table, RATINGS),
    (stats.rating_matrix, ["rater", "value", "prompt_id", "model"]),
    (stats.prompt_mean_ranks, RANKINGS[:5]),
    (stats.model_ranking, RANKINGS[:5]),
    (stats.kendalls_w_by_prompt, RANKINGS[:5]),
    (stats.position_bias, RANKINGS),
    (stats.rank_by_position, RANKINGS),
    (stats.item_level, ["prompt_id", "human", "metric"]),
    (model_level, ["prompt_id", "model", "human", "metric"]),
    (stats.human_metric_table, ["prompt_id", "model", "metric", "value"]),
    (stats.full_report, RATINGS),
    (benchmarks.paircomp_scores, ["model", "pair", "caption", "sample", "category", "value"]),
    (benchmarks.geneval2_totals, ["model", "prompt_id", "question_id", "value"]),
    (benchmarks.geneval2_by_skill, ["model", "prompt_id", "question_id", "value", "skill"]),
    (benchmarks.geneval2_by_atomicity,
     ["model", "prompt_id", "question_id", "value", "atom_count"]),
    (benchmarks.tifa_caption_scores, ["model", "prompt_id", "value"]),
    (benchmarks.tifa_summary, ["model", "prompt_id", "value"]),
    (benchmarks.tiif_accuracy, ["model", "dimension", "variant"]),
    (benchmarks.tiif_summary, ["model", "dimension", "variant", "accuracy"]),
    (benchmarks.gned_summary, ["model", "variant", "prompt_id", "gned", "recall"]),
    (benchmarks.paraphrase_consistency, ["model", "paraphrase_group", "kind", "value"]),
]


@pytest.mark.parametrize(("fn", "columns"), CASES, ids=[f.__name__ for f, _ in CASES])
def test_missing_columns_are_named(fn, columns):
    full = pd.DataFrame({c: ["x"] for c in columns})
    for dropped in (columns[0], columns[-1]):
        with pytest.raises(ValueError, match=rf"missing column\(s\) \[.*'{dropped}'.*\]"):
            fn(full.drop(columns=dropped))


@pytest.mark.parametrize(("fn", "columns"), CASES[:4], ids=[f.__name__ for f, _ in CASES[:4]])
def test_non_frames_are_refused_with_their_type(fn, columns):
    with pytest.raises(TypeError, match="expected a pandas DataFrame, got dict"):
        fn({c: [1] for c in columns})


def test_empty_benchmark_frames_are_refused():
    empty = pd.DataFrame(columns=["model", "pair", "caption", "sample", "category", "value"])
    with pytest.raises(ValueError, match="the frame is empty"):
        benchmarks.paircomp_scores(empty)


def test_level_and_aggregator_choices_are_checked():
    with pytest.raises(ValueError, match=r"level must be one of .* got 'ratio-ish'"):
        stats.krippendorff_alpha([[1, 2], [1, 2]], level="ratio-ish")
    frame = pd.DataFrame({"model": "m", "paraphrase_group": "g", "kind": "abstract",
                          "value": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"aggregator must be one of .* got 'mean'"):
        benchmarks.paraphrase_consistency(frame, aggregator="mean")
