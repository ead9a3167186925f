"""Exports of a study (``docs/exports.md``): what ``python -m concord export`` writes and
the Export page downloads.

* :mod:`~concord.services.exports.labels`: the human labels (ratings, rankings, pair
  judgments) as tidy CSV / JSONL / Parquet or ImagenHub's TSV layout;
* :mod:`~concord.services.exports.tables`: the revision history and adjudicated values,
  and a table's file type chosen by the output's suffix;
* :mod:`~concord.services.exports.hf_dataset`: a Hugging Face dataset with its card;
* :mod:`~concord.services.exports.label_studio`: Label Studio tasks and labeling config;
* :mod:`~concord.services.exports.downloads`: the Export page's downloads (every one of
  the above that fits in one file).

The file formats themselves (no database) are :mod:`concord.export` and
:mod:`concord.hf_export`; adjudication is :mod:`concord.services.adjudication`.
"""
