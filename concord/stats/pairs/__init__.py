"""Pairwise A/B judgments (``docs/stats.md#pairwise-ab-judgments``), and rankings read as
pairs.

* :mod:`~concord.stats.pairs.frame`: the Pairs frame, its checks, pairs from rankings;
* :mod:`~concord.stats.pairs.pairwise`: win rates, the win matrix, left/right bias;
* :mod:`~concord.stats.pairs.bradley_terry` (the fit itself:
  :mod:`~concord.stats.pairs.bt_fit`) and :mod:`~concord.stats.pairs.elo`: model scores;
* :mod:`~concord.stats.pairs.agreement`: agreement between raters, and of a metric with
  them;
* :mod:`~concord.stats.pairs.differences`: Bradley–Terry differences and head-to-head win
  rates of every two models.

The report's pairs sections are built in :mod:`concord.stats.report.pair_sections`.
"""
