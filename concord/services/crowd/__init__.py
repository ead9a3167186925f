"""Crowd studies (``docs/raters.md#crowd-studies``): participants of Prolific, MTurk and
the like who come through a study link rather than a personal invite.

* :mod:`~concord.services.crowd.links`: study links (create, rotate, revoke) and joining
  through one, one rater per participant id;
* :mod:`~concord.services.crowd.ids`: the participant parameters each platform appends;
* :mod:`~concord.services.crowd.onboarding`: instructions and consent, the practice block,
  the completion (or screen-out) code;
* :mod:`~concord.services.crowd.status`: what the researcher sees (who joined, consented,
  finished) and the time and pay report.

Where a rater stands before each item (consent, practice, ended) is checked by
:mod:`concord.services.labelling.gate`, for crowd and invited raters alike; the study's
questionnaire is :mod:`concord.services.questionnaire`. The SQL: :mod:`concord.store.crowd`.
"""
