"""The SQL of the long imports (``import-ratings``, ``-pairs``, ``-rankings``,
``import-scores``): a private stage, checked whole, then written in short transactions as a
pending batch that is published at once.

* :mod:`~concord.store.imports.batches`: import batches (pending rows are invisible);
* :mod:`~concord.store.imports.staging`: the ratings stage, a private temporary database;
  :mod:`~concord.store.imports.label_stage`: the pair votes and rankings staged beside it;
* :mod:`~concord.store.imports.rating_writes` and
  :mod:`~concord.store.imports.label_writes`: the staged rows written into a pending
  batch, paced so raters keep saving;
* :mod:`~concord.store.imports.score_staging`: imported scores, staged and published in
  bounded chunks.

The use cases are :mod:`concord.services.imports` and :mod:`concord.services.metrics.scores`.
"""
