"""What raters do on the rating, ranking and pair screens (``docs/raters.md``): an item
served, a label stored as a new revision, skips, flags and drafts kept.

* :mod:`~concord.services.labelling.rating`: the scoring protocol (score an image on the
  rubric's criteria), with :mod:`~concord.services.labelling.checklist` for rubrics whose
  criteria are derived from ticked conditions;
* :mod:`~concord.services.labelling.ranking`: the ranking protocol (order one prompt's
  images), its work in progress in :mod:`~concord.services.labelling.ranking_draft`;
* :mod:`~concord.services.labelling.pairs`: the pairwise A/B protocol;
* :mod:`~concord.services.labelling.comments`: a rater's free-text comment on a label;
* :mod:`~concord.services.labelling.gate`: where a rater stands (consent, practice, work,
  ended, finished), asked before any item is served or stored;
* :mod:`~concord.services.labelling.checks`: attention checks (gold items) while raters
  work;
* :mod:`~concord.services.labelling.common`: what the three protocols share (membership,
  which item comes next, progress, rubrics).

Crowd sign-up and onboarding are :mod:`concord.services.crowd`; the screens themselves
``pages/rate.py``, ``pages/rank.py``, ``pages/pair.py`` and ``concord/ui/``.
"""
