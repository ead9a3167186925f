"""The report (``docs/stats.md#the-report--concordstatsfull_report``): every statistic of a
study in one JSON-ready document, what ``stats --json`` prints and the dashboard shows.

* :mod:`~concord.stats.report.document`: :func:`~concord.stats.report.document.full_report`
  and the document's layout;
* :mod:`~concord.stats.report.sections`: its sections of ratings, rankings, metrics and
  raters, as DataFrames; :mod:`~concord.stats.report.pair_sections`: those of pairwise
  judgments;
* :mod:`~concord.stats.report.records`: DataFrames as plain JSON records (NaN as None).

A study's report from the database (frames, exclusions, settings, cache) is
:mod:`concord.services.report`.
"""
