"""Automatic metrics over a study (``docs/evaluators.md``): scoring runs and the scores
computed elsewhere. The metrics themselves are in ``evaluators/`` (torch only there).

* :mod:`~concord.services.metrics.score_request`: a ``score`` invocation resolved once, at
  the edge; :mod:`~concord.services.metrics.run_keys`: what makes two runs "the same";
* :mod:`~concord.services.metrics.scoring`: the run itself (checked first, resumable,
  shardable, watched), its inner loop in :mod:`~concord.services.metrics.score_steps` and
  where its rows go in :mod:`~concord.services.metrics.score_output`;
* :mod:`~concord.services.metrics.runs`: the metric catalog and runs started from the app
  (one detached ``python -m concord score`` each), watched and cancelled;
* :mod:`~concord.services.metrics.scores`: ``import-scores`` and ``merge-scores``.
"""
