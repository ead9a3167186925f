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
    leave_one_out_table,
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
from concord.stats.derived import IMAGENHUB_O, Derived, derive, overall_scores, with_derived
from concord.stats.drilldown import disagreements
from concord.stats.flags import (
    item_times,
    quality_flags,
    rater_signals,
    time_summary,
    too_fast_items,
)
from concord.stats.grouped import combine_r, grouped_correlations
from concord.stats.human import bootstrap_means, model_scores
from concord.stats.human_metric import (
    human_metric_table,
    human_sources,
    item_level,
    join_sources,
)
from concord.stats.model_level import model_level, model_level_many
from concord.stats.per_model import per_model_table, rater_vs_rest
from concord.stats.quality import QualityThresholds, gold_results, split_gold
from concord.stats.rankings import (
    kendalls_w_by_prompt,
    model_ranking,
    position_bias,
    prompt_mean_ranks,
    rank_by_position,
)
from concord.stats.report import full_report

__all__ = [
    "IMAGENHUB_O",
    "Derived",
    "QualityThresholds",
    "agreement_table",
    "bootstrap_means",
    "combine_r",
    "correlations",
    "derive",
    "disagreements",
    "fleiss_kappa",
    "full_report",
    "gold_accuracy",
    "gold_results",
    "grouped_correlations",
    "human_metric_table",
    "human_sources",
    "item_level",
    "item_times",
    "join_sources",
    "kendall_tau_b_grouped",
    "kendalls_w",
    "kendalls_w_by_prompt",
    "krippendorff_alpha",
    "leave_one_out",
    "leave_one_out_table",
    "mean_pairwise_spearman",
    "model_level",
    "model_level_many",
    "model_ranking",
    "model_scores",
    "overall_scores",
    "pairwise_accuracy",
    "pairwise_accuracy_ignore_ties",
    "per_model_table",
    "position_bias",
    "prompt_mean_ranks",
    "quality_flags",
    "rank_by_position",
    "rater_signals",
    "rater_vs_rest",
    "rating_matrix",
    "split_gold",
    "tau_23",
    "time_summary",
    "too_fast_items",
    "winoground_accuracy",
    "with_derived",
]
