"""Statistics over Concord's tidy frames: pure functions, no I/O.

Frames and their columns are documented in ``docs/data-model.md``; every statistic, its
formula and the reference it reproduces in ``docs/stats.md``.

The names below load their module on first use, so importing one statistic (or a
pandas-free module such as ``concord.stats.thresholds``) does not load scipy and pandas.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Module of this package (dotted below it) → the public names it defines. A name that is
# also a module's or subpackage's name would be shadowed by it once anything imports it, so
# none is listed.
_EXPORTS = {
    "agreement.matrices": (
        "fleiss_kappa kendalls_w krippendorff_alpha leave_one_out mean_pairwise_spearman"),
    "agreement.frames": "agreement_table gold_accuracy leave_one_out_table rating_matrix",
    "human_vs_metric.correlation": (
        "correlations kendall_tau_b_grouped pairwise_accuracy "
        "pairwise_accuracy_ignore_ties tau_23 winoground_accuracy"),
    "derived": "Derived IMAGENHUB_O derive overall_scores with_derived",
    "human_vs_metric.drilldown": "disagreements",
    "flags": "item_times quality_flags rater_signals time_summary too_fast_items",
    "grouped": "combine_r grouped_correlations",
    "human": "bootstrap_means model_scores",
    "human_vs_metric.table": "human_metric_table human_sources item_level join_sources",
    "human_vs_metric.model_level": "model_level_many",
    "human_vs_metric.per_model": "per_model_table rater_vs_rest",
    "thresholds": "QualityThresholds",
    "quality": "gold_results split_gold",
    "rankings": (
        "kendalls_w_by_prompt model_ranking position_bias prompt_mean_ranks "
        "rank_by_position"),
    "report.document": "full_report",
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names.split()}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
