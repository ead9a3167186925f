"""Aggregations of published T2I benchmarks, reproducing their reference scripts.

Each function takes a tidy per-image or per-question frame (columns in its docstring),
refuses malformed input with a ``ValueError`` naming the problem, and works on subsets.
"""

from concord.stats.benchmarks.consistency import group_consistency, paraphrase_consistency
from concord.stats.benchmarks.geneval2 import (
    geneval2_by_atomicity,
    geneval2_by_skill,
    geneval2_totals,
    prompt_scores,
)
from concord.stats.benchmarks.gned import gned_summary
from concord.stats.benchmarks.paircomp import category_label, paircomp_scores
from concord.stats.benchmarks.tifa import (
    tifa_accuracy_by_type,
    tifa_caption_scores,
    tifa_summary,
)
from concord.stats.benchmarks.tiif import tiif_accuracy, tiif_summary

__all__ = [
    "category_label",
    "geneval2_by_atomicity",
    "geneval2_by_skill",
    "geneval2_totals",
    "gned_summary",
    "group_consistency",
    "paircomp_scores",
    "paraphrase_consistency",
    "prompt_scores",
    "tifa_accuracy_by_type",
    "tifa_caption_scores",
    "tifa_summary",
    "tiif_accuracy",
    "tiif_summary",
]
