"""The statistics report of one study: what ``python -m concord stats`` prints and the
dashboard shows (``docs/stats.md#the-study-report--concordservicesreport``).

* :mod:`~concord.services.report.request`: what a report is asked for, resolved once at
  the edge (imports no statistics, so ``stats`` answers a typo at once);
* :mod:`~concord.services.report.frames`: the study's tidy frames after exclusions and
  filters, the report's input (reads with pandas only, while the CLI loads scipy in a
  thread);
* :mod:`~concord.services.report.settings`: what the study's settings say about its
  statistics (derived criteria, flag thresholds, pair scores);
* :mod:`~concord.services.report.study`: the report itself (the statistics of
  :mod:`concord.stats` over those frames);
* :mod:`~concord.services.report.cache`: reports served from the database while nothing
  they depend on has changed;
* :mod:`~concord.services.report.planning`: how many prompts and raters are enough, from
  the study as a pilot.

The SQL behind them is in :mod:`concord.store.frames` and :mod:`concord.store.report_cache`;
the CLI's tables in :mod:`concord.cli.stats`, the dashboard in ``concord/ui/dashboard_*.py``.
"""

# The report's benchmark sections (``doc["benchmarks"]``) in the order the CLI and the
# dashboard show them, with their titles (``tiif_accuracy``, per dimension, is JSON only).
# Here, not in the report's module, so that printing a cached report imports no statistics.
BENCHMARK_SECTIONS = (
    ("metric_means", "Metric means per model"),
    ("paircomp", "PairComp"),
    ("geneval2_totals", "GenEval 2 totals (×100)"),
    ("geneval2_by_skill", "GenEval 2 Soft-TIFA AM per skill"),
    ("geneval2_by_atomicity", "GenEval 2 Soft-TIFA GM per atom count"),
    ("tiif_summary", "TIIF-Bench groups"),
    ("gned", "GNED (lower is better)"),
    ("consistency", "Paraphrase consistency"),
    ("problems", "Benchmarks not computed"),
)
