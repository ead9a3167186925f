"""Statistics over Concord's tidy frames: pure functions, no I/O.

Frames and their columns are documented in ``docs/data-model.md``; every statistic, its
formula and the reference it reproduces in ``docs/stats.md``.
"""

from concord.stats.agreement import (
    fleiss_kappa,
    kendalls_w,
    krippendorff_alpha,
    leave_one_out,
    mean_pairwise_spearman,
)
from concord.stats.agreement_frames import (
    agreement_table,
    gold_accuracy,
    rater_quality,
    rating_matrix,
)
from concord.stats.correlation import (
    correlations,
    kendall_tau_b_grouped,
    pairwise_accuracy,
    pairwise_accuracy_ignore_ties,
    tau_23,
    winoground_accuracy,
)
from concord.stats.human import bootstrap_means, model_scores, overall_scores
from concord.stats.human_metric import (
    human_metric_table,
    item_level,
    model_level,
    model_level_many,
)
from concord.stats.rankings import (
    kendalls_w_by_prompt,
    model_ranking,
    position_bias,
    prompt_mean_ranks,
    rank_by_position,
)
from concord.stats.report import full_report

__all__ = [
    "agreement_table",
    "bootstrap_means",
    "correlations",
    "fleiss_kappa",
    "full_report",
    "gold_accuracy",
    "human_metric_table",
    "item_level",
    "kendall_tau_b_grouped",
    "kendalls_w",
    "kendalls_w_by_prompt",
    "krippendorff_alpha",
    "leave_one_out",
    "mean_pairwise_spearman",
    "model_level",
    "model_level_many",
    "model_ranking",
    "model_scores",
    "overall_scores",
    "pairwise_accuracy",
    "pairwise_accuracy_ignore_ties",
    "position_bias",
    "prompt_mean_ranks",
    "rank_by_position",
    "rater_quality",
    "rating_matrix",
    "tau_23",
    "winoground_accuracy",
]
