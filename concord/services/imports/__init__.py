"""Human labels collected elsewhere: ``import-ratings``, ``import-pairs`` and
``import-rankings`` (``docs/cli.md#import-ratings``). Staged, checked whole, then written
in short transactions as one pending batch and published at once.

* :mod:`~concord.services.imports.ratings`: the import itself (stage, check, write,
  publish), and the ratings part of it;
* :mod:`~concord.services.imports.pairs_rankings`: the pair votes and rankings of an
  import, beside the ratings;
* :mod:`~concord.services.imports.rubric_fit` and
  :mod:`~concord.services.imports.continuous_check`: which rubric the ratings are checked
  against, and every row checked against it;
* :mod:`~concord.services.imports.phases`: time per phase, reading without the cyclic GC.

A study manifest (``import``) is :mod:`concord.services.studies`; metric scores
(``import-scores``) are :mod:`concord.services.metrics.scores`. The SQL of the stage and
the batches: :mod:`concord.store.imports`.
"""
