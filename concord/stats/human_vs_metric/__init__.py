"""Human vs metric: does an automatic metric agree with people, and is one metric closer
to them than another? (``docs/stats.md#human-vs-metric--concordstatshuman_vs_metric``)

* :mod:`~concord.stats.human_vs_metric.table`: the ``human_vs_metric`` table, at the
  model level and the item (image) level;
* :mod:`~concord.stats.human_vs_metric.model_level`: correlation of model scores with its
  bootstrap interval and permutation p-value;
* :mod:`~concord.stats.human_vs_metric.correlation`: item-level correlations and their
  meta-evaluation variants;
* :mod:`~concord.stats.human_vs_metric.per_model`: per-model item-level correlations and
  rater versus the rest;
* :mod:`~concord.stats.human_vs_metric.metric_compare` (with
  :mod:`~concord.stats.human_vs_metric.metric_pair` and
  :mod:`~concord.stats.human_vs_metric.metric_swap`): metric against metric on the same
  human scores;
* :mod:`~concord.stats.human_vs_metric.drilldown`: the images humans and a metric rank
  most differently.
"""
